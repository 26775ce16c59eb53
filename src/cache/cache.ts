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
