import type { Tensor } from '../../tensor/tensor.js';
import { typedView } from '../../tensor/view.js';

/**
 * A tensor's data as Triton's TENSORS level writes it: elements joined by ',' (BOOL as 1 / 0, floats with six
 * significant digits as C++ streams print them), BYTES elements each in escaped quotes, FP16 and BF16 empty.
 */
export function tensorDataText(t: Tensor): string {
  if (t.datatype === 'BYTES') {
    const out: string[] = [];
    for (const b of t.data) out.push(`"${Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8')}"`);
    return out.join(',');
  }
  if (t.datatype === 'FP16' || t.datatype === 'BF16') return '';
  const d = typedView(t.datatype, t.data) as unknown;
  switch (t.datatype) {
    case 'BOOL': {
      const a = d as ArrayLike<number | boolean>;
      const out: string[] = [];
      for (let i = 0; i < a.length; i++) out.push(a[i] ? '1' : '0');
      return out.join(',');
    }
    case 'FP32': case 'FP64': {
      const a = d as ArrayLike<number>;
      const out: string[] = [];
      for (let i = 0; i < a.length; i++) out.push(sixDigits(a[i]!));
      return out.join(',');
    }
    default: {
      const a = d as ArrayLike<number | bigint>;
      const out: string[] = [];
      for (let i = 0; i < a.length; i++) out.push(String(a[i]));
      return out.join(',');
    }
  }
}

function sixDigits(x: number): string {
  if (Number.isInteger(x) && Math.abs(x) < 1e6) return String(x);
  if (!Number.isFinite(x)) return Number.isNaN(x) ? 'nan' : x > 0 ? 'inf' : '-inf';
  return String(Number(x.toPrecision(6)));
}
