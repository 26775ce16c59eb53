import { invalidArg } from '../errors.js';
import type { RequestBounds } from '../inference/request.js';
import type { ModelConfig } from '../config/types.js';
import type { FailureReason } from '../scheduler/scheduler.js';
import { byteSize, fromConfigType, type DataType } from '../tensor/datatype.js';
import { elementCount, formatShape, type Tensor } from '../tensor/tensor.js';

/**
 * Everything the request path needs from a model version's config, computed once at load: input and output
 * tables by name, the batch limit, reshapes, labels. Read-only after construction.
 */

export interface InputInfo {
  readonly name: string;
  readonly datatype: DataType;
  /** Full shape clients see: [-1, ...dims] for batching models. */
  readonly shape: readonly number[];
  readonly dims: readonly number[];
  readonly reshape: readonly number[] | undefined;
  readonly optional: boolean;
  /** Bytes per element; 0 for BYTES, whose elements are counted instead. */
  readonly elementBytes: number;
}

export interface OutputInfo {
  readonly name: string;
  readonly datatype: DataType;
  readonly shape: readonly number[];
  readonly dims: readonly number[];
  readonly reshape: readonly number[] | undefined;
  readonly labels: readonly string[] | undefined;
}

export class ModelContext {
  readonly inputs: ReadonlyMap<string, InputInfo>;
  readonly outputs: ReadonlyMap<string, OutputInfo>;
  readonly outputNames: readonly string[];
  readonly requiredInputs: number;
  readonly maxBatchSize: number;
  readonly decoupled: boolean;
  /** True when any tensor is reshaped between client and backend: only then does a request pay for it. */
  readonly reshapes: boolean;
  readonly bounds: RequestBounds;
  /**
   * How a request that reached the scheduler and then failed, or was cancelled, is counted: BACKEND and
   * CANCELED for a model that executes, OTHER for both with an ensemble, whose failures Triton's metrics give
   * no finer reason.
   */
  readonly executionFailure: FailureReason;
  readonly cancelledFailure: FailureReason;

  /**
   * `backendCheck`: the backend's own check of a request's inputs (Backend.inputCheck), run after the config's.
   */
  constructor(
    readonly name: string, readonly version: number, readonly config: ModelConfig, labels: ReadonlyMap<string, string[]>,
    private readonly backendCheck?: (inputs: readonly Tensor[]) => void,
  ) {
    this.maxBatchSize = config.max_batch_size;
    this.executionFailure = config.ensemble_scheduling ? 'OTHER' : 'BACKEND';
    this.cancelledFailure = config.ensemble_scheduling ? 'OTHER' : 'CANCELED';
    const batched = this.maxBatchSize > 0;
    this.inputs = new Map(config.input.map((i) => {
      const datatype = dataType(i.data_type, i.name);
      const info: InputInfo = {
        name: i.name, datatype, dims: i.dims, shape: batched ? [-1, ...i.dims] : i.dims,
        reshape: i.reshape?.shape, optional: i.optional, elementBytes: datatype === 'BYTES' ? 0 : byteSize(datatype),
      };
      return [i.name, info];
    }));
    this.outputs = new Map(config.output.map((o) => {
      const info: OutputInfo = {
        name: o.name, datatype: dataType(o.data_type, o.name), dims: o.dims, shape: batched ? [-1, ...o.dims] : o.dims,
        reshape: o.reshape?.shape, labels: labels.get(o.name),
      };
      return [o.name, info];
    }));
    this.outputNames = config.output.map((o) => o.name);
    this.requiredInputs = config.input.filter((i) => !i.optional).length;
    this.decoupled = config.model_transaction_policy?.decoupled ?? false;
    this.reshapes = config.input.some((i) => i.reshape) || config.output.some((o) => o.reshape);
    let rank = 0;
    let inputElements = 0;
    for (const i of this.inputs.values()) {
      rank = Math.max(rank, i.shape.length);
      inputElements = Math.max(inputElements, i.dims.some((d) => d < 0) ? Infinity : elementCount(i.dims) * Math.max(1, this.maxBatchSize));
    }
    this.bounds = { model: name, decoupled: this.decoupled, inputs: this.inputs.size, requiredInputs: this.requiredInputs, outputs: this.outputs.size, rank, inputElements };
  }

