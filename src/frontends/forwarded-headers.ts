import { invalidArg } from '../errors.js';
import { re2Pattern } from './re2-pattern.js';

/**
 * The parameter names a client may not set and the server reads itself, as Triton's L0_parameters lists them
 * (test_headers_reserved_rejected): a header forwarded under one of these names, or under a `triton_` name,
 * would pass for the server's own setting, so the request is refused (400 / INVALID_ARGUMENT).
 */
const RESERVED = new Set(['sequence_id', 'sequence_start', 'sequence_end', 'priority', 'timeout', 'headers', 'binary_data_output']);

type Forwarded = Record<string, string> | undefined;

/** Adds `name` to `out` when the pattern matches it; throws for a reserved name. */
function forwardOne(re: RegExp, name: string, value: string, out: Forwarded): Forwarded {
  if (!re.test(name)) return out;
  if (RESERVED.has(name) || name.startsWith('triton_')) {
    throw invalidArg(`header '${name}' names a parameter reserved for Triton usage and should not be forwarded as a request parameter`);
  }
  (out ??= {})[name] = value;
  return out;
}

/**
 * --grpc-header-forward-pattern: `pattern` read as RE2 after Triton's `(?i)`; the `name`-`value` pairs whose
 * names match become string request parameters. gRPC metadata names arrive lowercase (HTTP/2 requires it),
 * as in Triton. Without a pattern the function does nothing and allocates nothing. Throws NereidError
 * INVALID_ARG (for the request) when a matching name is a reserved parameter.
 */
export function headerForwarder(pattern: string | undefined): (entries: Readonly<Record<string, unknown>>) => Forwarded {
  if (!pattern) return () => undefined;
  const re = re2Pattern(pattern);
  return (entries) => {
    let out: Forwarded;
    for (const key in entries) {
      const v = entries[key];
      if (typeof v === 'string') out = forwardOne(re, key, v, out);
    }
    return out;
  };
}

/**
 * --http-header-forward-pattern, over Node's raw header list ([name, value, name, value, …], names as the
 * client spelled them). Triton's HTTP server matches each header name as sent and forwards it under that
 * name (http_server.cc ForEachHeader), so `(?-i)MY_HEADER.*` matches `MY_HEADER_1` and not `my_header_1`, and
 * `My-Header` arrives as `My-Header`; Node's `req.headers` would have lowercased both. A header sent twice is
 * forwarded with its last value. Without a pattern: nothing done, nothing allocated.
 */
export function rawHeaderForwarder(pattern: string | undefined): (raw: readonly string[]) => Forwarded {
  if (!pattern) return () => undefined;
  const re = re2Pattern(pattern);
  return (raw) => {
    let out: Forwarded;
    for (let i = 0; i + 1 < raw.length; i += 2) out = forwardOne(re, raw[i]!, raw[i + 1]!, out);
    return out;
  };
}
