import { NereidError, invalidArg, isNereidError } from '../errors.js';
import { instanceStatus, type BackendInstance, type EngineLoad, type ExecutionTimes } from '../backends/backend.js';
import type { InferenceRequest, InferenceResponse, Parameters, RequestedOutput } from '../inference/index.js';
import type { InstanceStatistics, ModelStatistics } from '../observability/statistics.js';
import type { FailureReason, Job, Scheduler } from '../scheduler/scheduler.js';
import type { Tensor } from '../tensor/tensor.js';
import { ResponseStream } from '../inference/stream.js';
import { classify } from './classification.js';
import { LiveJobs, type LiveLinks } from './live-jobs.js';
import { responseCacheKey, type ResponseCache } from '../cache/cache.js';
import type { ModelContext } from './context.js';
import { StreamJob } from './stream-job.js';
import { countTokens } from './token-counts.js';
import { stringParameter, VERSION_WEIGHTS_PARAMETER } from './router.js';
import { parseRoutes, WeightedRoutes } from './routing.js';
import type { InputInfo, OutputInfo } from './context.js';
import type { RequestBounds } from '../inference/request.js';
import { TRACE, type RequestTrace } from '../inference/trace.js';

/**
 * One loaded version of a model: its context, instances, scheduler and statistics. Requests that reached it
 * finish on it even while a newer version replaces it; unload() drains them first.
 */
export class ModelVersion {
  private closing: Promise<void> | undefined;
  /** The memory its load took, as measured then (models/load-meter.ts); undefined until measured. */
  memoryBytes: number | undefined = undefined;
  /** When it finished loading (Date.now()): its last use until a request comes. */
  readonly loadedAtMs = Date.now();
  /**
   * How requests that name no version split between the model's versions (the config's nereid_version_weights),
   * parsed at load; null when they do not split.
   */
  readonly routes: WeightedRoutes | null;
  /** Requests accepted and not yet answered, so that abort() can answer them whatever their backend does. */
  private readonly live = new LiveJobs<InferJob | StreamJob>();
  private readonly untrack = (job: InferJob | StreamJob): void => {
    this.live.remove(job);
  };

  constructor(
    readonly context: ModelContext,
    readonly stats: ModelStatistics,
    private readonly scheduler: Scheduler,
    private readonly instances: readonly BackendInstance[],
    /** The server's response cache, for a model with response_cache { enable: true }. */
    private readonly cache?: ResponseCache,
    /** Called once the version is unloaded: gives back what its load took (its instances' share of the budget). */
    private readonly released?: () => void,
  ) {
    const spec = stringParameter(context.config, VERSION_WEIGHTS_PARAMETER);
    this.routes = spec === undefined ? null : new WeightedRoutes(parseRoutes(spec, VERSION_WEIGHTS_PARAMETER));
    if (this.routes) stats.routes = this.routes.counts;
  }

  get name(): string {
    return this.context.name;
  }

  get version(): number {
    return this.context.version;
  }

  get decoupled(): boolean {
    return this.context.decoupled;
  }

  get bounds(): RequestBounds {
    return this.context.bounds;
  }

  get maxBatchSize(): number {
    return this.context.maxBatchSize;
  }

  get inputs(): ReadonlyMap<string, InputInfo> {
    return this.context.inputs;
  }

  get outputs(): ReadonlyMap<string, OutputInfo> {
    return this.context.outputs;
  }

  /** Unloading or unloaded: a request that resolved this version before then goes to the model's current one. */
  get unloading(): boolean {
    return this.closing !== undefined;
  }

  /** Loaded, and every instance able to serve (see BackendInstance.ready). */
  get ready(): boolean {
    return this.status().ready;
  }

  /**
   * Whether every instance can serve, as readiness, the repository index and the metrics report it: not
   * ready when any instance is not, with each such instance's reason, and how many instances are hung.
   */
  status(): ModelStatus {
    let reasons: string[] | undefined;
    let hung = 0;
    for (const i of this.instances) {
      const s = instanceStatus(i);
      if (s.ready) continue;
      (reasons ??= []).push(s.reason);
      if (s.hung) hung++;
    }
    if (!reasons) return READY_MODEL;
    return { ready: false, hung, reason: reasons.join('; ') };
  }

  inflight(): number {
    return this.scheduler.inflight();
  }

  /** Requests in flight or sequences live: unloading it now would cut something short. */
  busy(): boolean {
    return this.scheduler.inflight() > 0 || (this.scheduler.liveSequences?.() ?? 0) > 0;
  }

