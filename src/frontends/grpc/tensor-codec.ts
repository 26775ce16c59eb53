import { invalidArg } from '../../errors.js';
import { deserializeBytes, serializeBytes } from '../../tensor/bytes.js';
import { byteSize, isDataType, type DataType } from '../../tensor/datatype.js';
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
    if (b === undefined) throw invalidArg(`unable to find data for input tensor '${input}' for model '${model}' in 'raw_input_contents'`);
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

export function checkDataType(datatype: string, input: string): DataType {
  if (!isDataType(datatype)) throw invalidArg(`invalid datatype '${datatype}' for input '${input}'`);
  return datatype;
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

/** An input whose data is the next raw_input_contents entry (a view, no copy). */
export function rawTensor(name: string, datatype: DataType, shape: number[], bytes: Buffer): Tensor {
  const count = elementCount(shape);
  if (datatype === 'BYTES') return { name, datatype, shape, data: deserializeBytes(bytes, count, name) };
  const expected = count * byteSize(datatype);
  if (bytes.byteLength !== expected) {
    throw invalidArg(`unexpected size for input '${name}', expecting ${expected} bytes for shape [${shape.join(',')}] ${datatype} but got ${bytes.byteLength} bytes in 'raw_input_contents'`);
  }
  return { name, datatype, shape, data: bytes };
}

/** An input given in typed `contents`: copied once into little-endian bytes (the wire held varints or packed values). */
export function contentsTensor(t: InferInputTensorMsg, datatype: DataType, shape: number[]): Tensor {
  const c = t.contents!;
  const count = elementCount(shape);
  const name = t.name;
  if (datatype === 'BYTES') {
    checkCount(name, count, c.bytes_contents.length, 'bytes_contents');
    return { name, datatype, shape, data: c.bytes_contents };
  }
  return { name, datatype, shape, data: typedBytes(name, datatype, count, c) };
}

function typedBytes(name: string, dt: Exclude<DataType, 'BYTES'>, count: number, c: TensorContentsMsg): Uint8Array {
  switch (dt) {
    case 'BOOL': return bytesOf(Uint8Array.from(checked(name, count, c.bool_contents, 'bool_contents'), (b) => (b ? 1 : 0)));
    case 'INT8': return bytesOf(Int8Array.from(checked(name, count, c.int_contents, 'int_contents')));
    case 'INT16': return bytesOf(Int16Array.from(checked(name, count, c.int_contents, 'int_contents')));
    case 'INT32': return bytesOf(Int32Array.from(checked(name, count, c.int_contents, 'int_contents')));
    case 'UINT8': return bytesOf(Uint8Array.from(checked(name, count, c.uint_contents, 'uint_contents')));
    case 'UINT16': return bytesOf(Uint16Array.from(checked(name, count, c.uint_contents, 'uint_contents')));
    case 'UINT32': return bytesOf(Uint32Array.from(checked(name, count, c.uint_contents, 'uint_contents')));
    case 'INT64': return int64Bytes(checked(name, count, c.int64_contents, 'int64_contents'));
    case 'UINT64': return int64Bytes(checked(name, count, c.uint64_contents, 'uint64_contents'));
    case 'FP32': return bytesOf(Float32Array.from(checked(name, count, c.fp32_contents, 'fp32_contents')));
    case 'FP64': return bytesOf(Float64Array.from(checked(name, count, c.fp64_contents, 'fp64_contents')));
    case 'FP16': case 'BF16':
      throw invalidArg(`input '${name}' has datatype ${dt}, which has no typed contents field: send it in 'raw_input_contents'`);
  }
}

function checked<T>(name: string, count: number, values: readonly T[], field: string): readonly T[] {
  checkCount(name, count, values.length, field);
  return values;
}

function checkCount(name: string, count: number, got: number, field: string): void {
  if (got !== count) throw invalidArg(`unexpected number of elements for input '${name}': its shape holds ${count} but '${field}' has ${got}`);
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
