import type { ModelConfig } from '../config/types.js';
import type { Tensor } from '../tensor/tensor.js';

/**
 * Which requests may share a batch, decided once per model as Triton's core does (its
 * enforce_equal_shape_tensors): an input with a variable dim must have the same shape past the batch dimension
 * in every request of a batch unless it allows ragged batches; with optional inputs, the requests of a batch
 * must carry the same inputs. Undefined when any requests may share a batch.
 */
export interface BatchShapeRule {
  /** Inputs whose shapes must be equal within a batch (undefined: none). */
  readonly equal: ReadonlySet<string> | undefined;
  readonly optionalInputs: boolean;
}

export function batchShapeRule(config: ModelConfig): BatchShapeRule | undefined {
  const equal = config.input.filter((i) => !i.allow_ragged_batch && i.dims.includes(-1)).map((i) => i.name);
  const optionalInputs = config.input.some((i) => i.optional);
  if (equal.length === 0 && !optionalInputs) return undefined;
  return { equal: equal.length > 0 ? new Set(equal) : undefined, optionalInputs };
}

/** Whether a request with inputs `b` may join a batch whose first request has inputs `a`. */
export function sameBatchShapes(rule: BatchShapeRule, a: readonly Tensor[], b: readonly Tensor[]): boolean {
  if (rule.optionalInputs && a.length !== b.length) return false;
  for (const tb of b) {
    const check = rule.equal?.has(tb.name) ?? false;
    if (!check && !rule.optionalInputs) continue;
    // A loop, not find(): this runs for each request a batch is formed over, and allocates nothing.
    let ta;
    for (const t of a) {
      if (t.name === tb.name) {
        ta = t;
        break;
      }
    }
    if (!ta) {
      if (rule.optionalInputs) return false;
      continue;
    }
    if (check) {
      if (ta.shape.length !== tb.shape.length) return false;
      for (let i = 1; i < ta.shape.length; i++) if (ta.shape[i] !== tb.shape[i]) return false;
    }
  }
  return true;
}