  /** What its instances' engines report they hold: in Nereid's process, and outside it (see BackendInstance.memory). */
  engineMemory(): { inProcess: number; external: number; reported: boolean } {
    let inProcess = 0;
    let external = 0;
    let reported = false;
    for (const i of this.instances) {
      const m = i.memory?.();
      if (m === undefined) continue;
      reported = true;
      if (m.external) external += m.bytes;
      else inProcess += m.bytes;
    }
    return { inProcess, external, reported };
  }

  /** Requests accepted but not yet executing (nv_inference_pending_request_count). */
  waiting(): number {
    return this.scheduler.waiting();
  }

  /**
   * The load of the engines behind a text model's instances (see BackendInstance.engineLoad), each engine
   * counted once, with the requests still in Nereid's queue added to those waiting in the engines: undefined
   * for a model whose backend reports none.
   */
  async engineLoad(): Promise<{ waiting: number; running: number; kvCacheUsage: number | undefined } | undefined> {
    if (!this.instances.some((i) => i.engineLoad)) return undefined;
    const loads = await Promise.all(this.instances.map((i) => i.engineLoad?.()));
    const engines = new Map<object, EngineLoad>();
    for (const l of loads) if (l && !engines.has(l.engine)) engines.set(l.engine, l);
    if (engines.size === 0) return undefined;
    let waiting = this.scheduler.waiting();
    let running = 0;
    let kvUsed = 0;
    let kvCapacity = 0;
    for (const l of engines.values()) {
      waiting += l.waiting;
      running += l.running;
      if (l.kvCache) {
        kvUsed += l.kvCache.usage * l.kvCache.capacity;
        kvCapacity += l.kvCache.capacity;
      }
    }
    return { waiting, running, kvCacheUsage: kvCapacity > 0 ? kvUsed / kvCapacity : undefined };
  }

  /** The exposition texts of the engines the server runs for its instances (each once); [] when none. */
  async engineMetrics(): Promise<string[]> {
    if (!this.instances.some((i) => i.engineMetrics)) return [];
    const read = await Promise.all(this.instances.map((i) => i.engineMetrics?.()));
    const engines = new Map<object, string>();
    for (const r of read) if (r && !engines.has(r.engine)) engines.set(r.engine, r.text);
    return [...engines.values()];
  }

  infer(request: InferenceRequest): Promise<InferenceResponse> {
    return new Promise((resolve, reject) => this.inferTo(request, resolve, reject));
  }

  /**
   * As infer(), answered through `resolve` or `reject`: a model that runs on the event loop and is run at once
   * (the direct scheduler with one request at a time) answers before this returns.
   */
  inferTo(request: InferenceRequest, resolve: (r: InferenceResponse) => void, reject: (e: unknown) => void): void {
    const ctx = this.context;
    const start = process.hrtime.bigint();
    let rows: number;
    let outputs: readonly string[];
    try {
      rows = ctx.checkInputs(request.inputs);
      outputs = request.outputs ? this.checkOutputs(request.outputs) : ctx.outputNames;
    } catch (e) {
      this.stats.recordFailure(Number(process.hrtime.bigint() - start));
      reject(forRequest(e, request.id));
      return;
    }
    if (ctx.decoupled) {
      reject(new NereidError('UNSUPPORTED', `model '${ctx.name}' uses the decoupled transaction policy: read its responses with inferStream()`));
      return;
    }
    if (request.trace !== undefined) traceQueued(request.trace, ctx, request, start);
    if (this.cache) this.inferCached(request, outputs, rows, start).then(resolve, reject);
    else this.enqueue(request, outputs, rows, start, request.borrowOutputs === true, resolve, reject);
  }

  private run(request: InferenceRequest, outputs: readonly string[], rows: number, start: bigint, borrow: boolean): Promise<InferenceResponse> {
    return new Promise((resolve, reject) => this.enqueue(request, outputs, rows, start, borrow, resolve, reject));
  }

  private enqueue(
    request: InferenceRequest, outputs: readonly string[], rows: number, start: bigint, borrow: boolean,
    resolve: (r: InferenceResponse) => void, reject: (e: NereidError) => void,
  ): void {
    const ctx = this.context;
    const inputs = ctx.reshapes ? request.inputs.map((t) => ctx.toBackend(t)) : request.inputs;
    const job = new InferJob(this, request, inputs, outputs, rows, start, borrow, resolve, reject, this.untrack);
    this.live.add(job);
    this.scheduler.enqueue(job);
  }

