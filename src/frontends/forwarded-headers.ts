import { invalidArg } from '../errors.js';
import { re2Pattern } from './re2-pattern.js';

/**
 * The parameter names a client may not set and the server reads itself, as Triton's L0_parameters lists them
 * (test_headers_reserved_rejected): a header forwarded under one of these names, or under a `triton_` name,
 * would pass for the server's own setting, so the request is refused (400 / INVALID_ARGUMENT).
 */
const RESERVED = new Set(['sequence_id', 'sequence_start', 'sequence_end', 'priority', 'timeout', 'headers', 'binary_data_output']);

/**
 * The header forwarding of --http-header-forward-pattern and --grpc-header-forward-pattern: `pattern` read as
 * RE2 after Triton's `(?i)`, `name`-`value` pairs whose names match it become string request parameters.
 * Without a pattern the function does nothing and allocates nothing. Throws NereidError INVALID_ARG (for the
 * request) when a matching name is a reserved parameter.
 */
export function headerForwarder(pattern: string | undefined): (entries: Readonly<Record<string, unknown>>) => Record<string, string> | undefined {
  if (!pattern) return () => undefined;
  const re = re2Pattern(pattern);
  return (entries) => {
    let out: Record<string, string> | undefined;
    for (const key in entries) {
      const v = entries[key];
      if (typeof v !== 'string' || !re.test(key)) continue;
      if (RESERVED.has(key) || key.startsWith('triton_')) {
        throw invalidArg(`header '${key}' names a parameter reserved for Triton usage and should not be forwarded as a request parameter`);
      }
      (out ??= {})[key] = v;
    }
    return out;
  };
}
