/**
 * `nereid/backend-utils`: what a JavaScript model imports, the counterpart of Triton's
 * `triton_python_backend_utils` with its names in camelCase (`get_input_tensor_by_name` is
 * `getInputTensorByName`, `as_numpy()` is `asArray()`, …).
 *
 * ```js
 * import { InferenceResponse, Tensor, getInputTensorByName } from 'nereid/backend-utils';
 *
 * export default class Model {
 *   execute(requests) {
 *     return requests.map((r) => {
 *       const a = getInputTensorByName(r, 'INPUT0').asArray();
 *       return new InferenceResponse([new Tensor('OUTPUT0', a.map((v) => v * 2))]);
 *     });
 *   }
 * }
 * ```
 *
 * Objects are recognised by brands under Symbol.for, never by `instanceof`, so a model that ends up with a
 * second copy of this module still works.
 */

import { ERROR_CODE_NAMES } from './wire.js';

export const TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1;
export const TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2;
export const TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1;
export const TRITONSERVER_REQUEST_RELEASE_ALL = 1;
export const TRITONSERVER_REQUEST_RELEASE_RESCHEDULE = 2;

export type DataType =
  | 'BOOL' | 'UINT8' | 'UINT16' | 'UINT32' | 'UINT64'
  | 'INT8' | 'INT16' | 'INT32' | 'INT64'
  | 'FP16' | 'FP32' | 'FP64' | 'BYTES' | 'BF16';

export type TypedArray =
  | Uint8Array | Int8Array | Uint16Array | Int16Array | Uint32Array | Int32Array
  | BigUint64Array | BigInt64Array | Float32Array | Float64Array;

type ArrayCtor = { new (length: number): TypedArray; new (buffer: ArrayBufferLike, byteOffset: number, length: number): TypedArray; readonly BYTES_PER_ELEMENT: number };

/** Numbering of model_config.proto's DataType (TYPE_BOOL = 1 … TYPE_STRING = 13, TYPE_BF16 = 14). */
const TRITON_TYPE_NUMBERS: Record<DataType, number> = {
  BOOL: 1, UINT8: 2, UINT16: 3, UINT32: 4, UINT64: 5, INT8: 6, INT16: 7, INT32: 8, INT64: 9,
  FP16: 10, FP32: 11, FP64: 12, BYTES: 13, BF16: 14,
};

const ARRAYS: Record<Exclude<DataType, 'BYTES'>, ArrayCtor> = {
  BOOL: Uint8Array, UINT8: Uint8Array, UINT16: Uint16Array, UINT32: Uint32Array, UINT64: BigUint64Array,
  INT8: Int8Array, INT16: Int16Array, INT32: Int32Array, INT64: BigInt64Array,
  // Half floats are their raw 16-bit patterns.
  FP16: Uint16Array, FP32: Float32Array, FP64: Float64Array, BF16: Uint16Array,
};

/** The data type a typed array stands for when none is given. */
function typeOfArray(a: TypedArray): Exclude<DataType, 'BYTES'> {
  if (a instanceof Int32Array) return 'INT32';
  if (a instanceof Float32Array) return 'FP32';
  if (a instanceof Uint8Array) return 'UINT8';
  if (a instanceof Int8Array) return 'INT8';
  if (a instanceof Uint16Array) return 'UINT16';
  if (a instanceof Int16Array) return 'INT16';
  if (a instanceof Uint32Array) return 'UINT32';
  if (a instanceof BigInt64Array) return 'INT64';
  if (a instanceof BigUint64Array) return 'UINT64';
  if (a instanceof Float64Array) return 'FP64';
  throw new TritonModelException('unsupported typed array for a tensor');
}

const kTensor = Symbol.for('nereid.backend.Tensor');
const kResponse = Symbol.for('nereid.backend.InferenceResponse');
const kError = Symbol.for('nereid.backend.TritonError');
/** Set by the server on the requests it hands to execute(): how their responses leave. */
export const kRequestChannel = Symbol.for('nereid.backend.requestChannel');

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * A named tensor. Fixed-size types hold a typed array (FP16 and BF16 as their 16-bit patterns in a
 * Uint16Array, BOOL as 0/1 bytes in a Uint8Array); BYTES holds one Uint8Array per element.
 *
 * `new Tensor(name, data, shape?, datatype?)`: `data` is a typed array, an array of strings or Uint8Arrays
 * (BYTES), or an array of numbers, bigints or booleans with `datatype` given. The shape defaults to
 * `[elementCount]`; the data type to the typed array's own (Int32Array → INT32, Float32Array → FP32, …).
 */