  /**
   * Triton's response cache: a hit answers without running the model (counted as a success and a cache hit,
   * not as an inference or execution); a miss runs it and stores the answer.
   */
  private inferCached(request: InferenceRequest, outputs: readonly string[], rows: number, start: bigint): Promise<InferenceResponse> {
    const ctx = this.context;
    const cache = this.cache!;
    const key = responseCacheKey(ctx.name, ctx.version, request, outputs);
    const found = cache.get(key);
    const answer = (hit: readonly Tensor[] | undefined): Promise<InferenceResponse> => {
      const looked = process.hrtime.bigint();
      if (hit) {
        this.stats.recordCacheHit(Number(looked - start), Number(looked - start));
        request.trace?.stamp(TRACE.REQUEST_END, looked);
        return Promise.resolve({ model: ctx.name, version: ctx.version, id: request.id ?? '', outputs: hit });
      }
      const lookupNs = Number(looked - start);
      // Not borrowed: the cache keeps the outputs.
      return this.run(request, outputs, rows, start, false).then((res) => {
        const t = process.hrtime.bigint();
        // A remote insert is not waited for: the client has its answer either way.
        const stored = cache.insert(key, res.outputs);
        this.stats.recordCacheMiss(lookupNs + Number(process.hrtime.bigint() - t));
        if (stored instanceof Promise) stored.catch(() => undefined);
        return res;
      });
    };
    return found instanceof Promise ? found.then(answer) : answer(found);
  }

  /** Every response of a request as it comes: the one of an ordinary model, or a decoupled model's stream. */
  inferStream(request: InferenceRequest): ResponseStream {
    const ctx = this.context;
    const start = process.hrtime.bigint();
    let rows: number;
    let outputs: readonly string[];
    try {
      rows = ctx.checkInputs(request.inputs);
      outputs = request.outputs ? this.checkOutputs(request.outputs) : ctx.outputNames;
    } catch (e) {
      this.stats.recordFailure(Number(process.hrtime.bigint() - start));
      // Refused before the model saw it, for any model: a frontend answers such an error as a request error.
      return ResponseStream.failed(forRequest(e, request.id));
    }
    if (request.trace !== undefined) traceQueued(request.trace, ctx, request, start);
    if (!ctx.decoupled) {
      return ResponseStream.from(this.cache ? this.inferCached(request, outputs, rows, start) : this.run(request, outputs, rows, start, request.borrowOutputs === true));
    }
    const inputs = ctx.reshapes ? request.inputs.map((t) => ctx.toBackend(t)) : request.inputs;
    const stream = new ResponseStream();
    const job = new StreamJob(ctx, this.stats, request, inputs, outputs, rows, start, stream, this.untrack);
    this.live.add(job);
    this.scheduler.enqueue(job);
    return stream;
  }

  private checkOutputs(requested: readonly RequestedOutput[]): string[] {
    const names: string[] = [];
    for (const o of requested) {
      if (!this.context.outputs.has(o.name)) throw invalidArg(`unexpected inference output '${o.name}' for model '${this.context.name}'`);
      if (names.includes(o.name)) throw invalidArg(`output '${o.name}' is requested more than once for model '${this.context.name}'`);
      names.push(o.name);
    }
    return names;
  }

  /** Called by the scheduler once per execution, with the instance's statistics when it says which ran it. */
  recordExecution(batchRows: number, times: ExecutionTimes, instance?: InstanceStatistics): void {
    this.stats.recordExecution(batchRows, times.inputNs, times.inferNs, times.outputNs);
    instance?.recordExecution(batchRows, times.inputNs, times.inferNs, times.outputNs);
  }

  /** Answers the requests still queued with `error` (shutdown past --exit-timeout-secs). */
  rejectQueued(error: NereidError): void {
    this.scheduler.rejectQueued(error);
  }

  /**
   * Shutdown past --exit-timeout-secs: answers every request not yet answered with `error`, queued or
   * executing, and kills the instances that can be (their processes and workers stop; see
   * BackendInstance.kill), so that unload() has nothing left to wait for. What an instance that cannot be
   * killed answers later is dropped.
   */
  abort(error: NereidError): void {
    this.scheduler.rejectQueued(error);
    for (const job of this.live.toArray()) job.abort(error);
    for (const i of this.instances) i.kill?.(error);
  }

