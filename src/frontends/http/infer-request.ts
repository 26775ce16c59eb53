import { invalidArg, limitExceeded } from '../../errors.js';
import type { InferenceRequest, Parameters, RequestBounds, RequestedOutput, SharedMemoryInput, SharedMemoryRef } from '../../inference/index.js';
import { byteSize, isDataType, type DataType } from '../../tensor/datatype.js';
import { deserializeBytes, serializeBytes } from '../../tensor/bytes.js';
import { elementCount, formatShape, type Tensor } from '../../tensor/tensor.js';
import { decodeJsonData, describe, type JsonSource } from './json-data.js';

/**
 * The KServe v2 infer request body, JSON or JSON followed by binary tensors (Triton's binary tensor data
 * extension), → an InferenceRequest. Binary tensors stay views of the body. Every shape, type, size and
 * parameter is checked here so nothing malformed gets further.
 */

export interface DecodedInfer {
  readonly request: InferenceRequest;
  /** Per requested output: return it in binary. */
  readonly binaryOutputs: ReadonlyMap<string, boolean>;
  /** binary_data_output: the default for outputs that do not say. */
  readonly binaryDefault: boolean;
}

interface Target {
  readonly model: string;
  readonly version: number | undefined;
  readonly signal: AbortSignal | undefined;
  /** Headers that --http-header-forward-pattern passes to the model as parameters (the body's own win). */
  readonly forwarded?: Record<string, string> | undefined;
  /** See InferenceRequest.borrowOutputs. */
  readonly borrowOutputs?: boolean;
  /** See InferenceRequest.tenant. */
  readonly tenant?: string | undefined;
}

/**
 * A request's JSON header, checked, with every input's JSON `data` decoded into bytes. Plain data only (no
 * functions, no class instances), so the JSON worker can send it back: what crosses is bounded by the model
 * (inputs, outputs, dimensions, parameters) plus tensor bytes, which are transferred, not copied.
 */
export interface InferHeader {
  readonly id: string;
  readonly inputs: HeaderInput[];
  readonly params: DecodedParameters;
  readonly outputs: RequestedOutput[] | undefined;
  readonly binary: ReadonlyMap<string, boolean>;
}

export interface HeaderInput {
  readonly name: string;
  readonly datatype: DataType;
  readonly shape: number[];
  /** From JSON `data`: the tensor's bytes, or its BYTES elements (serialized into one buffer when `packed`). */
  readonly data?: Uint8Array | Uint8Array[];
  readonly packed?: boolean;
  /** binary_data_size: the bytes follow the header in the body. */
  readonly binarySize?: number;
  readonly shm?: SharedMemoryRef;
}

/** What a JSON header is decoded within; sourceBytes and sourceLength are the JSON text's bytes (see JsonSource). */
export interface HeaderLimits extends Partial<JsonSource> {
  readonly bounds: RequestBounds;
  /** --http-max-input-size, which tensors decoded from JSON may not pass either. */
  readonly maxInputSize: number;
  /** BYTES from JSON as one serialized buffer (for the JSON worker, which transfers it) rather than elements. */
  readonly packBytes: boolean;
  /** Small tensors from Buffer's pool (see decodeJsonData): on the event loop only, never for transferred bytes. */
  readonly pooled: boolean;
}

/**
 * Checks the parsed JSON header and decodes its `data`. What the model's bounds rule out (more inputs or outputs
 * than it has, more dimensions than any of its inputs, tensor bytes past the size limit) is refused before the
 * work it would cause; the model checks the rest with its own words.
 */
export function decodeHeader(json: unknown, limits: HeaderLimits): InferHeader {
  if (!isObject(json)) throw invalidArg("Unable to parse 'inputs': the inference request must be a JSON object");
  const id = json['id'];
  if (id !== undefined && typeof id !== 'string') throw invalidArg(`Unable to parse 'id': expected a string, got ${describe(id)}`);
  const inputsJson = json['inputs'];
  if (!Array.isArray(inputsJson)) throw invalidArg("Unable to parse 'inputs': the request must have an 'inputs' array");
  const b = limits.bounds;
  if (inputsJson.length > b.inputs) throw tooManyInputs(b, inputsJson.length);
  const outputsJson = json['outputs'];
  if (Array.isArray(outputsJson) && outputsJson.length > b.outputs) throw tooManyOutputs(b, outputsJson.length);
  const inputs: HeaderInput[] = new Array(inputsJson.length);
  for (let i = 0; i < inputsJson.length; i++) inputs[i] = decodeInput(inputsJson[i], limits);
  const params = decodeParameters(json['parameters']);
  const { outputs, binary } = decodeOutputs(outputsJson);
  return { id: id ?? '', inputs, params, outputs, binary };
}

