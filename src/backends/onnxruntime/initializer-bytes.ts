import { open, type FileHandle } from 'node:fs/promises';

/**
 * How many bytes an ONNX model's weights take: the sum over the main graph's initializers of their element
 * count times their element size, read from the model file with a small protobuf walk that skips the weights'
 * bytes rather than reading them (a model of gigabytes costs a few reads per initializer).
 *
 * The walk reads ModelProto.graph (field 7), then GraphProto.initializer (field 5, repeated TensorProto), and of
 * each TensorProto only dims (1, packed or not), data_type (2) and, for strings, string_data (6). An
 * initializer's size comes from its dims whatever holds its data (raw_data, a typed field, or external data,
 * whose `length` is that same size), so the external files are never opened. Left out: initializers of
 * subgraphs (If/Loop/Scan bodies), sparse initializers and training-info graphs, which small models rarely
 * have. Undefined when the file is not a model this walk can read (malformed, or a data type it does not know):
 * the engine's figure is then simply absent.
 */
export async function initializerBytes(path: string): Promise<number | undefined> {
  let file: FileHandle | undefined;
  try {
    file = await open(path, 'r');
    const reader = new WindowReader(file, (await file.stat()).size);
    return await modelBytes(reader);
  } catch {
    // A figure for the memory budget, never a reason to fail a load: ONNX Runtime judges the file.
    return undefined;
  } finally {
    await file?.close().catch(() => undefined);
  }
}

/**
 * Bytes per element by ONNX TensorProto.DataType; 0.5 for the 4-bit types (two to a byte, rounded up per
 * tensor). STRING (8) is counted from its strings' lengths instead.
 */
const ELEMENT_BYTES: ReadonlyMap<number, number> = new Map([
  [1, 4], [2, 1], [3, 1], [4, 2], [5, 2], [6, 4], [7, 8], [9, 1], [10, 2], [11, 8], [12, 4], [13, 8],
  [14, 8], [15, 16], [16, 2], [17, 1], [18, 1], [19, 1], [20, 1], [21, 0.5], [22, 0.5], [23, 0.5], [24, 1],
]);
const STRING = 8;

const GRAPH_FIELD = 7;
const INITIALIZER_FIELD = 5;
const DIMS_FIELD = 1;
const DATA_TYPE_FIELD = 2;
const STRING_DATA_FIELD = 6;

const VARINT = 0;
const FIXED64 = 1;
const LENGTH_DELIMITED = 2;
const FIXED32 = 5;

class WalkError extends Error {}

interface Field {
  readonly number: number;
  readonly wireType: number;
  /** The varint's value (wire type 0), or the payload's length (wire type 2). */
  readonly value: number;
  /** Where the payload starts (wire type 2); where the next field starts otherwise. */
  readonly start: number;
}

async function modelBytes(r: WindowReader): Promise<number> {
  let total = 0;
  for (let pos = 0; pos < r.size;) {
    const f = await r.field(pos, r.size);
    if (f.number === GRAPH_FIELD && f.wireType === LENGTH_DELIMITED) total += await graphBytes(r, f.start, f.start + f.value);
    pos = next(f);
  }
  return total;
}

async function graphBytes(r: WindowReader, from: number, end: number): Promise<number> {
  let total = 0;
  for (let pos = from; pos < end;) {
    const f = await r.field(pos, end);
    if (f.number === INITIALIZER_FIELD && f.wireType === LENGTH_DELIMITED) total += await tensorBytes(r, f.start, f.start + f.value);
    pos = next(f);
  }
  return total;
}

async function tensorBytes(r: WindowReader, from: number, end: number): Promise<number> {
  let elements = 1;
  let dataType = 0;
  let stringBytes = 0;
  for (let pos = from; pos < end;) {
    const f = await r.field(pos, end);
    if (f.number === DIMS_FIELD && f.wireType === VARINT) elements *= f.value;
    else if (f.number === DIMS_FIELD && f.wireType === LENGTH_DELIMITED) elements *= await r.packedProduct(f.start, f.start + f.value);
    else if (f.number === DATA_TYPE_FIELD && f.wireType === VARINT) dataType = f.value;
    else if (f.number === STRING_DATA_FIELD && f.wireType === LENGTH_DELIMITED) stringBytes += f.value;
    pos = next(f);
  }
  if (dataType === STRING) return stringBytes;
  const size = ELEMENT_BYTES.get(dataType);
  if (size === undefined) throw new WalkError(`unknown data type ${dataType}`);
  const bytes = Math.ceil(elements * size);
  if (!Number.isSafeInteger(bytes)) throw new WalkError('initializer too large');
  return bytes;
}

function next(f: Field): number {
  return f.wireType === LENGTH_DELIMITED ? f.start + f.value : f.start;
}

/** Longest field header: a tag (up to 5 bytes) and a length (up to 10). */
const HEADER_MAX = 15;
const WINDOW = 16 * 1024;
/** Packed dims longer than this are not a tensor's (no tensor has hundreds of dimensions). */
const PACKED_DIMS_MAX = 1024;

/** Reads the file through one window that moves forward as the walk does: no read covers the weights. */
class WindowReader {
  private readonly buf = Buffer.allocUnsafe(WINDOW);
  private bufStart = 0;
  private bufEnd = 0;

  constructor(private readonly file: FileHandle, readonly size: number) {}

  /** The field header at `pos`, within a message ending at `end`; a field that overruns it is an error. */
  async field(pos: number, end: number): Promise<Field> {
    await this.cover(pos, Math.min(HEADER_MAX, end - pos));
    let at = pos;
    const tag = this.varint(at, end);
    at = tag.next;
    const number = Math.floor(tag.value / 8);
    const wireType = tag.value % 8;
    let value = 0;
    if (wireType === VARINT || wireType === LENGTH_DELIMITED) {
      const v = this.varint(at, end);
      value = v.value;
      at = v.next;
    } else if (wireType === FIXED64) at += 8;
    else if (wireType === FIXED32) at += 4;
    else throw new WalkError(`wire type ${wireType}`);
    if (number === 0 || at > end || (wireType === LENGTH_DELIMITED && value > end - at)) throw new WalkError('field past its message');
    return { number, wireType, value, start: at };
  }

  /** The product of packed varints in [from, end). */
  async packedProduct(from: number, end: number): Promise<number> {
    if (end - from > PACKED_DIMS_MAX) throw new WalkError('packed dims too long');
    await this.cover(from, end - from);
    let product = 1;
    for (let at = from; at < end;) {
      const v = this.varint(at, end);
      product *= v.value;
      at = v.next;
    }
    return product;
  }

  /** A varint already in the window; values past 2^53 are refused (no size in a model file is that large). */
  private varint(pos: number, end: number): { value: number; next: number } {
    let value = 0;
    let scale = 1;
    for (let at = pos; at < end && at < this.bufEnd; at++) {
      const b = this.buf[at - this.bufStart]!;
      value += (b & 0x7f) * scale;
      if (b < 0x80) {
        if (!Number.isSafeInteger(value)) throw new WalkError('varint too large');
        return { value, next: at + 1 };
      }
      scale *= 128;
      if (at - pos >= 9) break;
    }
    throw new WalkError('truncated varint');
  }

  /** Makes [pos, pos + length) readable from the window, reading from `pos` when it is not. */
  private async cover(pos: number, length: number): Promise<void> {
    if (pos >= this.bufStart && pos + length <= this.bufEnd) return;
    const { bytesRead } = await this.file.read(this.buf, 0, WINDOW, pos);
    this.bufStart = pos;
    this.bufEnd = pos + bytesRead;
  }
}
