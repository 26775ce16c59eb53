import { invalidArg } from '../../errors.js';
import type { InferenceRequest, Parameters, RequestedOutput, SharedMemoryInput, SharedMemoryRef } from '../../inference/index.js';
import { isDataType, type DataType } from '../../tensor/datatype.js';
import { deserializeBytes } from '../../tensor/bytes.js';
import { elementCount, type Tensor } from '../../tensor/tensor.js';
import { decodeJsonData } from './json-data.js';

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
}

/** The JSON part has been parsed (here or in the JSON worker); `body` holds the whole request. */
export function decodeInfer(json: unknown, body: Buffer, jsonLength: number, target: Target): DecodedInfer {
  if (!isObject(json)) throw invalidArg('the inference request must be a JSON object');
  const id = json['id'];
  if (id !== undefined && typeof id !== 'string') throw invalidArg("'id' must be a string");
  const inputsJson = json['inputs'];
  if (!Array.isArray(inputsJson)) throw invalidArg("Unable to parse 'inputs': the request must have an 'inputs' array");
  let cursor = jsonLength;
  const inputs: Tensor[] = [];
  let shmInputs: SharedMemoryInput[] | undefined;
  for (let i = 0; i < inputsJson.length; i++) {
    const r = decodeInput(inputsJson[i], body, cursor, target.model);
    if (r.tensor) inputs.push(r.tensor);
    else (shmInputs ??= []).push(r.shm!);
    cursor = r.cursor;
  }
  if (cursor !== body.byteLength) throw invalidArg('unexpected additional input data in the request body');
  const params = decodeParameters(json['parameters']);
  const { outputs, binary } = decodeOutputs(json['outputs']);
  const request: InferenceRequest = {
    model: target.model,
    version: target.version,
    id: id ?? '',
    inputs,
    sharedMemoryInputs: shmInputs,
    outputs,
    parameters: target.forwarded ? { ...target.forwarded, ...params.custom } : params.custom,
    priority: params.priority,
    timeoutUs: params.timeoutUs,
    sequenceId: params.sequenceId,
    sequenceStart: params.sequenceStart,
    sequenceEnd: params.sequenceEnd,
    signal: target.signal,
  };
  return { request, binaryOutputs: binary, binaryDefault: params.binaryDataOutput };
}

function decodeInput(j: unknown, body: Buffer, cursor: number, model: string): { tensor?: Tensor; shm?: SharedMemoryInput; cursor: number } {
  if (!isObject(j)) throw invalidArg("Unable to parse 'inputs': each input must be a JSON object");
  const name = j['name'];
  if (typeof name !== 'string') throw invalidArg("Unable to parse 'name' of an input: it must be a string");
  const datatype = j['datatype'];
  if (!isDataType(datatype)) throw invalidArg(`invalid datatype ${JSON.stringify(datatype)} for input '${name}'`);
  const shape = decodeShape(j['shape'], name);
  const p = j['parameters'];
  if (p !== undefined && !isObject(p)) throw invalidArg(`'parameters' of input '${name}' must be an object`);
  const binarySize = p?.['binary_data_size'];
  const shm = p?.['shared_memory_region'];
  const hasData = j['data'] !== undefined;
  const sources = (hasData ? 1 : 0) + (binarySize !== undefined ? 1 : 0) + (shm !== undefined ? 1 : 0);
  if (sources !== 1) {
    throw invalidArg(`input '${name}' must have exactly one of 'data', 'binary_data_size' or 'shared_memory_region'`);
  }
  if (shm !== undefined) return { shm: { name, datatype, shape, sharedMemory: sharedMemoryRef(p!, `input '${name}'`) }, cursor };
  const count = elementCount(shape);
  if (hasData) {
    const data = count === 0 ? (datatype === 'BYTES' ? [] : new Uint8Array(0)) : jsonData(j['data'], name, datatype, count);
    return { tensor: { name, datatype, shape, data } as Tensor, cursor };
  }
  if (typeof binarySize !== 'number' || !Number.isSafeInteger(binarySize) || binarySize < 0) {
    throw invalidArg(`'binary_data_size' of input '${name}' must be a non-negative integer`);
  }
  if (cursor + binarySize > body.byteLength) {
    throw invalidArg(`unexpected size for input '${name}': binary_data_size ${binarySize} goes past the end of the request body`);
  }
  const bytes = body.subarray(cursor, cursor + binarySize);
  return { tensor: binaryTensor(name, datatype, shape, count, bytes, model), cursor: cursor + binarySize };
}

