import { invalidArg } from '../../errors.js';
import { deserializeBytes, serializeBytes } from '../../tensor/bytes.js';
import { isDataType, type DataType } from '../../tensor/datatype.js';
import { elementCount, type Tensor } from '../../tensor/tensor.js';
import { bytesOf } from '../../tensor/view.js';
import type { InferInputTensorMsg, Int64, TensorContentsMsg } from './messages.js';

/**
 * Tensor data on the gRPC wire. Inputs come either typed (`contents`, one repeated field per family of
 * datatypes) or raw (`raw_input_contents`, the little-endian bytes; BYTES with 4-byte length prefixes); raw
 * data stays a view of the received message. Outputs always go raw, in `raw_output_contents`, as Triton sends
 * them whatever the request used.
 */

/** Reads the entries of raw_input_contents in order, for the inputs that have neither contents nor shared memory. */
export class RawCursor {
  private next = 0;

  constructor(private readonly raw: readonly Buffer[]) {}

  take(input: string, model: string): Buffer {
    const b = this.raw[this.next];
    if (b === undefined) throw invalidArg(`unable to find data for input tensor '${input}' for model '${model}' in request.`);
    this.next++;
    return b;
  }

  /** Entries left over once every input has taken its own: the client's count and the inputs disagree. */
  checkAllUsed(model: string): void {
    if (this.next < this.raw.length) {
      throw invalidArg(`'raw_input_contents' has ${this.raw.length} entries but only ${this.next} inputs of the request to model '${model}' take their data from it`);
    }
  }
}

/**
 * A datatype Triton does not know reaches its core as INVALID, where the check against the config refuses it;
 * `expected` is the config's type of the input, when the model has one by that name.
 */
export function checkDataType(datatype: string, input: string, model: string, expected: DataType | undefined): DataType {
  if (isDataType(datatype)) return datatype;
  if (expected === undefined) throw invalidArg(`invalid datatype '${datatype}' for input '${input}'`);
  throw invalidArg(`inference input '${input}' data-type is 'INVALID', but model '${model}' expects '${expected}' ('${datatype}' is not a datatype)`);
}

export function decodeShape(shape: readonly Int64[], input: string): number[] {
  const out: number[] = new Array(shape.length);
  for (let i = 0; i < shape.length; i++) {
    const v = shape[i]!;
    // Dimensions below 2^31 (every real one) have a zero high half: take the low half without arithmetic.
    const d = typeof v === 'number' ? v : v.high === 0 && v.low >= 0 ? v.low : v.high * 4294967296 + (v.low >>> 0);
    if (!Number.isSafeInteger(d) || d < 0) throw invalidArg(`invalid shape for input '${input}': dimension ${i} is ${String(v)}`);
    out[i] = d;
  }
  return out;
}

/**
 * An input whose data is the next raw_input_contents entry (a view, no copy). Whether the bytes fill the
 * shape is checked by the model against its config, after the shape itself, as in Triton's core.
 */
export function rawTensor(name: string, datatype: DataType, shape: number[], bytes: Buffer, model: string): Tensor {
  if (datatype === 'BYTES') return { name, datatype, shape, data: deserializeBytes(bytes, elementCount(shape), name, model) };
  return { name, datatype, shape, data: bytes };
}

/** The repeated fields of InferTensorContents in the order Triton's gRPC frontend looks at them. */
const CONTENTS_FIELDS = [
  'bool_contents', 'int_contents', 'int64_contents', 'uint_contents', 'uint64_contents', 'fp32_contents', 'fp64_contents', 'bytes_contents',
] as const;
type ContentsField = (typeof CONTENTS_FIELDS)[number];

/** The datatype a contents field carries; int_contents and uint_contents carry the narrower types as well. */
function fieldType(field: ContentsField, declared: DataType): DataType {
  switch (field) {
    case 'bool_contents': return 'BOOL';
    case 'int_contents': return declared === 'INT8' || declared === 'INT16' ? declared : 'INT32';
    case 'int64_contents': return 'INT64';
    case 'uint_contents': return declared === 'UINT8' || declared === 'UINT16' ? declared : 'UINT32';
    case 'uint64_contents': return 'UINT64';
    case 'fp32_contents': return 'FP32';
    case 'fp64_contents': return 'FP64';
    case 'bytes_contents': return 'BYTES';
  }
}

/**
 * An input given in typed `contents`: copied once into little-endian bytes (the wire held varints or packed
 * values). As in Triton, the one non-empty field must be the declared datatype's; an input whose fields are
 * all empty has no data.
 */
export function contentsTensor(t: InferInputTensorMsg, datatype: DataType, shape: number[], model: string): Tensor {
  const c = t.contents!;
  const name = t.name;
  let field: ContentsField | undefined;
  for (const f of CONTENTS_FIELDS) {
    if (c[f].length === 0) continue;
    if (field !== undefined) {
      throw invalidArg(`unexpected explicit tensor data for input tensor '${name}' for model '${model}', binary data was already supplied.`);
    }
    const carried = fieldType(f, datatype);
    if (carried !== datatype) {
      throw invalidArg(`unexpected explicit tensor data for input tensor '${name}' for model '${model}' of type '${carried}', expected datatype '${datatype}'`);
    }
    field = f;
  }
  // Whether the elements fill the shape is checked by the model, after the shape, as in Triton's core.
  if (datatype === 'BYTES') return { name, datatype, shape, data: c.bytes_contents };
  return { name, datatype, shape, data: field === undefined ? new Uint8Array(0) : typedBytes(datatype, c) };
}

function typedBytes(dt: Exclude<DataType, 'BYTES'>, c: TensorContentsMsg): Uint8Array {
  switch (dt) {
    case 'BOOL': return bytesOf(Uint8Array.from(c.bool_contents, (b) => (b ? 1 : 0)));
    case 'INT8': return bytesOf(Int8Array.from(c.int_contents));
    case 'INT16': return bytesOf(Int16Array.from(c.int_contents));
    case 'INT32': return bytesOf(Int32Array.from(c.int_contents));
    case 'UINT8': return bytesOf(Uint8Array.from(c.uint_contents));
    case 'UINT16': return bytesOf(Uint16Array.from(c.uint_contents));
    case 'UINT32': return bytesOf(Uint32Array.from(c.uint_contents));
    case 'INT64': return int64Bytes(c.int64_contents);
    case 'UINT64': return int64Bytes(c.uint64_contents);
    case 'FP32': return bytesOf(Float32Array.from(c.fp32_contents));
    case 'FP64': return bytesOf(Float64Array.from(c.fp64_contents));
    // No contents field carries these: a non-empty field was refused above, and no field means no data.
    case 'FP16': case 'BF16': return new Uint8Array(0);
  }
}

/** 64-bit values as little-endian bytes, written as their two 32-bit halves (no BigInt per element). */
function int64Bytes(values: readonly Int64[]): Uint8Array {
  const halves = new Int32Array(values.length * 2);
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (typeof v === 'number') {
      halves[2 * i] = v | 0;
      halves[2 * i + 1] = Math.floor(v / 4294967296);
    } else {
      halves[2 * i] = v.low;
      halves[2 * i + 1] = v.high;
    }
  }
  return bytesOf(halves);
}

/** An output's raw_output_contents entry: the tensor's own bytes, or BYTES serialized with length prefixes. */
export function outputBytes(t: Tensor): Uint8Array {
  return t.datatype === 'BYTES' ? serializeBytes(t.data) : t.data;
}
