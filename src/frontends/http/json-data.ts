import { isUtf8 } from 'node:buffer';
import { NereidError, invalidArg, isNereidError } from '../../errors.js';
import { INT_RANGES, byteSize, typedArrayCtor, type DataType } from '../../tensor/datatype.js';
import { bytesOf, pooledElements } from '../../tensor/view.js';

/**
 * JSON `data` of one input → the tensor's bytes. Accepts nested (natural shape) or flat arrays, checks the
 * element count and every value against the data type, and writes straight into the final typed array.
 * Used on the event loop for small bodies and in the JSON worker for large ones.
 */
const encoder = new TextEncoder();

export function decodeJsonData(name: string, datatype: DataType, data: unknown, count: number, pooled = false, source?: JsonSource): Uint8Array | Uint8Array[] {
  if (datatype === 'FP16' || datatype === 'BF16') {
    throw invalidArg(`receiving ${datatype} data via JSON is not supported. Please use the binary data format for input ${name}`);
  }
  if (!Array.isArray(data)) throw invalidArg(`Unable to parse 'data': 'data' of input '${name}' must be an array`);
  const flat = flatten(data, name);
  if (flat.length !== count) {
    throw invalidArg(`Unable to parse 'data': Shape does not match true shape of 'data' field: input '${name}' has ${count} elements in its shape but ${flat.length} in 'data'`);
  }
  if (datatype === 'BYTES') {
    const out = new Array<Uint8Array>(count);
    for (let i = 0; i < count; i++) {
      const v = flat[i];
      if (typeof v !== 'string') throw badValue(name, datatype, v);
      if (source !== undefined && v.includes(REPLACEMENT) && !isUtf8(source.sourceBytes.subarray(0, source.sourceLength))) throw notUtf8(name, i);
      out[i] = encoder.encode(v);
    }
    return out;
  }
  // On the event loop from Buffer's pool (see pooledElements); the JSON worker transfers its buffers.
  const arr = pooled ? pooledElements(datatype, count) : new (typedArrayCtor(datatype))(count);
  if (datatype === 'BOOL') fillBool(arr as Uint8Array, flat, name);
  else if (datatype === 'INT64' || datatype === 'UINT64') fillBig(arr as BigInt64Array, flat, name, datatype);
  else if (datatype === 'FP32' || datatype === 'FP64') fillFloat(arr as Float32Array, flat, name, datatype);
  else fillInt(arr as Int32Array, flat, name, datatype);
  return bytesOf(arr);
}

/**
 * The bytes a JSON text was decoded from. Decoding puts U+FFFD in place of bytes that are not UTF-8, which would
 * reach the model as other bytes than the client sent (an ONNX model casting the string to a number fails inside
 * ONNX Runtime). An element holding U+FFFD is checked against them: the client may have sent that character.
 */
export interface JsonSource {
  readonly sourceBytes: Uint8Array;
  readonly sourceLength: number;
}

const REPLACEMENT = '\ufffd';

function notUtf8(name: string, i: number) {
  return invalidArg(`Unable to parse 'data': element ${i} of input '${name}' is not valid UTF-8; a JSON string holds UTF-8 text, send other bytes as binary data (binary_data_size)`);
}

function flatten(data: unknown[], name: string): unknown[] {
  if (data.length === 0 || !Array.isArray(data[0])) return data;
  const out: unknown[] = [];
  const walk = (a: unknown[], depth: number): void => {
    if (depth > 100) throw invalidArg(`Unable to parse 'data': 'data' of input '${name}' is nested more than 100 levels deep`);
    for (const v of a) {
      if (Array.isArray(v)) walk(v, depth + 1);
      else out.push(v);
    }
  };
  walk(data, 1);
  return out;
}

function badValue(name: string, datatype: DataType, v: unknown) {
  return invalidArg(`Unable to parse 'data': ${describe(v)} is not a valid ${datatype} value for input '${name}'`);
}

/**
 * A client's JSON value for an error message, in bounded time and length: values can be nested arbitrarily
 * deep (JSON.stringify would overflow the stack) or megabytes long.
 */
export function describe(v: unknown): string {
  if (Array.isArray(v)) return 'an array';
  if (v === null) return 'null';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') return JSON.stringify(v.length > 64 ? `${v.slice(0, 64)}…` : v);
  return String(v);
}


function fillBool(arr: Uint8Array, flat: unknown[], name: string): void {
  for (let i = 0; i < flat.length; i++) {
    const v = flat[i];
    if (typeof v !== 'boolean') throw badValue(name, 'BOOL', v);
    arr[i] = v ? 1 : 0;
  }
}

function fillInt(arr: Int32Array, flat: unknown[], name: string, dt: DataType): void {
  const [lo, hi] = INT_RANGES[dt]!;
  for (let i = 0; i < flat.length; i++) {
    const v = flat[i];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi) throw badValue(name, dt, v);
    arr[i] = v;
  }
}

function fillFloat(arr: Float32Array, flat: unknown[], name: string, dt: DataType): void {
  for (let i = 0; i < flat.length; i++) {
    const v = flat[i];
    // A bigint: an integer past 2^53 that the exact parse kept because another value of the body needed it.
    if (typeof v === 'number') arr[i] = v;
    else if (typeof v === 'bigint') arr[i] = Number(v);
    else throw badValue(name, dt, v);
  }
}

const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;
const U64_MAX = 2n ** 64n - 1n;

/**
 * 64-bit integers: numbers up to 2^53, and bigints, which the exact parse (json-exact.ts) gives for integers
 * past it. An integer past 2^53 as a number is what JSON.parse made of one: it may have been rounded, so it is
 * refused with a RoundedInteger, on which the caller parses the text again exactly. Out of the type's range
 * is refused, as Triton refuses it.
 */
function fillBig(arr: BigInt64Array, flat: unknown[], name: string, dt: DataType): void {
  const unsigned = dt === 'UINT64';
  for (let i = 0; i < flat.length; i++) {
    const v = flat[i];
    let b: bigint;
    if (typeof v === 'number' && Number.isSafeInteger(v)) b = BigInt(v);
    else if (typeof v === 'bigint') b = v;
    else if (typeof v === 'number' && Number.isInteger(v)) throw new RoundedInteger(badValue(name, dt, v).message);
    else throw badValue(name, dt, v);
    if (unsigned ? b < 0n || b > U64_MAX : b < I64_MIN || b > I64_MAX) throw badValue(name, dt, v);
    arr[i] = b;
  }
}

/**
 * An INT64 or UINT64 value past 2^53 read by JSON.parse, which may have rounded it: the text is to be parsed
 * again with parseExactJson. As an answer it is what such a value gets when it cannot be read exactly.
 */
export class RoundedInteger extends NereidError {
  readonly rounded = true;

  constructor(message: string) {
    super('INVALID_ARG', message);
  }
}

export function isRoundedInteger(e: unknown): e is RoundedInteger {
  return isNereidError(e) && (e as { rounded?: unknown }).rounded === true;
}

export function expectedBytes(datatype: DataType, count: number): number {
  return byteSize(datatype) * count;
}
