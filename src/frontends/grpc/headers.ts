import type { Metadata } from '@grpc/grpc-js';
import type { Parameters } from '../../inference/index.js';

/**
 * --grpc-header-forward-pattern: the call's metadata whose keys match (any case) become string request
 * parameters, as Triton forwards them. Without a pattern the function does nothing and allocates nothing.
 */
export function headerForwarder(pattern: string | undefined): (m: Metadata) => Parameters | undefined {
  if (!pattern) return () => undefined;
  const re = new RegExp(pattern, 'i');
  return (m) => {
    let out: Parameters | undefined;
    const map = m.getMap();
    for (const key in map) {
      const v = map[key];
      if (typeof v === 'string' && re.test(key)) (out ??= {})[key] = v;
    }
    return out;
  };
}
