import type { ErrorCode } from '../../errors.js';

/** The one table from error codes to HTTP statuses (Triton's HttpCodeFromError, plus Nereid's own codes). */
export const HTTP_STATUS: Record<ErrorCode, number> = {
  INVALID_ARG: 400,
  NOT_FOUND: 404,
  UNAVAILABLE: 503,
  RESOURCE_EXHAUSTED: 400,
  INTERNAL: 500,
  UNSUPPORTED: 501,
  ALREADY_EXISTS: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  CANCELLED: 400,
  UNKNOWN: 400,
  UNSUPPORTED_ENCODING: 415,
  INVALID_SETTING: 503,
  CONTEXT_LENGTH_EXCEEDED: 400,
};

/** Headers an error answer carries besides its status: Triton's 415 names the encodings it decodes. */
export const HTTP_ERROR_HEADERS: Partial<Record<ErrorCode, Readonly<Record<string, string>>>> = {
  UNSUPPORTED_ENCODING: { 'Accept-Encoding': 'gzip, deflate' },
};
