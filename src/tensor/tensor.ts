import type { DataType } from './datatype.js';

/**
 * A named tensor. Fixed-size types hold their little-endian bytes as a view over whatever buffer carried them
 * (a request body, a shared-memory region, an ONNX Runtime output): never copied on the way through.
 * BYTES tensors hold one Uint8Array per element.
 */
export type Tensor = FixedTensor | BytesTensor;

export interface FixedTensor {
  readonly name: string;
  readonly datatype: Exclude<DataType, 'BYTES'>;
  readonly shape: readonly number[];
  readonly data: Uint8Array;
}

export interface BytesTensor {
  readonly name: string;
  readonly datatype: 'BYTES';
  readonly shape: readonly number[];
  readonly data: readonly Uint8Array[];
}

export function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (let i = 0; i < shape.length; i++) n *= shape[i]!;
  return n;
}

export function formatShape(shape: readonly number[]): string {
  return `[${shape.join(',')}]`;
}

/** Bytes the tensor's data occupies in the binary tensor extension's layout (BYTES with 4-byte length prefixes). */
export function wireByteLength(t: Tensor): number {
  if (t.datatype !== 'BYTES') return t.data.byteLength;
  let n = 0;
  for (const e of t.data) n += 4 + e.byteLength;
  return n;
}
