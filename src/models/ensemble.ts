import { NereidError, isNereidError } from '../errors.js';
import type { ModelConfig } from '../config/types.js';
import { NO_RESPONSE, type InferenceRequest, type InferenceResponse } from '../inference/index.js';
import type { ExecutionTimes } from '../backends/backend.js';
import type { Job } from '../scheduler/scheduler.js';
import type { Tensor } from '../tensor/tensor.js';
import { ForwardingScheduler } from './forwarding.js';
import { fitBatch, requestBatchSize } from './ensemble-shapes.js';

/** What an ensemble needs of a composing model: the same infer every frontend calls. */
export interface ComposingModel {
  readonly version: number;
  readonly decoupled: boolean;
  /** For passing tensors between models that batch and models that do not (see fitBatch). */
  readonly maxBatchSize: number;
  readonly inputs: ReadonlyMap<string, { readonly dims: readonly number[] }>;
  infer(request: InferenceRequest): Promise<InferenceResponse>;
  inferStream(request: InferenceRequest): AsyncIterable<InferenceResponse>;
}

/**
 * The tensors a branch of a streaming ensemble sees: its own, and its parent's (also those that arrive
 * later). Each response of a decoupled step opens a child scope, so the steps after it run once per response.
 */
class Scope {
  /** null: the tensor is settled without data, as in EnsembleScheduler.run(). */
  readonly own = new Map<string, Tensor | null>();
  readonly launched = new Set<number>();
  readonly children: Scope[] = [];
  emitted = false;

  constructor(readonly parent: Scope | undefined) {
    parent?.children.push(this);
  }

  get(name: string): Tensor | null | undefined {
    const t = this.own.get(name);
    return t !== undefined ? t : this.parent?.get(name);
  }

  /** A step launched here or in an ancestor is not launched again: its outputs reach this scope anyway. */
  launchedHere(i: number): boolean {
    return this.launched.has(i) || (this.parent?.launchedHere(i) ?? false);
  }

  *andDescendants(): Generator<Scope> {
    yield this;
    for (const c of this.children) yield* c.andDescendants();
  }
}

/** Where a step finds the ensemble tensors it reads: a request's map, or a streaming request's scope. */
interface TensorSource {
  get(name: string): Tensor | null | undefined;
}

/** Finds the version of a composing model a request should use (undefined: the highest READY one). */
export type ModelResolver = (name: string, version: number | undefined) => ComposingModel;

/** One step of the plan, with its maps turned into arrays once at load. */
interface StepPlan {
  readonly model: string;
  readonly version: number | undefined;
  /** [composing-model input, ensemble tensor] */
  readonly inputs: readonly (readonly [string, string])[];
  /** composing-model output → ensemble tensor */
  readonly outputs: ReadonlyMap<string, string>;
  readonly requested: readonly { name: string }[];
  /** Ensemble tensors that must be settled (with data or without) before the step can run. */
  readonly needs: readonly string[];
}

/**
 * Triton's ensemble scheduler: an ensemble request runs as a graph of steps, each a request to a composing
 * model through that model's own scheduler, so batching, statistics and limits apply per composing model. A
 * step runs as soon as every tensor it reads exists, so independent steps run concurrently. Tensors pass from
 * step to step as the same objects under new names: no data is copied. The composing versions are chosen
 * when the request starts, so a reload in the middle of a request does not mix versions. The request's
 * priority, timeout, parameters and cancellation carry into every step.
 */
export class EnsembleScheduler extends ForwardingScheduler {
  private readonly steps: readonly StepPlan[];
  /** Ensemble tensor → the steps that read it. */
  private readonly consumers: ReadonlyMap<string, readonly number[]>;
  /** Some step is decoupled: the ensemble is too, and streams a response per result that reaches its outputs. */
  private readonly streaming: boolean;
  private readonly optionalInputs: readonly string[];
  private readonly batching: boolean;
  /** The ensemble's outputs' dims (the reshape's when there is one), for fitBatch. */
  private readonly outputDims: ReadonlyMap<string, readonly number[]>;

