import { createHash } from 'node:crypto';
import type { InferenceRequest } from '../inference/index.js';
import type { Tensor } from '../tensor/tensor.js';
import type { ResponseCache } from './cache.js';

/**
 * The server's response cache, Triton's `local` cache: one byte budget shared by every model with
 * `response_cache { enable: true }`, least recently used entries evicted first. Keys hash the model name and
 * version, every input's name, datatype, shape and bytes, and the outputs asked for (a request for a subset of
 * the outputs must not get another request's full answer). Entries hold their own copies of the output bytes,
 * so a cached answer never aliases a buffer a backend may reuse.
 */
export class LocalResponseCache implements ResponseCache {
  private readonly entries = new Map<string, { outputs: readonly Tensor[]; bytes: number }>();
  private used = 0;

  constructor(readonly budget: number) {}

  /** The cache key of a request: shared by every cache (see the class comment). */
  static key(model: string, version: number, request: InferenceRequest, outputs: readonly string[]): string {
    const h = createHash('sha256');
    h.update(`${model}\u0000${version}\u0000${outputs.join('\u0000')}\u0000`);
    for (const o of request.outputs ?? []) if (o.classCount) h.update(`${o.name}:${o.classCount}\u0000`);
    const inputs = [...request.inputs].sort((a, b) => (a.name < b.name ? -1 : 1));
    for (const t of inputs) {
      h.update(`${t.name}\u0000${t.datatype}\u0000${t.shape.join(',')}\u0000`);
      if (t.datatype === 'BYTES') for (const e of t.data) h.update(`${e.byteLength}:`).update(e);
      else h.update(t.data);
    }
    return h.digest('base64');
  }

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
