import type { Tensor } from '../tensor/tensor.js';

/**
 * How an ensemble passes a tensor between a model that batches and one that does not, as Triton's ensemble
 * scheduler does (core's EnsembleContext::ReshapeTensorDims). Each ensemble tensor remembers the batch size of
 * the request that produced it (0: a model without batching produced it); a reader whose batching differs gets
 * the batch dimension added or taken away, and everything else passes as it is:
 * - a batching reader of a tensor made without batching: when the tensor's shape is the reader's dims, it is
 *   one batch item and gets a batch dimension of 1 in front; otherwise it is taken to hold the batch already;
 * - a non-batching reader of a batch of one: when the shape is not already the reader's dims, the batch
 *   dimension is dropped.
 * The same rule maps the last tensors to the ensemble's own outputs.
 */
export function fitBatch(t: Tensor, dims: readonly number[], batching: boolean, batchSize: number): Tensor {
  if (batching === (batchSize !== 0)) return t;
  if (batching) return matchesDims(dims, t.shape) ? withShape(t, [1, ...t.shape]) : t;
  return !matchesDims(dims, t.shape) && batchSize === 1 ? withShape(t, t.shape.slice(1)) : t;
}

/** The batch size a composing model's request has, as Triton's core derives it: its first input's first dimension. */
export function requestBatchSize(batching: boolean, inputs: readonly Tensor[]): number {
  return batching && inputs.length > 0 ? (inputs[0]!.shape[0] ?? 0) : 0;
}

/** Triton's CompareDimsWithWildcard: same rank, and each dimension equal or -1 on either side. */
function matchesDims(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === -1 || b[i] === -1 || d === b[i]);
}

function withShape(t: Tensor, shape: number[]): Tensor {
  return { ...t, shape } as Tensor;
}