  constructor(
    private readonly name: string,
    config: ModelConfig,
    private readonly resolve: ModelResolver,
    /** Told of each request that succeeded, as Triton counts an ensemble's batch statistics. */
    private readonly onSuccess: (batchSize: number, times: ExecutionTimes) => void = () => undefined,
    /** Told of each request that failed once it reached the ensemble (see failed()). */
    private readonly onFailure: (durationNs: number) => void = () => undefined,
  ) {
    super();
    this.streaming = config.model_transaction_policy?.decoupled ?? false;
    this.batching = config.max_batch_size > 0;
    this.outputDims = new Map(config.output.map((o) => [o.name, o.reshape ? o.reshape.shape : o.dims]));
    this.optionalInputs = config.input.filter((i) => i.optional).map((i) => i.name);
    this.steps = config.ensemble_scheduling!.step.map((s) => {
      const inputs = Object.entries(s.input_map);
      const outputs = new Map(Object.entries(s.output_map));
      return {
        model: s.model_name,
        version: s.model_version >= 0 ? s.model_version : undefined,
        inputs,
        outputs,
        requested: [...outputs.keys()].map((name) => ({ name })),
        needs: inputs.map(([, t]) => t),
      };
    });
    const consumers = new Map<string, number[]>();
    this.steps.forEach((s, i) => {
      for (const [, t] of s.inputs) {
        const list = consumers.get(t) ?? [];
        if (!list.includes(i)) list.push(i);
        consumers.set(t, list);
      }
    });
    this.consumers = consumers;
  }

  /** The composing models the ensemble calls, for load-time checks and dependency loading. */
  static composingModels(config: ModelConfig): { name: string; version: number | undefined }[] {
    return (config.ensemble_scheduling?.step ?? []).map((s) => ({ name: s.model_name, version: s.model_version >= 0 ? s.model_version : undefined }));
  }

  enqueue(job: Job): void {
    if (this.refuseWhenStopped(job, 'model is unloading; request refused')) return;
    if (this.streaming) this.forward(job, () => this.runStreaming(job).then(() => job.sender.send(NO_RESPONSE, true)));
    else this.forward(job, () => this.run(job).then((outputs) => job.sender.send(outputs, true)));
  }

  /**
   * Triton's ensemble counts one execution per successful request, in the batch statistics of the request's
   * batch size (at least 1), and none for a failure (qa/L0_simple_ensemble reads them).
   */
  protected override succeeded(job: Job, times: ExecutionTimes): void {
    this.onSuccess(Math.max(1, job.rows), times);
  }

  /**
   * Triton's ensemble counts a failed request twice, both with reason OTHER (its metrics documentation: a
   * composing model's REJECTED request shows in the ensemble as reason=OTHER, count=2; core reports the failure
   * when the ensemble answers with the error and again when it releases the request). The job counts one (its
   * context's executionFailure); this is the other.
   */
  protected override failed(_job: Job, durationNs: number): void {
    this.onFailure(durationNs);
  }

  private resolveSteps(): ComposingModel[] | NereidError {
    const models: ComposingModel[] = [];
    for (const s of this.steps) {
      try {
        models.push(this.resolve(s.model, s.version));
      } catch (e) {
        return this.stepError(s, e);
      }
    }
    return models;
  }

  /**
   * The batch size of each ensemble tensor, kept only when some step batches differently from the ensemble:
   * otherwise every tensor already has the shape its readers expect. Ensemble inputs carry the request's.
   */
  private batchSizes(models: readonly ComposingModel[], job: Job): Map<string, number> | undefined {
    let mixed = false;
    for (const m of models) if ((m.maxBatchSize > 0) !== this.batching) mixed = true;
    if (!mixed) return undefined;
    const sizes = new Map<string, number>();
    const b = this.batching ? job.rows : 0;
    for (const t of job.inputs) sizes.set(t.name, b);
    return sizes;
  }