/** Triton's words for a wrong number of inputs, without the lists of names: there may be millions. */
export function tooManyInputs(b: RequestBounds, got: number | string) {
  return invalidArg(b.inputs === b.requiredInputs
    ? `expected ${b.inputs} inputs but got ${got} inputs for model '${b.model}'`
    : `expected number of inputs between ${b.requiredInputs} and ${b.inputs} but got ${got} inputs for model '${b.model}'`);
}

export function tooManyOutputs(b: RequestBounds, got: number | string) {
  return invalidArg(`unexpected number of requested outputs ${got} for model '${b.model}', which has ${b.outputs} outputs`);
}

/** The header and the binary tensors after it (views of `body`) → the request. `body` holds the whole request. */
export function decodeInfer(header: InferHeader, body: Buffer, jsonLength: number, target: Target): DecodedInfer {
  let cursor = jsonLength;
  const inputs: Tensor[] = [];
  let shmInputs: SharedMemoryInput[] | undefined;
  for (const h of header.inputs) {
    const { name, datatype, shape } = h;
    if (h.shm !== undefined) {
      (shmInputs ??= []).push({ name, datatype, shape, sharedMemory: h.shm });
      continue;
    }
    const count = elementCount(shape);
    if (h.data !== undefined) {
      const data = h.packed ? deserializeBytes(h.data as Uint8Array, count, name, target.model) : h.data;
      inputs.push({ name, datatype, shape, data } as Tensor);
      continue;
    }
    const binarySize = h.binarySize!;
    if (cursor + binarySize > body.byteLength) {
      throw invalidArg(`unexpected size for input '${name}', expecting ${cursor + binarySize - body.byteLength} additional bytes for model '${target.model}'`);
    }
    const bytes = body.subarray(cursor, cursor + binarySize);
    inputs.push(binaryTensor(name, datatype, shape, count, bytes, target.model));
    cursor += binarySize;
  }
  if (cursor !== body.byteLength) throw invalidArg(`unexpected additional input data for model '${target.model}'`);
  const params = header.params;
  const request: InferenceRequest = {
    model: target.model,
    version: target.version,
    id: header.id,
    inputs,
    sharedMemoryInputs: shmInputs,
    outputs: header.outputs,
    parameters: target.forwarded ? { ...target.forwarded, ...params.custom } : params.custom,
    priority: params.priority,
    timeoutUs: params.timeoutUs,
    sequenceId: params.sequenceId,
    sequenceStart: params.sequenceStart,
    sequenceEnd: params.sequenceEnd,
    signal: target.signal,
    borrowOutputs: target.borrowOutputs,
    tenant: target.tenant,
  };
  return { request, binaryOutputs: header.binary, binaryDefault: params.binaryDataOutput };
}

/** A raw binary request's one input → the request: no parameters, every output, all of them binary. */
export function decodeRaw(input: Tensor, target: Target): DecodedInfer {
  const request: InferenceRequest = {
    model: target.model,
    version: target.version,
    id: '',
    inputs: [input],
    parameters: target.forwarded ? { ...target.forwarded } : {},
    signal: target.signal,
    borrowOutputs: target.borrowOutputs,
    tenant: target.tenant,
  };
  return { request, binaryOutputs: NO_OUTPUTS, binaryDefault: true };
}

const NO_OUTPUTS: ReadonlyMap<string, boolean> = new Map();
/** A request that lists no outputs (the usual one): every output, each as binary_data_output says. */
const NO_REQUESTED_OUTPUTS = { outputs: undefined, binary: NO_OUTPUTS };

function decodeInput(j: unknown, limits: HeaderLimits): HeaderInput {
  if (!isObject(j)) throw invalidArg("Unable to parse 'inputs': each input must be a JSON object");
  const name = j['name'];
  if (typeof name !== 'string') throw invalidArg("Unable to parse 'name' of an input: it must be a string");
  const datatype = j['datatype'];
  if (typeof datatype !== 'string') throw invalidArg(`Unable to parse 'datatype' of input '${name}': expected a string, got ${describe(datatype)}`);
  if (!isDataType(datatype)) throw invalidArg(`invalid datatype for input ${name}: ${describe(datatype)}`);
  const shape = decodeShape(j['shape'], name, limits.bounds);
  const p = j['parameters'];
  if (p !== undefined && !isObject(p)) throw invalidArg(`Unable to parse 'parameters': 'parameters' of input '${name}' must be an object`);
  const binarySize = p?.['binary_data_size'];
  const shm = p?.['shared_memory_region'];
  const hasData = j['data'] !== undefined;
  const sources = (hasData ? 1 : 0) + (binarySize !== undefined ? 1 : 0) + (shm !== undefined ? 1 : 0);
  if (sources !== 1) throw contentTypes(name, hasData, binarySize !== undefined, shm !== undefined);
  if (shm !== undefined) return { name, datatype, shape, shm: sharedMemoryRef(p!, `input '${name}'`) };
  if (hasData) return { name, datatype, shape, ...jsonData(j['data'], name, datatype, shape, limits) };
  if (typeof binarySize !== 'number' || !Number.isSafeInteger(binarySize) || binarySize < 0) {
    throw invalidArg(`Unable to parse 'binary_data_size': input '${name}' has ${describe(binarySize)}, not an unsigned integer`);
  }
  return { name, datatype, shape, binarySize };
}