export class Tensor {
  readonly [kTensor] = true;
  readonly #name: string;
  readonly #datatype: DataType;
  readonly #shape: number[];
  readonly #data: TypedArray | Uint8Array[];

  constructor(name: string, data: TypedArray | readonly (string | Uint8Array)[] | readonly (number | bigint | boolean)[], shape?: readonly number[], datatype?: DataType) {
    this.#name = name;
    if (ArrayBuffer.isView(data)) {
      const dt = datatype ?? typeOfArray(data as TypedArray);
      if (dt === 'BYTES') throw new TritonModelException(`tensor '${name}': BYTES data must be an array of strings or Uint8Arrays`);
      const ctor = ARRAYS[dt];
      const arr = data as TypedArray;
      this.#data = arr.constructor === ctor ? arr : new ctor(arr.buffer, arr.byteOffset, arr.byteLength / ctor.BYTES_PER_ELEMENT);
      this.#datatype = dt;
    } else if (datatype === 'BYTES' || (datatype === undefined && data.length > 0 && (typeof data[0] === 'string' || data[0] instanceof Uint8Array))) {
      this.#data = (data as readonly unknown[]).map((e) => (typeof e === 'string' ? encoder.encode(e) : e instanceof Uint8Array ? e : encoder.encode(String(e))));
      this.#datatype = 'BYTES';
    } else {
      if (!datatype) throw new TritonModelException(`tensor '${name}': give a datatype for plain array data, or pass a typed array`);
      const ctor = ARRAYS[datatype];
      const big = ctor === BigInt64Array || ctor === BigUint64Array;
      const arr = new ctor(data.length);
      for (let i = 0; i < data.length; i++) {
        const v = data[i];
        (arr as unknown as unknown[])[i] = big ? BigInt(typeof v === 'boolean' ? Number(v) : (v as number | bigint)) : Number(v);
      }
      this.#data = arr;
      this.#datatype = datatype;
    }
    this.#shape = shape ? [...shape] : [this.#data.length];
    let n = 1;
    for (const d of this.#shape) n *= d;
    if (n !== this.#data.length) {
      throw new TritonModelException(`tensor '${name}' has ${this.#data.length} elements, which does not fit its shape [${this.#shape.join(',')}]`);
    }
  }

  name(): string {
    return this.#name;
  }

  /** The wire name of the data type: 'INT32', 'FP32', 'BYTES', … */
  datatype(): DataType {
    return this.#datatype;
  }

  /** The data type as model_config.proto numbers it (TYPE_INT32 = 8, …), as Python's triton_dtype(). */
  tritonDtype(): number {
    return TRITON_TYPE_NUMBERS[this.#datatype];
  }

  shape(): number[] {
    return [...this.#shape];
  }

  /** The data: a typed array, or for BYTES one Uint8Array per element. Inputs are views: no copy is made. */
  asArray(): TypedArray | Uint8Array[] {
    return this.#data;
  }

  /** The elements of a BYTES tensor decoded as UTF-8. */
  asStrings(): string[] {
    if (this.#datatype !== 'BYTES') throw new TritonModelException(`tensor '${this.#name}' is ${this.#datatype}, not BYTES`);
    return (this.#data as Uint8Array[]).map((e) => decoder.decode(e));
  }

  isCpu(): boolean {
    return true;
  }
}

/** Triton's error codes, as TritonError's static members. */
export class TritonError {
  static readonly UNKNOWN = 0;
  static readonly INTERNAL = 1;
  static readonly NOT_FOUND = 2;
  static readonly INVALID_ARG = 3;
  static readonly UNAVAILABLE = 4;
  static readonly UNSUPPORTED = 5;
  static readonly ALREADY_EXISTS = 6;
  static readonly CANCELLED = 7;

  readonly [kError] = true;
  readonly #message: string;
  readonly #code: number;

  constructor(message: string, code: number = TritonError.INTERNAL) {
    this.#message = message;
    this.#code = code >= 0 && code < ERROR_CODE_NAMES.length ? code : TritonError.INTERNAL;
  }

  code(): number {
    return this.#code;
  }

  message(): string {
    return this.#message;
  }
}

/** Throw it from initialize, execute or finalize to fail with a message. */
export class TritonModelException extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TritonModelException';
  }
}

export type ResponseParameters = Record<string, string | number | boolean | bigint>;

/**
 * A response: output tensors, or an error. `new InferenceResponse(outputTensors?, error?, parameters?)`, or
 * with Python's keywords as one object: `new InferenceResponse({ outputTensors, error, parameters })`.
 */
export class InferenceResponse {
  readonly [kResponse] = true;
  readonly #outputs: Tensor[];
  readonly #error: TritonError | undefined;
  readonly #parameters: ResponseParameters | undefined;

  constructor(
    outputTensors: readonly Tensor[] | { outputTensors?: readonly Tensor[]; error?: TritonError | string; parameters?: ResponseParameters } = [],
    error?: TritonError | string,
    parameters?: ResponseParameters,
  ) {
    if (!Array.isArray(outputTensors)) {
      const o = outputTensors as { outputTensors?: readonly Tensor[]; error?: TritonError | string; parameters?: ResponseParameters };
      outputTensors = o.outputTensors ?? [];
      error = o.error;
      parameters = o.parameters;
    }
    this.#outputs = [...(outputTensors as readonly Tensor[])];
    this.#error = typeof error === 'string' ? new TritonError(error) : error ?? undefined;
    this.#parameters = parameters;
  }

  outputTensors(): Tensor[] {
    return this.#outputs;
  }

  hasError(): boolean {
    return this.#error !== undefined;
  }

  error(): TritonError | undefined {
    return this.#error;
  }

  /** The response parameters as a JSON string, as Python's parameters() returns them. */
  parameters(): string {
    return parametersJson(this.#parameters ?? {});
  }

  /** The parameters as an object (Nereid's addition). */
  parametersObject(): ResponseParameters {
    return { ...(this.#parameters ?? {}) };
  }
}

/** How a request's responses leave the model: one final send for ordinary models, any number for decoupled. */
export interface RequestChannel {
  send(response: InferenceResponse | undefined, flags: number): void;
  isCancelled(): boolean;
}

/** Sends a request's responses: `send(response, flags)`, ending with `TRITONSERVER_RESPONSE_COMPLETE_FINAL`. */
export class InferenceResponseSender {
  readonly #channel: RequestChannel;

  constructor(channel: RequestChannel) {
    this.#channel = channel;
  }

  /** `send(response)`, `send(response, FINAL)`, or `send(undefined, FINAL)` to end without another response. */
  send(response?: InferenceResponse | null, flags = 0): void {
    if (response !== undefined && response !== null && !isInferenceResponse(response)) {
      throw new TritonModelException('send() takes an InferenceResponse (or nothing, with the FINAL flag)');
    }
    this.#channel.send(response ?? undefined, flags);
  }

  isCancelled(): boolean {
    return this.#channel.isCancelled();
  }
}

export interface InferenceRequestOptions {
  requestId?: string;
  correlationId?: number | bigint | string;
  inputs: readonly Tensor[];
  requestedOutputNames: readonly string[];
  modelName: string;
  modelVersion?: number;
  flags?: number;
  /** Microseconds; 0 for none. */
  timeout?: number;
  parameters?: ResponseParameters;
}

/**
 * A request as execute() receives it. Its inputs are views over memory the server hands over; keep neither
 * the request nor its tensors past the request's last response. (Constructing one, for calling other models,
 * is not supported yet.)
 */
export class InferenceRequest {
  readonly #options: InferenceRequestOptions;
  [kRequestChannel]: RequestChannel | undefined;

  constructor(options: InferenceRequestOptions) {
    this.#options = options;
  }

  inputs(): Tensor[] {
    return [...this.#options.inputs];
  }

  requestId(): string {
    return this.#options.requestId ?? '';
  }

  /** The sequence's correlation id: a number (a bigint past 2^53), a string, or 0 outside a sequence. */
  correlationId(): number | bigint | string {
    return this.#options.correlationId ?? 0;
  }

  /** TRITONSERVER_REQUEST_FLAG_SEQUENCE_START | _END bits. */
  flags(): number {
    return this.#options.flags ?? 0;
  }

  /** The request's timeout in microseconds, 0 when none. */
  timeout(): number {
    return this.#options.timeout ?? 0;
  }

  /** The request's custom parameters as a JSON string, as Python's parameters() returns them. */
  parameters(): string {
    return parametersJson(this.#options.parameters ?? {});
  }

  /** The custom parameters as an object (Nereid's addition). */
  parametersObject(): ResponseParameters {
    return { ...(this.#options.parameters ?? {}) };
  }

  requestedOutputNames(): string[] {
    return [...this.#options.requestedOutputNames];
  }

  modelName(): string {
    return this.#options.modelName;
  }

  getResponseSender(): InferenceResponseSender {
    const channel = this[kRequestChannel];
    if (!channel) throw new TritonModelException('this request was not given to execute(): it has no response sender');
    return new InferenceResponseSender(channel);
  }

  isCancelled(): boolean {
    return this[kRequestChannel]?.isCancelled() ?? false;
  }

  exec(): never {
    throw new TritonModelException('calling other models from a JavaScript model (BLS) is not supported yet');
  }

  asyncExec(): never {
    return this.exec();
  }
}

/** JSON with integers past 2^53 written exactly. */
function parametersJson(p: ResponseParameters): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(p)) parts.push(`${JSON.stringify(k)}:${typeof v === 'bigint' ? v.toString() : JSON.stringify(v)}`);
  return `{${parts.join(',')}}`;
}

export function isTensor(v: unknown): v is Tensor {
  return typeof v === 'object' && v !== null && (v as Record<symbol, unknown>)[kTensor] === true;
}

export function isInferenceResponse(v: unknown): v is InferenceResponse {
  return typeof v === 'object' && v !== null && (v as Record<symbol, unknown>)[kResponse] === true;
}

export function isTritonError(v: unknown): v is TritonError {
  return typeof v === 'object' && v !== null && (v as Record<symbol, unknown>)[kError] === true;
}

// ---- helpers of triton_python_backend_utils ----

export function getInputTensorByName(request: InferenceRequest, name: string): Tensor | undefined {
  return request.inputs().find((t) => t.name() === name);
}

export function getOutputTensorByName(response: InferenceResponse, name: string): Tensor | undefined {
  return response.outputTensors().find((t) => t.name() === name);
}

type ConfigDict = Record<string, unknown>;

export function getInputConfigByName(modelConfig: ConfigDict, name: string): ConfigDict | undefined {
  return (modelConfig.input as ConfigDict[] | undefined)?.find((i) => i.name === name);
}

export function getOutputConfigByName(modelConfig: ConfigDict, name: string): ConfigDict | undefined {
  return (modelConfig.output as ConfigDict[] | undefined)?.find((o) => o.name === name);
}

export function usingDecoupledModelTransactionPolicy(modelConfig: ConfigDict): boolean {
  return ((modelConfig.model_transaction_policy as ConfigDict | undefined)?.decoupled as boolean | undefined) ?? false;
}

/** 'TYPE_INT32' → Int32Array, as Python's triton_string_to_numpy; TYPE_STRING → Array (elements are Uint8Arrays). */
export function tritonStringToTypedArray(typeString: string): ArrayCtor | ArrayConstructor | undefined {
  if (typeString === 'TYPE_STRING') return Array;
  const dt = typeString.startsWith('TYPE_') ? typeString.slice(5) : '';
  return dt in ARRAYS ? ARRAYS[dt as Exclude<DataType, 'BYTES'>] : undefined;
}

/** BYTES elements in Triton's serialized layout: per element a 4-byte little-endian length, then the bytes. */
export function serializeByteTensor(elements: readonly (string | Uint8Array)[]): Uint8Array {
  const parts = elements.map((e) => (typeof e === 'string' ? encoder.encode(e) : e));
  let n = 0;
  for (const p of parts) n += 4 + p.byteLength;
  const out = new Uint8Array(n);
  const view = new DataView(out.buffer);
  let at = 0;
  for (const p of parts) {
    view.setUint32(at, p.byteLength, true);
    out.set(p, at + 4);
    at += 4 + p.byteLength;
  }
  return out;
}

export function deserializeBytesTensor(bytes: Uint8Array): Uint8Array[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Uint8Array[] = [];
  for (let at = 0; at + 4 <= bytes.byteLength;) {
    const len = view.getUint32(at, true);
    out.push(bytes.subarray(at + 4, at + 4 + len));
    at += 4 + len;
  }
  return out;
}

/** What a call into the model needs to know about its instance: set by the worker hosting it (model-worker.ts). */
interface InstanceContext {
  readonly modelDir: string;
  log(level: number, message: string): void;
}
let currentContext: () => InstanceContext | undefined = () => undefined;
const kSetContext = Symbol.for('nereid.backend.setInstanceContext');

/** The model's folder (Python's get_model_dir()). */
export function getModelDir(): string {
  return currentContext()?.modelDir ?? '';
}
(getModelDir as unknown as Record<symbol, unknown>)[kSetContext] = (current: () => InstanceContext | undefined): void => {
  currentContext = current;
};

// ---- logging ----

/** Messages for the server's log, filtered by its settings (VERBOSE needs --log-verbose ≥ 1). */
export class Logger {
  static readonly INFO = 0;
  static readonly WARNING = 1;
  static readonly ERROR = 2;
  static readonly VERBOSE = 3;

  static log(message: string, level: number = Logger.INFO): void {
    const context = currentContext();
    if (context) context.log(level, String(message));
    else if (level === Logger.ERROR) console.error(String(message));
    else console.log(String(message));
  }

  static logInfo(message: string): void {
    Logger.log(message, Logger.INFO);
  }

  static logWarn(message: string): void {
    Logger.log(message, Logger.WARNING);
  }

  static logError(message: string): void {
    Logger.log(message, Logger.ERROR);
  }

  static logVerbose(message: string): void {
    Logger.log(message, Logger.VERBOSE);
  }
}

// ---- auto-complete ----

type TensorConfig = { name: string; data_type: string; dims: number[]; optional?: boolean };

/**
 * The config a model's `static autoComplete(config)` receives and returns (Python's pb_utils.ModelConfig), in
 * the JSON form of GET /v2/models/{m}/config.
 */
export class ModelConfig {
  readonly #config: ConfigDict;

  constructor(config: string | ConfigDict) {
    this.#config = typeof config === 'string' ? (JSON.parse(config) as ConfigDict) : config;
    this.#config.input ??= [];
    this.#config.output ??= [];
    this.#config.max_batch_size ??= 0;
  }

  /** The live config object: changes to it are changes to the config. */
  asDict(): ConfigDict {
    return this.#config;
  }

  setMaxBatchSize(maxBatchSize: number): void {
    const current = Number(this.#config.max_batch_size ?? 0);
    if (current > maxBatchSize) {
      throw new TritonModelException(`configuration specified max_batch_size ${current}, but in auto-complete-config function for model '${String(this.#config.name)}' specified max_batch_size ${maxBatchSize}`);
    }
    this.#config.max_batch_size = maxBatchSize;
  }

  setDynamicBatching(): void {
    if (this.#config.sequence_batching !== undefined) throw new TritonModelException('dynamic batching conflicts with sequence batching');
    if (this.#config.ensemble_scheduling !== undefined) throw new TritonModelException('dynamic batching conflicts with ensemble scheduling');
    this.#config.dynamic_batching ??= {};
  }

  addInput(input: TensorConfig): void {
    this.#addTensor('input', input, ['name', 'data_type', 'dims', 'optional']);
  }

  addOutput(output: TensorConfig): void {
    this.#addTensor('output', output, ['name', 'data_type', 'dims']);
  }

  setModelTransactionPolicy(policy: { decoupled: boolean }): void {
    for (const k of Object.keys(policy)) if (k !== 'decoupled') throw new TritonModelException(`model transaction property '${k}' is not valid`);
    const current = this.#config.model_transaction_policy as { decoupled?: boolean } | undefined;
    if (current?.decoupled !== undefined && current.decoupled !== policy.decoupled) {
      throw new TritonModelException(`trying to change decoupled property in auto-complete-config for model '${String(this.#config.name)}', which is already set to ${String(current.decoupled)}`);
    }
    this.#config.model_transaction_policy = { ...(current ?? {}), decoupled: policy.decoupled };
  }

  #addTensor(kind: 'input' | 'output', t: TensorConfig, allowed: readonly string[]): void {
    if (typeof t !== 'object' || t === null) throw new TritonModelException(`model ${kind} must be an object`);
    for (const k of Object.keys(t)) if (!allowed.includes(k)) throw new TritonModelException(`model ${kind} has an unexpected key '${k}'`);
    for (const k of ['name', 'data_type', 'dims'] as const) {
      if (!(k in t)) throw new TritonModelException(`model ${kind} must have '${k}'`);
    }
    const list = this.#config[kind] as TensorConfig[];
    const existing = list.find((x) => x.name === t.name);
    if (!existing) {
      list.push({ ...t, dims: [...t.dims] });
      return;
    }
    if (existing.data_type && existing.data_type !== 'TYPE_INVALID' && existing.data_type !== t.data_type) {
      throw new TritonModelException(`unable to change data_type of ${kind} '${t.name}' from ${existing.data_type} to ${t.data_type}`);
    }
    const dims = existing.dims ?? [];
    if (dims.length > 0 && (dims.length !== t.dims.length || dims.some((d, i) => Number(d) !== t.dims[i]))) {
      throw new TritonModelException(`unable to change dims of ${kind} '${t.name}' from [${dims.join(', ')}] to [${t.dims.join(', ')}]`);
    }
    if (kind === 'input' && t.optional !== undefined && existing.optional !== undefined && existing.optional !== t.optional) {
      throw new TritonModelException(`unable to change optional of input '${t.name}'`);
    }
    existing.data_type = t.data_type;
    existing.dims = [...t.dims];
    if (t.optional !== undefined) existing.optional = t.optional;
  }
}
