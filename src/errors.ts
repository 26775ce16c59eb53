/**
 * Errors are values with a code. Each frontend maps codes to its own status in one table; nothing else in the
 * server chooses a status. Recognise a NereidError by its brand, never with `instanceof`: two copies of the
 * package loaded in one process must still understand each other's errors.
 */

/**
 * Triton's codes, then Nereid's own where a protocol answers a case in a way the Triton code alone does not
 * tell: each is named for the case, so that every frontend's table decides its status without reading messages.
 */
export type ErrorCode =
  | 'INVALID_ARG'
  | 'NOT_FOUND'
  | 'UNAVAILABLE'
  | 'RESOURCE_EXHAUSTED'
  | 'INTERNAL'
  | 'UNSUPPORTED'
  | 'ALREADY_EXISTS'
  | 'UNAUTHENTICATED'
  /** A client known by its API key, whose key lacks the scope the request needs (HTTP 403, gRPC PERMISSION_DENIED). */
  | 'PERMISSION_DENIED'
  | 'CANCELLED'
  | 'UNKNOWN'
  /** A request body in a Content-Encoding the server cannot decode (HTTP: 415 with the encodings it can). */
  | 'UNSUPPORTED_ENCODING'
  /** A run-time setting given a value the server does not know, such as a log format (Triton's HTTP: 503, gRPC: INVALID_ARGUMENT). */
  | 'INVALID_SETTING'
  /** A text model's prompt (with the tokens asked for) past its context: a bad request that OpenAI's API names apart. */
  | 'CONTEXT_LENGTH_EXCEEDED';

export const ERROR_CODES: readonly ErrorCode[] = [
  'INVALID_ARG', 'NOT_FOUND', 'UNAVAILABLE', 'RESOURCE_EXHAUSTED', 'INTERNAL',
  'UNSUPPORTED', 'ALREADY_EXISTS', 'UNAUTHENTICATED', 'PERMISSION_DENIED', 'CANCELLED', 'UNKNOWN',
  'UNSUPPORTED_ENCODING', 'INVALID_SETTING', 'CONTEXT_LENGTH_EXCEEDED',
];

const BRAND = Symbol.for('nereid.error');

export class NereidError extends Error {
  readonly code: ErrorCode;
  /**
   * The name of the server limit that refused the request (a flag's name without dashes, such as
   * `http-max-input-size`), undefined for every other error. Frontends count such refusals (metric
   * `nereid_limit_refusal_count`) and log them at most once per interval.
   */
  readonly limit: string | undefined;
  /** When the client may try again, in seconds (HTTP's Retry-After), for refusals that pass; else undefined. */
  readonly retryAfterSecs: number | undefined;
  readonly [BRAND] = true;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown; limit?: string; retryAfterSecs?: number }) {
    super(message, options);
    this.code = code;
    this.limit = options?.limit;
    this.retryAfterSecs = options?.retryAfterSecs;
    this.name = 'NereidError';
  }
}

export function isNereidError(e: unknown): e is NereidError {
  return typeof e === 'object' && e !== null && (e as Record<symbol, unknown>)[BRAND] === true;
}

/** Any thrown value as a NereidError; foreign errors become INTERNAL and keep their message. */
export function toNereidError(e: unknown): NereidError {
  if (isNereidError(e)) return e;
  const message = e instanceof Error ? e.message : String(e);
  return new NereidError('INTERNAL', message, { cause: e });
}

export const invalidArg = (message: string): NereidError => new NereidError('INVALID_ARG', message);
export const notFound = (message: string): NereidError => new NereidError('NOT_FOUND', message);
export const unavailable = (message: string): NereidError => new NereidError('UNAVAILABLE', message);
export const unsupported = (message: string): NereidError => new NereidError('UNSUPPORTED', message);
export const internal = (message: string): NereidError => new NereidError('INTERNAL', message);

/** A refusal by one of the server's limits: counted and logged by the frontend that answers it. */
export const limitExceeded = (code: ErrorCode, limit: string, message: string): NereidError => new NereidError(code, message, { limit });