  /** Stops taking requests, waits for those in flight, then releases the instances. */
  unload(): Promise<void> {
    this.closing ??= (async () => {
      await this.scheduler.drain();
      await Promise.all(this.instances.map((i) => i.close().catch(() => undefined)));
      this.released?.();
    })();
    return this.closing;
  }
}

/** Whether a model version can serve: see ModelVersion.status(). */
export interface ModelStatus {
  readonly ready: boolean;
  /** Instances hung past the execute timeout (see InstanceStatus.hung). */
  readonly hung: number;
  /** Why it is not ready: each instance that is not, with its reason ('' when ready). */
  readonly reason: string;
}

const READY_MODEL: ModelStatus = Object.freeze({ ready: true, hung: 0, reason: '' });

/** A request between enqueue and its answer; it is also the ResponseSender the backend answers through. */
class InferJob implements Job {
  readonly enqueuedNs: bigint;
  readonly signal: AbortSignal | undefined;
  readonly parameters: Parameters | undefined;
  readonly id: string;
  readonly priority: number | undefined;
  readonly timeoutUs: number | undefined;
  readonly tenant: string | undefined;
  readonly sequenceId: number | bigint | string | undefined;
  readonly sequenceStart: boolean;
  readonly sequenceEnd: boolean;
  readonly trace: RequestTrace | undefined;
  state: 'queued' | 'running' | 'done' = 'queued';
  private result: Tensor[] | undefined;
  private resultParams: Parameters | undefined;
  private release: (() => void) | undefined;
  private error: NereidError | undefined;
  /** Answered by abort(): whatever the scheduler or backend reports later is dropped. */
  private aborted = false;
  /** answerLater() was called; once the execution has ended without an answer, `ended` holds its times. */
  private late = false;
  private ended: { startNs: bigint; times: ExecutionTimes } | undefined;
  livePrev: LiveLinks | null = null;
  liveNext: LiveLinks | null = null;

  constructor(
    private readonly model: ModelVersion,
    private readonly request: InferenceRequest,
    readonly inputs: readonly Tensor[],
    readonly outputs: readonly string[],
    readonly rows: number,
    start: bigint,
    readonly borrowOutputs: boolean,
    private readonly resolve: (r: InferenceResponse) => void,
    private readonly rejectPromise: (e: NereidError) => void,
    private readonly settled: (job: InferJob) => void,
  ) {
    this.enqueuedNs = start;
    this.signal = request.signal;
    this.parameters = request.parameters;
    this.id = request.id ?? '';
    this.priority = request.priority;
    this.timeoutUs = request.timeoutUs;
    this.tenant = request.tenant;
    this.sequenceId = request.sequenceId;
    this.sequenceStart = request.sequenceStart ?? false;
    this.sequenceEnd = request.sequenceEnd ?? false;
    this.trace = request.trace;
  }

  get sender(): this {
    return this;
  }

  send(outputs: readonly Tensor[], final: boolean, parameters?: Parameters, release?: () => void): void {
    if (this.aborted) {
      release?.();
      return;
    }
    this.release?.(); // a response replaced by a later one (only one is kept)
    this.result = outputs as Tensor[];
    this.resultParams = parameters;
    this.release = release;
    if (final) this.answeredLate();
  }

  fail(error: NereidError): void {
    this.error = error;
    this.answeredLate();
  }

  answerLater(): void {
    this.late = true;
  }

  private answeredLate(): void {
    const ended = this.ended;
    if (!ended) return;
    this.ended = undefined;
    this.late = false;
    this.finish(ended.startNs, ended.times);
  }

  finish(execStartNs: bigint, times: ExecutionTimes): void {
    this.state = 'done';
    if (this.aborted) return;
    if (this.late && !this.error && !this.result) {
      this.ended = { startNs: execStartNs, times };
      return;
    }
    this.settled(this);
    const stats = this.model.stats;
    const now = process.hrtime.bigint();
    if (this.error || !this.result) {
      this.release?.();
      stats.recordFailure(Number(now - this.enqueuedNs), this.model.context.executionFailure);
      this.trace?.stamp(TRACE.REQUEST_END, now);
      this.rejectPromise(this.error ?? new NereidError('INTERNAL', 'backend sent no response'));
      return;
    }
    let outputs: Tensor[];
    try {
      outputs = this.shapeOutputs(this.result);
    } catch (e) {
      this.release?.();
      stats.recordFailure(Number(now - this.enqueuedNs));
      this.trace?.stamp(TRACE.REQUEST_END, now);
      this.rejectPromise(e as NereidError);
      return;
    }
    stats.recordSuccess(Number(now - this.enqueuedNs), Number(execStartNs - this.enqueuedNs), times.inputNs, times.inferNs, times.outputNs);
    if (this.trace !== undefined) traceComputed(this.trace, this.model.context, execStartNs, times, outputs, now);
    countTokens(stats, this.resultParams);
    const ctx = this.model.context;
    const release = this.release;
    this.release = undefined; // the caller's now
    this.resolve({
      model: ctx.name, version: ctx.version, id: this.request.id ?? '', outputs,
      ...(this.resultParams ? { parameters: this.resultParams } : {}), ...(release ? { release } : {}),
    });
  }

