import type { Metadata } from './call.js';
import type { Parameters } from '../../inference/index.js';
import { headerForwarder as forwarder } from '../forwarded-headers.js';

/**
 * --grpc-header-forward-pattern: the call's metadata whose keys match become string request parameters, as
 * Triton forwards them (binary `-bin` metadata is left out). Throws NereidError INVALID_ARG for a matching key
 * that names a reserved parameter.
 */
export function headerForwarder(pattern: string | undefined): (m: Metadata) => Parameters | undefined {
  if (!pattern) return () => undefined;
  const forward = forwarder(pattern);
  return (m) => forward(m.getMap());
}
