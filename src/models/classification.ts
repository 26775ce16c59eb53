import { invalidArg } from '../errors.js';
import type { Tensor } from '../tensor/tensor.js';
import { typedView } from '../tensor/view.js';
import type { OutputInfo } from './context.js';

const encoder = new TextEncoder();

/**
 * Triton's classification extension: the top `count` entries of each batch item as BYTES "value:index[:label]",
 * highest first. Shape [batch, min(count, item elements)] for batching models, [min(count, elements)] otherwise.
 */
export function classify(t: Tensor, count: number, info: OutputInfo, batched: boolean): Tensor {
  if (t.datatype === 'BYTES') throw invalidArg(`class result not available for output due to unsupported type '${t.datatype}'`);
  const values = typedView(t.datatype, t.data);
  const items = batched ? Math.max(t.shape[0] ?? 1, 1) : 1;
  const per = items === 0 ? 0 : values.length / items;
  const k = Math.min(count, per);
  const out: Uint8Array[] = [];
  for (let b = 0; b < items; b++) {
    const idx = Array.from({ length: per }, (_, i) => i);
    const val = (i: number): number => Number(values[b * per + i]);
    idx.sort((x, y) => val(y) - val(x) || x - y);
    for (let j = 0; j < k; j++) {
      const i = idx[j]!;
      const label = info.labels?.[i];
      out.push(encoder.encode(label !== undefined ? `${formatValue(val(i))}:${i}:${label}` : `${formatValue(val(i))}:${i}`));
    }
  }
  return { name: t.name, datatype: 'BYTES', shape: batched ? [items, k] : [k], data: out };
}

/** Triton prints the value with std::to_string for floats (six decimals) and as an integer otherwise. */
function formatValue(v: number): string {
  return Number.isInteger(v) ? String(v) : v.toFixed(6);
}
