import { createHash } from 'node:crypto';
import type { InferenceRequest } from '../inference/index.js';
import type { Tensor } from '../tensor/tensor.js';

/**
 * The server's response cache, as the model layer sees it. A local cache answers at once; a remote one (Redis)
 * with a promise. A cache never fails a request: when it cannot answer, that is a miss.
 */
export interface ResponseCache {
  get(key: string): readonly Tensor[] | undefined | Promise<readonly Tensor[] | undefined>;
  insert(key: string, outputs: readonly Tensor[]): void | Promise<void>;
  close?(): Promise<void>;
}

/**
 * The key every cache stores a response under: a hash of the model name and version, every input's name,
 * datatype, shape and bytes, and the outputs asked for (a request for a subset of the outputs, or for
 * classifications, must not get another request's answer).
 */
export function responseCacheKey(model: string, version: number, request: InferenceRequest, outputs: readonly string[]): string {
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
