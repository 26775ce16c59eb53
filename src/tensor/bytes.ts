import { invalidArg } from '../errors.js';

/**
 * BYTES tensors on the wire (binary extension, raw gRPC contents, shared memory): each element is a 4-byte
 * little-endian length followed by that many bytes, with no padding.
 */

/**
 * `ownMemory` puts the result in an ArrayBuffer of its own rather than possibly Node's shared Buffer pool, for
 * data that is transferred to another thread.
 */
export function serializeBytes(elements: readonly Uint8Array[], ownMemory = false): Buffer {
  let total = 0;
  for (const e of elements) total += 4 + e.byteLength;
  const out = ownMemory ? Buffer.allocUnsafeSlow(total) : Buffer.allocUnsafe(total);
  let at = 0;
  for (const e of elements) {
    out.writeUInt32LE(e.byteLength, at);
    out.set(e, at + 4);
    at += 4 + e.byteLength;
  }
  return out;
}

/**
 * Splits serialized BYTES into element views over `buf` (no copies). Checks that exactly `expected` elements
 * fill it, answering as Triton's core does: too few complete elements (the data ends early, or an element's
 * length runs past the end) is "expected N string elements ... got K"; data left after the last element is
 * "unexpected number of string elements N+1 ..., expecting N". `model` names the model in the message.
 */
export function deserializeBytes(buf: Uint8Array, expected: number, tensorName: string, model?: string): Uint8Array[] {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const input = model === undefined ? `'${tensorName}'` : `'${tensorName}' for model '${model}'`;
  // Every element takes at least its 4-byte length. A count the bytes cannot hold (a shape the client declared,
  // with little or no data) is refused before anything is allocated for it: the message needs only the number
  // of complete elements there are, which takes at most byteLength / 4 steps to count.
  if (expected * 4 > buf.byteLength) {
    throw invalidArg(`expected ${expected} string elements for inference input ${input}, got ${completeElements(view)}`);
  }
  const out: Uint8Array[] = new Array(expected);
  let at = 0;
  for (let i = 0; i < expected; i++) {
    const len = at + 4 <= buf.byteLength ? view.getUint32(at, true) : -1;
    if (len < 0 || at + 4 + len > buf.byteLength) {
      throw invalidArg(`expected ${expected} string elements for inference input ${input}, got ${i}`);
    }
    out[i] = buf.subarray(at + 4, at + 4 + len);
    at += 4 + len;
  }
  if (at !== buf.byteLength) {
    throw invalidArg(`unexpected number of string elements ${expected + 1} for inference input ${input}, expecting ${expected}`);
  }
  return out;
}

/** How many whole elements (length and bytes) the serialized data holds from its start. */
function completeElements(view: DataView): number {
  let n = 0;
  let at = 0;
  while (at + 4 <= view.byteLength) {
    const end = at + 4 + view.getUint32(at, true);
    if (end > view.byteLength) break;
    n++;
    at = end;
  }
  return n;
}

const encoder = new TextEncoder();
export function utf8(s: string): Uint8Array {
  return encoder.encode(s);
}