/** Triton's words for an input with no source of data, or more than one. */
function contentTypes(name: string, data: boolean, binary: boolean, shm: boolean) {
  const set = (data ? " 'data'" : '') + (binary ? " 'binary_data_size'" : '') + (shm ? " 'shared_memory_region'" : '');
  return invalidArg("Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', " +
    `'shared_memory_region' in 'parameters'. But ${set === '' ? 'no field is set' : `set${set}`} (input '${name}')`);
}

/**
 * JSON `data` → bytes. The size the shape declares is checked against --http-max-input-size first (BYTES
 * elements count 4 bytes each, their length), so a small body cannot ask for a large allocation.
 */
function jsonData(data: unknown, name: string, datatype: DataType, shape: number[], limits: HeaderLimits): { data: Uint8Array | Uint8Array[]; packed?: boolean } {
  const count = elementCount(shape);
  const bytes = count * (datatype === 'BYTES' ? 4 : byteSize(datatype));
  if (bytes > limits.maxInputSize) {
    throw limitExceeded('INVALID_ARG', 'http-max-input-size',
      `Request JSON size of ${bytes} exceeds the maximum allowed value of ${limits.maxInputSize}. Use --http-max-input-size to increase the limit. (input '${name}' of shape ${formatShape(shape)} needs ${bytes} bytes)`);
  }
  if (count === 0) return datatype === 'BYTES' ? { data: limits.packBytes ? new Uint8Array(0) : [], packed: limits.packBytes } : { data: new Uint8Array(0) };
  const decoded = decodeJsonData(name, datatype, data, count, limits.pooled, limits.sourceBytes === undefined ? undefined : limits as JsonSource);
  if (datatype !== 'BYTES' || !limits.packBytes) return { data: decoded };
  return { data: serializeBytes(decoded as Uint8Array[], true), packed: true };
}

function binaryTensor(name: string, datatype: DataType, shape: number[], count: number, bytes: Buffer, model: string): Tensor {
  if (datatype === 'BYTES') return { name, datatype, shape, data: deserializeBytes(bytes, count, name, model) };
  // Whether the bytes fill the shape is checked by the model, after the shape itself, as in Triton's core.
  return { name, datatype, shape, data: bytes };
}

/**
 * The shape, as Triton's frontend reads it (an array of unsigned integers), and no longer than the model's
 * inputs can be: the length is checked before the dimensions are looked at.
 */
function decodeShape(s: unknown, name: string, bounds: RequestBounds): number[] {
  if (!Array.isArray(s)) throw invalidArg(`Unable to parse 'shape' of input '${name}': expected an array of unsigned integers, got ${describe(s)}`);
  if (s.length > bounds.rank) {
    throw invalidArg(`unexpected shape for input '${name}' for model '${bounds.model}': ${s.length} dimensions, more than any of its inputs has (${bounds.rank})`);
  }
  for (let i = 0; i < s.length; i++) {
    const d: unknown = s[i];
    if (typeof d !== 'number' || !Number.isSafeInteger(d) || d < 0) {
      throw invalidArg(`Unable to parse 'shape' of input '${name}': dimension ${i} is ${describe(d)}, not an unsigned integer below 2^53`);
    }
  }
  return s as number[];
}

export interface DecodedParameters {
  custom: Parameters | undefined;
  priority: number | undefined;
  timeoutUs: number | undefined;
  binaryDataOutput: boolean;
  sequenceId?: number | bigint | string;
  sequenceStart?: boolean;
  sequenceEnd?: boolean;
}

const RESERVED = new Set(['sequence_id', 'sequence_start', 'sequence_end', 'priority', 'timeout', 'binary_data_output', 'headers']);

/**
 * The most parameters one request may carry. Every one is handed to the model, and a body of millions of tiny
 * ones would otherwise cost the event loop seconds to take over from the JSON worker. Clients send a few.
 */
export const MAX_REQUEST_PARAMETERS = 1024;