  /** A step's inputs under the composing model's names, fitted to its batching; records its outputs' batch size. */
  private stepInputs(step: StepPlan, model: ComposingModel, tensors: TensorSource, sizes: Map<string, number> | undefined): Tensor[] {
    const inputs: Tensor[] = [];
    for (const [input, t] of step.inputs) {
      const found = tensors.get(t);
      if (!found) continue;
      const dims = sizes && model.inputs.get(input)?.dims;
      inputs.push(dims ? fitBatch(renamed(found, input), dims, model.maxBatchSize > 0, sizes.get(t) ?? 0) : renamed(found, input));
    }
    if (sizes) {
      const b = requestBatchSize(model.maxBatchSize > 0, inputs);
      for (const name of step.outputs.values()) sizes.set(name, b);
    }
    return inputs;
  }

  /** An ensemble output as the response carries it, fitted to the ensemble's batching. */
  private output(name: string, t: Tensor, sizes: Map<string, number> | undefined): Tensor {
    const dims = sizes && this.outputDims.get(name);
    return dims ? fitBatch(t, dims, this.batching, sizes.get(name) ?? 0) : t;
  }

  private run(job: Job): Promise<Tensor[]> {
    const models = this.resolveSteps();
    if (!Array.isArray(models)) return Promise.reject(models);
    const sizes = this.batchSizes(models, job);
    // A tensor settled without data (null) is an optional ensemble input the request left out, or a step output
    // the step's response did not carry. As Triton's ensemble scheduler, a step reading it still runs, without
    // that input: it is the composing model's to accept (an optional input) or refuse (qa/L0_optional_input).
    const tensors = new Map<string, Tensor | null>();
    for (const t of job.inputs) tensors.set(t.name, t);
    for (const name of this.optionalInputs) if (!tensors.has(name)) tensors.set(name, null);
    const launched = new Uint8Array(this.steps.length);
    return new Promise((resolve, reject) => {
      let pending = 0;
      let failed = false;
      const finish = (): void => {
        // An output settled without data is left out of the response, as Triton leaves it out.
        const out: Tensor[] = [];
        for (const name of job.outputs) {
          const t = tensors.get(name);
          if (t === undefined) return reject(this.deadlock(job));
          if (t) out.push(this.output(name, t, sizes));
        }
        resolve(out);
      };
      const launch = (i: number): void => {
        const step = this.steps[i]!;
        if (launched[i] || failed || !step.needs.every((t) => tensors.has(t))) return;
        launched[i] = 1;
        pending++;
        const model = models[i]!;
        const inputs = this.stepInputs(step, model, tensors, sizes);
        model.infer(stepRequest(step, model.version, job, inputs)).then((res) => {
          if (failed) return;
          for (const t of res.outputs) {
            const name = step.outputs.get(t.name);
            if (name === undefined) continue;
            tensors.set(name, renamed(t, name));
            for (const c of this.consumers.get(name) ?? []) launch(c);
          }
          for (const name of step.outputs.values()) {
            if (tensors.has(name)) continue;
            tensors.set(name, null);
            for (const c of this.consumers.get(name) ?? []) launch(c);
          }
          if (--pending === 0) finish();
        }, (e: unknown) => {
          if (failed) return;
          failed = true;
          reject(this.stepError(step, e));
        });
      };
      for (let i = 0; i < this.steps.length; i++) launch(i);
      if (pending === 0) finish();
    });
  }