/** Data already decoded by the JSON worker arrives as bytes (or BYTES elements); otherwise decode it here. */
function jsonData(data: unknown, name: string, datatype: DataType, count: number): Uint8Array | Uint8Array[] {
  if (data instanceof Uint8Array) return data;
  if (Array.isArray(data) && data.length > 0 && data[0] instanceof Uint8Array) return data as Uint8Array[];
  return decodeJsonData(name, datatype, data, count);
}

function binaryTensor(name: string, datatype: DataType, shape: number[], count: number, bytes: Buffer, model: string): Tensor {
  if (datatype === 'BYTES') return { name, datatype, shape, data: deserializeBytes(bytes, count, name, model) };
  // Whether the bytes fill the shape is checked by the model, after the shape itself, as in Triton's core.
  return { name, datatype, shape, data: bytes };
}

function decodeShape(s: unknown, name: string): number[] {
  if (!Array.isArray(s)) throw invalidArg(`Unable to parse 'shape' of input '${name}': it must be an array of non-negative integers`);
  for (const d of s) {
    if (typeof d !== 'number' || !Number.isSafeInteger(d) || d < 0) {
      throw invalidArg(`Unable to parse 'shape' of input '${name}': ${JSON.stringify(d)} is not a non-negative integer`);
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

export function decodeParameters(p: unknown): DecodedParameters {
  const out: DecodedParameters = { custom: undefined, priority: undefined, timeoutUs: undefined, binaryDataOutput: false };
  if (p === undefined) return out;
  if (!isObject(p)) throw invalidArg("'parameters' must be a JSON object");
  for (const [k, v] of Object.entries(p)) {
    if (k.startsWith('triton_')) throw invalidArg(`parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified: '${k}'`);
    if (RESERVED.has(k)) {
      reserved(out, k, v);
      continue;
    }
    if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') {
      throw invalidArg(`parameter '${k}' has an unsupported value type: only strings, numbers and booleans are allowed`);
    }
    (out.custom ??= {})[k] = v;
  }
  return out;
}

const UINT64_LIMIT = 1n << 64n;

function uint64(k: string, v: bigint): bigint {
  if (v < 0n || v >= UINT64_LIMIT) throw invalidArg(`parameter '${k}' must be an unsigned 64-bit integer`);
  return v;
}

function reserved(out: DecodedParameters, k: string, v: unknown): void {
  const uint = (): number => {
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw invalidArg(`parameter '${k}' must be an unsigned integer`);
    return v;
  };
  const bool = (): boolean => {
    if (typeof v !== 'boolean') throw invalidArg(`parameter '${k}' must be a boolean`);
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

function decodeOutputs(o: unknown): { outputs: RequestedOutput[] | undefined; binary: Map<string, boolean> } {
  const binary = new Map<string, boolean>();
  if (o === undefined) return { outputs: undefined, binary };
  if (!Array.isArray(o)) throw invalidArg("Unable to parse 'outputs': it must be an array");
  const outputs: RequestedOutput[] = [];
  for (const e of o) {
    if (!isObject(e) || typeof e['name'] !== 'string') throw invalidArg("Unable to parse 'outputs': each output must be an object with a string 'name'");
    const name = e['name'];
    const p = e['parameters'];
    let classCount = 0;
    if (p !== undefined) {
      if (!isObject(p)) throw invalidArg(`'parameters' of output '${name}' must be an object`);
      if (p['shared_memory_region'] !== undefined) {
        if (p['classification'] !== undefined) throw invalidArg("Output can't set both 'shared_memory_region' and 'classification'");
        if (p['binary_data'] === true) throw invalidArg("Output can't set both 'shared_memory_region' and 'binary_data'");
        outputs.push({ name, sharedMemory: sharedMemoryRef(p, `output '${name}'`) });
        continue;
      }
      const b = p['binary_data'];
      if (b !== undefined) {
        if (typeof b !== 'boolean') throw invalidArg(`'binary_data' of output '${name}' must be a boolean`);
        binary.set(name, b);
      }
      const c = p['classification'];
      if (c !== undefined) {
        if (typeof c !== 'number' || !Number.isSafeInteger(c) || c < 0) throw invalidArg(`'classification' of output '${name}' must be an unsigned integer`);
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
  if (typeof region !== 'string') throw invalidArg(`'shared_memory_region' of ${what} must be a string`);
  const uint = (key: string): number => {
    const v = p[key];
    if (v === undefined) return 0;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw invalidArg(`'${key}' of ${what} must be an unsigned integer`);
    return v;
  };
  return { region, offset: uint('shared_memory_offset'), byteSize: uint('shared_memory_byte_size') };
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