export function decodeParameters(p: unknown): DecodedParameters {
  const out: DecodedParameters = { custom: undefined, priority: undefined, timeoutUs: undefined, binaryDataOutput: false };
  if (p === undefined) return out;
  if (!isObject(p)) throw invalidArg("failed to get request params.: 'parameters' must be a JSON object");
  let n = 0;
  for (const [k, v] of Object.entries(p)) {
    if (++n > MAX_REQUEST_PARAMETERS) throw invalidArg(`a request may have at most ${MAX_REQUEST_PARAMETERS} parameters`);
    if (k.startsWith('triton_')) throw invalidArg(`parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified: '${k}'`);
    if (RESERVED.has(k)) {
      reserved(out, k, v);
      continue;
    }
    // A bigint is an integer past 2^53 from the exact parse (see decodeInferText).
    if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean' && typeof v !== 'bigint') {
      throw invalidArg(`parameter '${k}' has invalid type. It should be either 'int', 'bool', or 'string'.`);
    }
    (out.custom ??= {})[k] = v;
  }
  return out;
}

const UINT64_LIMIT = 1n << 64n;

function uint64(k: string, v: bigint): bigint {
  if (v < 0n || v >= UINT64_LIMIT) throw invalidArg(`Unable to parse '${k}': expected an unsigned 64-bit integer`);
  return v;
}

function reserved(out: DecodedParameters, k: string, v: unknown): void {
  const uint = (): number => {
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw invalidArg(`Unable to parse '${k}': expected an unsigned integer, got ${describe(v)}`);
    return v;
  };
  const bool = (): boolean => {
    if (typeof v !== 'boolean') throw invalidArg(`Unable to parse '${k}': expected a boolean, got ${describe(v)}`);
    return v;
  };
  switch (k) {
    case 'priority': out.priority = uint(); break;
    case 'timeout': out.timeoutUs = uint(); break;
    case 'binary_data_output': out.binaryDataOutput = bool(); break;
    case 'sequence_start': out.sequenceStart = bool(); break;
    case 'sequence_end': out.sequenceEnd = bool(); break;
    case 'sequence_id': out.sequenceId = typeof v === 'string' ? v : typeof v === 'bigint' ? uint64(k, v) : uint(); break;
    default: break; // 'headers' is filled by header forwarding, not by clients
  }
}

function decodeOutputs(o: unknown): { outputs: RequestedOutput[] | undefined; binary: ReadonlyMap<string, boolean> } {
  if (o === undefined) return NO_REQUESTED_OUTPUTS;
  const binary = new Map<string, boolean>();
  if (!Array.isArray(o)) throw invalidArg("Unable to parse 'outputs': it must be an array");
  const outputs: RequestedOutput[] = [];
  for (const e of o) {
    if (!isObject(e) || typeof e['name'] !== 'string') throw invalidArg("Unable to parse 'outputs': each output must be an object with a string 'name'");
    const name = e['name'];
    const p = e['parameters'];
    let classCount = 0;
    if (p !== undefined) {
      if (!isObject(p)) throw invalidArg(`Unable to parse 'parameters': 'parameters' of output '${name}' must be an object`);
      if (p['shared_memory_region'] !== undefined) {
        if (p['classification'] !== undefined) throw invalidArg("Output can't set both 'shared_memory_region' and 'classification'");
        if (p['binary_data'] === true) throw invalidArg("Output can't set both 'shared_memory_region' and 'binary_data'");
        outputs.push({ name, sharedMemory: sharedMemoryRef(p, `output '${name}'`) });
        continue;
      }
      const b = p['binary_data'];
      if (b !== undefined) {
        if (typeof b !== 'boolean') throw invalidArg(`Unable to parse 'binary_data': output '${name}' has ${describe(b)}, not a boolean`);
        binary.set(name, b);
      }
      const c = p['classification'];
      if (c !== undefined) {
        if (typeof c !== 'number' || !Number.isSafeInteger(c) || c < 0) throw invalidArg(`Unable to set 'classification': output '${name}' has ${describe(c)}, not an unsigned integer`);
        classCount = c;
      }
    }
    outputs.push(classCount > 0 ? { name, classCount } : { name });
  }
  return { outputs, binary };
}

/**
 * shared_memory_region, shared_memory_offset (default 0) and shared_memory_byte_size (default 0, as Triton's:
 * a wrong size then fails the size check). Numbers past 2^53 stay approximate; the region's bounds check
 * refuses them all the same.
 */
function sharedMemoryRef(p: Record<string, unknown>, what: string): SharedMemoryRef {
  const region = p['shared_memory_region'];
  if (typeof region !== 'string') throw invalidArg(`Unable to parse 'shared_memory_region': ${what} has ${describe(region)}, not a string`);
  const uint = (key: string): number => {
    const v = p[key];
    if (v === undefined) return 0;
    if (typeof v === 'bigint' && v >= 0n) return Number(v);
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw invalidArg(`Unable to parse '${key}': ${what} has ${describe(v)}, not an unsigned integer`);
    return v;
  };
  return { region, offset: uint('shared_memory_offset'), byteSize: uint('shared_memory_byte_size') };
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

