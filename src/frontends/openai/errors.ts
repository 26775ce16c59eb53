import type { ErrorCode } from '../../errors.js';
import { isNereidError } from '../../errors.js';

/** The server's codes and the cases only OpenAI's API answers: a method a path does not take, a body too large. */
export type OpenAiCode = ErrorCode | 'METHOD_NOT_ALLOWED' | 'PAYLOAD_TOO_LARGE';

/** The one table from error codes to HTTP statuses on the OpenAI frontend. */
export const OPENAI_STATUS: Record<OpenAiCode, number> = {
  INVALID_ARG: 400,
  NOT_FOUND: 404,
  UNAVAILABLE: 503,
  RESOURCE_EXHAUSTED: 429,
  INTERNAL: 500,
  UNSUPPORTED: 400,
  ALREADY_EXISTS: 409,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  CANCELLED: 499,
  UNKNOWN: 500,
  UNSUPPORTED_ENCODING: 415,
  INVALID_SETTING: 400,
  CONTEXT_LENGTH_EXCEEDED: 400,
  METHOD_NOT_ALLOWED: 405,
  PAYLOAD_TOO_LARGE: 413,
};

const BRAND = Symbol.for('nereid.openai-error');

/**
 * An error as OpenAI's API answers it: `{"error": {"message", "type", "param", "code"}}`. Frontend checks
 * that know which request field is at fault say so in `param`, and `apiCode` is OpenAI's `code` string; the
 * status comes from `code` through OPENAI_STATUS, as for the server's errors. Recognised by its brand, as
 * NereidError is.
 */
export class OpenAiError extends Error {
  readonly [BRAND] = true;

  constructor(
    readonly code: OpenAiCode,
    message: string,
    readonly param: string | null = null,
    readonly apiCode: string | null = null,
    /** The server limit that refused the request, as on a NereidError: counted by the frontend. */
    readonly limit: string | undefined = undefined,
    /** For a 405: the methods the path takes, sent as the Allow header. */
    readonly allow: string | undefined = undefined,
  ) {
    super(message);
  }
}

export function isOpenAiError(e: unknown): e is OpenAiError {
  return typeof e === 'object' && e !== null && (e as Record<symbol, unknown>)[BRAND] === true;
}

export const badRequest = (message: string, param: string | null = null): OpenAiError => new OpenAiError('INVALID_ARG', message, param);

export function modelNotFound(model: string): OpenAiError {
  return new OpenAiError('NOT_FOUND', `The model '${model}' does not exist`, 'model', 'model_not_found');
}

/** The status and JSON body of any thrown value; anything unknown is a 500 whose detail stays in the log. */
export function errorReply(e: unknown): { status: number; body: string } {
  if (isOpenAiError(e)) {
    const status = OPENAI_STATUS[e.code];
    return { status, body: errorBody(status, e.message, e.param, e.apiCode) };
  }
  const status = OPENAI_STATUS[isNereidError(e) ? e.code : 'INTERNAL'];
  return { status, body: errorBody(status, isNereidError(e) ? e.message : 'internal error') };
}

export function errorBody(status: number, message: string, param: string | null = null, code: string | null = null): string {
  return JSON.stringify({ error: { message, type: errorType(status), param, code } });
}

function errorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return status === 503 ? 'service_unavailable' : 'server_error';
  return 'invalid_request_error';
}
