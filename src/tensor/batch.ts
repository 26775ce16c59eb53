import { byteSize } from './datatype.js';
import { elementCount, type Tensor } from './tensor.js';

/**
 * Batching along the first dimension. Concatenation copies once into one buffer, as the backend needs one
 * contiguous input; splitting returns views of the batched output, never copies.
 */

/**
 * Where a concatenation may write instead of a fresh buffer: a buffer of at least `bytes` the caller owns and
 * will not read again until the tensor built on it has been consumed (one backend instance runs one batch at
 * a time, and its runtime copies or finishes with its inputs before the next).
 */
export interface ScratchBuffer {
  take(bytes: number): Uint8Array;
}

/** A ScratchBuffer that grows to the largest batch seen and is reused after that. */
export class GrowingScratch implements ScratchBuffer {
  private buffer = new Uint8Array(0);

  take(bytes: number): Uint8Array {
    if (this.buffer.byteLength < bytes) this.buffer = new Uint8Array(Math.max(bytes, this.buffer.byteLength * 2));
    return this.buffer.subarray(0, bytes);
  }
}

export function concatBatch(parts: readonly Tensor[], scratch?: ScratchBuffer): Tensor {
  const first = parts[0]!;
  if (parts.length === 1) return first;
  let rows = 0;
  for (const p of parts) rows += p.shape[0]!;
  const shape = [rows, ...first.shape.slice(1)];
  if (first.datatype === 'BYTES') {
    const data: Uint8Array[] = [];
    for (const p of parts) data.push(...(p.data as readonly Uint8Array[]));
    return { name: first.name, datatype: 'BYTES', shape, data };
  }
  let total = 0;
  for (const p of parts) total += (p.data as Uint8Array).byteLength;
  // A fresh buffer of a large batch costs more to allocate (zeroed, large-object space, later GC) than to fill.
  const out = scratch ? scratch.take(total) : new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p.data as Uint8Array, at);
    at += (p.data as Uint8Array).byteLength;
  }
  return { name: first.name, datatype: first.datatype, shape, data: out };
}

/**
 * Concatenates every element of the parts into one 1-D tensor (a ragged input: the requests' shapes may
 * differ, the model takes their elements one after another). One part keeps its data, only its shape changes.
 */
export function concatFlat(parts: readonly Tensor[]): Tensor {
  const first = parts[0]!;
  let elements = 0;
  for (const p of parts) elements += elementCount(p.shape);
  if (parts.length === 1) return { ...first, shape: [elements] } as Tensor;
  const flat = concatBatch(parts.map((p) => ({ ...p, shape: [elementCount(p.shape)] }) as Tensor));
  return flat;
}

/** Splits a batched tensor into pieces of `rows[i]` rows each, as views. */
export function splitBatch(t: Tensor, rows: readonly number[]): Tensor[] {
  if (rows.length === 1) return [t];
  const perRowElems = t.shape.slice(1).reduce((a, b) => a * b, 1);
  const out: Tensor[] = [];
  let row = 0;
  for (const r of rows) {
    const shape = [r, ...t.shape.slice(1)];
    if (t.datatype === 'BYTES') {
      out.push({ name: t.name, datatype: 'BYTES', shape, data: t.data.slice(row * perRowElems, (row + r) * perRowElems) });
    } else {
      const rowBytes = perRowElems * byteSize(t.datatype);
      out.push({ name: t.name, datatype: t.datatype, shape, data: t.data.subarray(row * rowBytes, (row + r) * rowBytes) });
    }
    row += r;
  }
  return out;
}
