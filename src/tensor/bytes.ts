import { invalidArg } from '../errors.js';

/**
 * BYTES tensors on the wire (binary extension, raw gRPC contents, shared memory): each element is a 4-byte
 * little-endian length followed by that many bytes, with no padding.
 */

export function serializeBytes(elements: readonly Uint8Array[]): Buffer {
  let total = 0;
  for (const e of elements) total += 4 + e.byteLength;
  const out = Buffer.allocUnsafe(total);
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
  const out: Uint8Array[] = new Array(expected);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const input = model === undefined ? `'${tensorName}'` : `'${tensorName}' for model '${model}'`;
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

const encoder = new TextEncoder();
export function utf8(s: string): Uint8Array {
  return encoder.encode(s);
}
