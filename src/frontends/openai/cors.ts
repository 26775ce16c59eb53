import type { IncomingMessage, ServerResponse } from 'node:http';

/** The origins --openai-cors-origin allows, fixed at start; `any` when one of them is `*`. */
export interface CorsPolicy {
  readonly any: boolean;
  readonly origins: ReadonlySet<string>;
}

/** What a preflight may ask for: every method the frontend serves. */
const METHODS = 'GET, POST, HEAD, OPTIONS';
/** The headers an OpenAI client sends, allowed when a preflight names none. */
const HEADERS = 'authorization, content-type';
/** How long a browser may reuse a preflight's answer, in seconds (the Fetch standard caps it lower anyway). */
const MAX_AGE_SECS = '600';

/** The policy for these origins; null for none, so that a frontend without CORS never looks at Origin. */
export function corsPolicy(origins: readonly string[] | undefined): CorsPolicy | null {
  if (origins === undefined || origins.length === 0) return null;
  return { any: origins.includes('*'), origins: new Set(origins) };
}

/**
 * Sets the CORS headers of an allowed origin on `res` (they ride on every answer, errors and streams too), and
 * answers a preflight (OPTIONS with Access-Control-Request-Method) whole: 204 for an allowed origin, 400 for
 * another. Returns true when the request has been answered. The origin is echoed, never `*`, so that a browser
 * may send credentials (an Authorization header) as Triton's OpenAI frontend allows.
 */
export function corsAnswered(policy: CorsPolicy, req: IncomingMessage, res: ServerResponse): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return false;
  // The answer depends on the origin, allowed or not: a shared cache must not hand one origin's to another.
  res.setHeader('Vary', 'Origin');
  const allowed = policy.any || policy.origins.has(origin);
  if (allowed) {
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Access-Control-Allow-Credentials', 'true');
  }
  const asked = req.headers['access-control-request-method'];
  if (req.method !== 'OPTIONS' || asked === undefined) return false;
  if (!allowed) {
    res.writeHead(400, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': 22 });
    res.end('Disallowed CORS origin');
    return true;
  }
  res.writeHead(204, {
    'Access-Control-Allow-Methods': METHODS,
    'Access-Control-Allow-Headers': req.headers['access-control-request-headers'] ?? HEADERS,
    'Access-Control-Max-Age': MAX_AGE_SECS,
  });
  res.end();
  return true;
}