  reject(error: NereidError, reason?: FailureReason): void {
    this.release?.(); // a response sent before the execution failed: nobody will read it
    this.release = undefined;
    this.state = 'done';
    if (this.aborted) return;
    this.settled(this);
    const now = process.hrtime.bigint();
    this.model.stats.recordFailure(Number(now - this.enqueuedNs), reason);
    this.trace?.stamp(TRACE.REQUEST_END, now);
    this.rejectPromise(error);
  }

  /** Answers now with `error` (see ModelVersion.abort); the scheduler still owns the job until it lets go. */
  abort(error: NereidError): void {
    if (this.aborted) return;
    this.aborted = true;
    this.settled(this);
    this.release?.();
    this.release = undefined;
    this.model.stats.recordFailure(Number(process.hrtime.bigint() - this.enqueuedNs), 'OTHER');
    this.rejectPromise(error);
  }

  /** Backend shapes back to config dims, then classification where the client asked for it. */
  private shapeOutputs(outs: Tensor[]): Tensor[] {
    const ctx = this.model.context;
    let result = ctx.reshapes ? outs.map((t) => ctx.fromBackend(t)) : outs;
    const requested = this.request.outputs;
    if (requested && requested.some((o) => o.classCount)) {
      result = result.map((t) => {
        const count = requested.find((o) => o.name === t.name)?.classCount;
        return count ? classify(t, count, ctx.outputs.get(t.name)!, ctx.maxBatchSize > 0) : t;
      });
    }
    return result;
  }
}

/**
 * A refusal of a request's inputs or outputs with Triton's "[request id: <id>] " in front, as its core's request
 * checks put it there when the client gave the request an id. Built only on the refusal path.
 */
function forRequest(e: unknown, id: string | undefined): unknown {
  if (!id || !isNereidError(e)) return e;
  return new NereidError(e.code, `[request id: ${id}] ${e.message}`, { cause: e, limit: e.limit });
}

/** A traced request reached its model: REQUEST_START with the trace header, QUEUE_START, and at TENSORS level its inputs. */
function traceQueued(trace: RequestTrace, ctx: ModelContext, request: InferenceRequest, start: bigint): void {
  trace.requestStart(ctx.name, ctx.version, request.id ?? '', start);
  trace.stamp(TRACE.QUEUE_START, process.hrtime.bigint());
  if (trace.tensors) for (const t of request.inputs) trace.tensor(TRACE.TENSOR_QUEUE_INPUT, t);
}

/**
 * A traced request's execution, stamped from the times statistics take: compute start, then input, infer and
 * output one after another. An ensemble runs nothing itself and, as Triton's, shows no compute timestamps.
 */
function traceComputed(trace: RequestTrace, ctx: ModelContext, execStartNs: bigint, times: ExecutionTimes, outputs: readonly Tensor[], now: bigint): void {
  if (ctx.config.platform !== 'ensemble') {
    const inputEnd = execStartNs + BigInt(Math.round(times.inputNs));
    const outputStart = inputEnd + BigInt(Math.round(times.inferNs));
    trace.stamp(TRACE.COMPUTE_START, execStartNs);
    trace.stamp(TRACE.COMPUTE_INPUT_END, inputEnd);
    trace.stamp(TRACE.COMPUTE_OUTPUT_START, outputStart);
    trace.stamp(TRACE.COMPUTE_END, outputStart + BigInt(Math.round(times.outputNs)));
  }
  if (trace.tensors) for (const t of outputs) trace.tensor(TRACE.TENSOR_BACKEND_OUTPUT, t);
  trace.stamp(TRACE.REQUEST_END, now);
}