  /**
   * Checks a request's inputs against the config and returns its batch size (1 without batching). Throws
   * INVALID_ARG with Triton's wording for the usual mistakes.
   */
  checkInputs(inputs: readonly Tensor[]): number {
    let batch = -1;
    let required = 0;
    for (let i = 0; i < inputs.length; i++) {
      const t = inputs[i]!;
      const info = this.inputs.get(t.name);
      if (!info) throw invalidArg(`unexpected inference input '${t.name}' for model '${this.name}'`);
      for (let j = 0; j < i; j++) {
        if (inputs[j]!.name === t.name) throw invalidArg(`input '${t.name}' already exists in request (model '${this.name}')`);
      }
      if (!info.optional) required++;
      if (t.datatype !== info.datatype) {
        throw invalidArg(`inference input '${t.name}' data-type is '${t.datatype}', but model '${this.name}' expects '${info.datatype}'`);
      }
      if (this.maxBatchSize > 0) {
        if (t.shape.length === 0) throw invalidArg(`input '${t.name}' has no shape but model requires batch dimension for '${this.name}'`);
        const b = t.shape[0]!;
        if (batch === -1) batch = b;
        else if (b !== batch) throw invalidArg(`input '${t.name}' batch size does not match other inputs for '${this.name}' (${b}, not ${batch})`);
      }
      if (!shapeMatches(t.shape, info.shape)) {
        throw invalidArg(`unexpected shape for input '${t.name}' for model '${this.name}'. Expected ${formatShape(info.shape)}, got ${formatShape(t.shape)}`);
      }
      this.checkData(t, info);
    }
    if (required < this.requiredInputs) throw this.missingInputs(inputs);
    this.backendCheck?.(inputs);
    if (this.maxBatchSize > 0) {
      if (batch < 1 && inputs.length > 0) throw invalidArg(`inference request batch-size must be >= 1 for '${this.name}'`);
      if (batch > this.maxBatchSize) {
        throw invalidArg(`inference request batch-size must be <= ${this.maxBatchSize} for '${this.name}'`);
      }
      return Math.max(batch, 1);
    }
    return 1;
  }

  /**
   * The data must fill the shape, checked after the shape as Triton's core checks it (so a wrong shape is
   * reported as such, whatever data came with it), with the core's messages.
   */
  private checkData(t: Tensor, info: InputInfo): void {
    const count = elementCount(t.shape);
    if (t.datatype === 'BYTES') {
      const got = t.data.length;
      if (got < count) throw invalidArg(`expected ${count} string elements for inference input '${t.name}' for model '${this.name}', got ${got}`);
      if (got > count) throw invalidArg(`unexpected number of string elements ${count + 1} for inference input '${t.name}' for model '${this.name}', expecting ${count}`);
      return;
    }
    const expected = count * info.elementBytes;
    if (t.data.byteLength !== expected) {
      throw invalidArg(`input byte size mismatch for input '${t.name}' for model '${this.name}'. Expected ${expected}, got ${t.data.byteLength}`);
    }
  }

  private missingInputs(inputs: readonly Tensor[]) {
    const got = new Set(inputs.map((t) => t.name));
    const missing = [...this.inputs.values()].filter((i) => !i.optional && !got.has(i.name)).map((i) => `'${i.name}'`);
    const expected = this.requiredInputs === this.inputs.size
      ? `expected ${this.requiredInputs} inputs` : `expected number of inputs between ${this.requiredInputs} and ${this.inputs.size}`;
    return invalidArg(
      `${expected} but got ${inputs.length} inputs for model '${this.name}'. ` +
        `Got input(s) [${[...got].map((n) => `'${n}'`).join(',')}], but missing required input(s) [${missing.join(',')}]. ` +
        'Please provide all required input(s).',
    );
  }

  /** A client tensor in the shape the backend expects (config `reshape`), sharing its data. */
  toBackend(t: Tensor): Tensor {
    const info = this.inputs.get(t.name)!;
    if (!info.reshape) return t;
    return { ...t, shape: reshapeTo(t, info.reshape, this.maxBatchSize > 0) } as Tensor;
  }

  /** A backend output in the shape clients expect (config `dims` instead of `reshape`). */
  fromBackend(t: Tensor): Tensor {
    const info = this.outputs.get(t.name);
    if (!info?.reshape) return t;
    return { ...t, shape: reshapeTo(t, info.dims, this.maxBatchSize > 0) } as Tensor;
  }
}

function dataType(configType: string, name: string): DataType {
  const dt = fromConfigType(configType);
  if (!dt) throw invalidArg(`tensor '${name}' has unsupported data type ${configType}`);
  return dt;
}

/** Every dim equal, or -1 in the expected shape. */
export function shapeMatches(actual: readonly number[], expected: readonly number[]): boolean {
  if (actual.length !== expected.length) return false;
  for (let i = 0; i < actual.length; i++) {
    if (expected[i] !== -1 && actual[i] !== expected[i]) return false;
  }
  return true;
}

/** Replaces the per-item shape, keeping the batch dimension; one -1 in `target` takes the remaining elements. */
function reshapeTo(t: Tensor, target: readonly number[], batched: boolean): number[] {
  const lead = batched ? [t.shape[0]!] : [];
  const perItem = elementCount(t.shape) / (batched ? Math.max(t.shape[0]!, 1) : 1);
  const known = target.reduce((a, d) => (d === -1 ? a : a * d), 1);
  return [...lead, ...target.map((d) => (d === -1 ? (known === 0 ? 0 : perItem / known) : d))];
}