  /**
   * A streaming ensemble: decoupled steps are read as streams and each of their responses opens a scope in
   * which the later steps run again. A scope that comes to hold every requested output sends one response.
   * Resolves when every step of every scope has finished.
   */
  private runStreaming(job: Job): Promise<void> {
    const models = this.resolveSteps();
    if (!Array.isArray(models)) return Promise.reject(models);
    const sizes = this.batchSizes(models, job);
    const root = new Scope(undefined);
    for (const t of job.inputs) root.own.set(t.name, t);
    for (const name of this.optionalInputs) if (!root.own.has(name)) root.own.set(name, null);
    return new Promise((resolve, reject) => {
      let pending = 0;
      let failed = false;
      const fail = (step: StepPlan, e: unknown): void => {
        if (failed) return;
        failed = true;
        reject(this.stepError(step, e));
      };
      const done = (): void => {
        if (--pending === 0 && !failed) resolve();
      };
      const maybeEmit = (scope: Scope): void => {
        if (scope.emitted || failed) return;
        const out: Tensor[] = [];
        for (const name of job.outputs) {
          const t = scope.get(name);
          if (t === undefined) return;
          if (t) out.push(this.output(name, t, sizes));
        }
        scope.emitted = true;
        job.sender.send(out, false);
      };
      const add = (scope: Scope, name: string, t: Tensor | null): void => {
        scope.own.set(name, t && renamed(t, name));
        for (const s of scope.andDescendants()) {
          for (const c of this.consumers.get(name) ?? []) launch(s, c);
          maybeEmit(s);
        }
      };
      const launch = (scope: Scope, i: number): void => {
        const step = this.steps[i]!;
        if (failed || scope.launchedHere(i) || !step.needs.every((t) => scope.get(t) !== undefined)) return;
        scope.launched.add(i);
        pending++;
        const model = models[i]!;
        const inputs = this.stepInputs(step, model, scope, sizes);
        const request = stepRequest(step, model.version, job, inputs);
        const place = (target: Scope, res: InferenceResponse): void => {
          for (const t of res.outputs) {
            const name = step.outputs.get(t.name);
            if (name !== undefined) add(target, name, t);
          }
          for (const name of step.outputs.values()) if (!target.own.has(name)) add(target, name, null);
        };
        if (!model.decoupled) {
          model.infer(request).then((res) => {
            if (!failed) place(scope, res);
            done();
          }, (e: unknown) => fail(step, e));
          return;
        }
        void (async () => {
          try {
            for await (const res of model.inferStream(request)) {
              if (failed) return;
              place(new Scope(scope), res);
            }
            done();
          } catch (e) {
            fail(step, e);
          }
        })();
      };
      pending++; // held until every step of the root is launched
      for (let i = 0; i < this.steps.length; i++) launch(root, i);
      maybeEmit(root);
      done();
    });
  }

  /** No step can run any more and some output never got settled: Triton's words for it. */
  private deadlock(job: Job): NereidError {
    const request = job.id ? `[request id: ${job.id}] ` : '';
    return new NereidError('INVALID_ARG', `in ensemble '${this.name}', ${request}unexpected deadlock, at least one output is not set while no more ensemble steps can be made`);
  }

  /** A step's failure fails the ensemble request, named after the step, with the step's own code. */
  private stepError(step: StepPlan, e: unknown): NereidError {
    const inner = isNereidError(e) ? e : new NereidError('INTERNAL', (e as Error)?.message ?? String(e));
    return new NereidError(inner.code, `in ensemble '${this.name}', step '${step.model}': ${inner.message}`);
  }
}

/** The request a step sends its model: the step's inputs and outputs, the rest as the ensemble request's. */
function stepRequest(step: StepPlan, version: InferenceRequest['version'], job: Job, inputs: Tensor[]): InferenceRequest {
  return {
    model: step.model, version, id: job.id, inputs, outputs: step.requested,
    parameters: job.parameters, priority: job.priority, timeoutUs: job.timeoutUs, tenant: job.tenant, signal: job.signal, trace: job.trace?.child(),
    sequenceId: job.sequenceId, sequenceStart: job.sequenceStart, sequenceEnd: job.sequenceEnd,
  };
}

function renamed(t: Tensor, name: string): Tensor {
  return t.name === name ? t : ({ ...t, name } as Tensor);
}
