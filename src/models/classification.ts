import { invalidArg, limitExceeded } from '../errors.js';
import type { Tensor } from '../tensor/tensor.js';
import { typedView } from '../tensor/view.js';
import type { OutputInfo } from './context.js';

const encoder = new TextEncoder();

/**
 * Triton refuses to rank more than this many elements per batch item (qa/L0_parameters class_count_test.py,
 * test_classification_output_tensor_too_large): the sort and the strings it builds grow with the output.
 */
export const MAX_CLASSIFICATION_ELEMENTS = 1_000_000;

/**
 * Triton's classification extension: the top `count` entries of each batch item as BYTES "value:index[:label]",
 * highest first. Shape [batch, min(count, item elements)] for batching models, [min(count, elements)] otherwise.
 */
export function classify(t: Tensor, count: number, info: OutputInfo, batched: boolean): Tensor {
  if (t.datatype === 'BYTES') throw invalidArg(`class result not available for output due to unsupported type '${t.datatype}'`);
  const raw = typedView(t.datatype, t.data);
  // FP16 and BF16 arrive as raw 16-bit patterns; compare and print their values.
  const values = t.datatype === 'FP16' ? Float32Array.from(raw as Uint16Array, halfToFloat)
    : t.datatype === 'BF16' ? new Float32Array(Uint32Array.from(raw as Uint16Array, (b) => b << 16).buffer) : raw;
  const isFloat = t.datatype === 'FP16' || t.datatype === 'FP32' || t.datatype === 'FP64' || t.datatype === 'BF16';
  const items = batched ? Math.max(t.shape[0] ?? 1, 1) : 1;
  const per = items === 0 ? 0 : values.length / items;
  if (per > MAX_CLASSIFICATION_ELEMENTS) {
    throw limitExceeded('INVALID_ARG', 'classification-elements',
      `classification output tensor too large: ${per} elements to rank per batch item, at most ${MAX_CLASSIFICATION_ELEMENTS}`);
  }
  const k = Math.min(count, per);
  const out: Uint8Array[] = [];
  for (let b = 0; b < items; b++) {
    const idx = Array.from({ length: per }, (_, i) => i);
    const val = (i: number): number => Number(values[b * per + i]);
    idx.sort((x, y) => val(y) - val(x) || x - y);
    for (let j = 0; j < k; j++) {
      const i = idx[j]!;
      const label = info.labels?.[i];
      const v = isFloat ? val(i).toFixed(6) : String(val(i));
      out.push(encoder.encode(label !== undefined ? `${v}:${i}:${label}` : `${v}:${i}`));
    }
  }
  return { name: t.name, datatype: 'BYTES', shape: batched ? [items, k] : [k], data: out };
}

/** Triton prints floating-point scores with std::to_string (six decimals) and integers as integers. */
function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}
