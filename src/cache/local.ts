import type { Tensor } from '../tensor/tensor.js';
import type { ResponseCache } from './cache.js';

/**
 * The server's response cache, Triton's `local` cache: one byte budget shared by every model with
 * `response_cache { enable: true }`, least recently used entries evicted first. Entries hold their own copies of the output bytes,
 * so a cached answer never aliases a buffer a backend may reuse.
 */
export class LocalResponseCache implements ResponseCache {
  private readonly entries = new Map<string, { outputs: readonly Tensor[]; bytes: number }>();
  private used = 0;

  constructor(readonly budget: number) {}

  get(key: string): readonly Tensor[] | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    // Most recently used last: Map keeps insertion order.
    this.entries.delete(key);
    this.entries.set(key, e);
    return e.outputs;
  }

  insert(key: string, outputs: readonly Tensor[]): void {
    if (this.entries.has(key)) return;
    const copies = outputs.map(copyTensor);
    const bytes = copies.reduce((n, t) => n + tensorBytes(t), key.length + 64);
    if (bytes > this.budget) return; // larger than the whole cache: never stored
    for (const [k, e] of this.entries) {
      if (this.used + bytes <= this.budget) break;
      this.entries.delete(k);
      this.used -= e.bytes;
    }
    this.entries.set(key, { outputs: copies, bytes });
    this.used += bytes;
  }

  get size(): number {
    return this.entries.size;
  }

  get bytesUsed(): number {
    return this.used;
  }
}

function tensorBytes(t: Tensor): number {
  return t.datatype === 'BYTES' ? t.data.reduce((n, e) => n + e.byteLength + 4, 0) : t.data.byteLength;
}

function copyTensor(t: Tensor): Tensor {
  return t.datatype === 'BYTES'
    ? { ...t, shape: [...t.shape], data: t.data.map((e) => e.slice()) }
    : ({ ...t, shape: [...t.shape], data: t.data.slice() } as Tensor);
}
