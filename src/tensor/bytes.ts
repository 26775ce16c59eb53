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

/** Splits serialized BYTES into element views over `buf` (no copies). Checks that the elements fill it exactly. */
export function deserializeBytes(buf: Uint8Array, expected: number, tensorName: string): Uint8Array[] {
  const out: Uint8Array[] = new Array(expected);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let at = 0;
  for (let i = 0; i < expected; i++) {
    if (at + 4 > buf.byteLength) {
      throw invalidArg(`unexpected number of string elements for input '${tensorName}': expecting ${expected}, got ${i}`);
    }
    const len = view.getUint32(at, true);
    if (at + 4 + len > buf.byteLength) {
      throw invalidArg(`element ${i} of input '${tensorName}' claims ${len} bytes but only ${buf.byteLength - at - 4} remain`);
    }
    out[i] = buf.subarray(at + 4, at + 4 + len);
    at += 4 + len;
  }
  if (at !== buf.byteLength) {
    throw invalidArg(`unexpected number of string elements for input '${tensorName}': ${buf.byteLength - at} bytes remain after ${expected} elements`);
  }
  return out;
}

const encoder = new TextEncoder();
export function utf8(s: string): Uint8Array {
  return encoder.encode(s);
}
