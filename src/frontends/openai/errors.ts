import type { ErrorCode } from '../../errors.js';
import { isNereidError } from '../../errors.js';

/** The one table from error codes to HTTP statuses on the OpenAI frontend. */
export const OPENAI_STATUS: Record<ErrorCode, number> = {
  INVALID_ARG: 400,
  NOT_FOUND: 404,
  UNAVAILABLE: 503,
  RESOURCE_EXHAUSTED: 429,
  INTERNAL: 500,
  UNSUPPORTED: 400,
  ALREADY_EXISTS: 409,
  UNAUTHENTICATED: 401,
  CANCELLED: 499,
  UNKNOWN: 500,
};

/**
 * An error as OpenAI's API answers it: `{"error": {"message", "type", "param", "code"}}`. Frontend checks
 * that know which request field is at fault say so in `param`; errors from the server carry its code.
 */
export class OpenAiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
    /** The server limit that refused the request, as on a NereidError: counted by the frontend. */
    readonly limit: string | undefined = undefined,
  ) {
    super(message);
  }
}

export const badRequest = (message: string, param: string | null = null): OpenAiError => new OpenAiError(400, message, param);

export function modelNotFound(model: string): OpenAiError {
  return new OpenAiError(404, `The model '${model}' does not exist`, 'model', 'model_not_found');
}

/** The status and JSON body of any thrown value; anything unknown is a 500 whose detail stays in the log. */
export function errorReply(e: unknown): { status: number; body: string } {
  let status = 500;
  let message = 'internal error';
  let param: string | null = null;
  let code: string | null = null;
  if (e instanceof OpenAiError) {
    ({ status, param, code } = e);
    message = e.message;
  } else if (isNereidError(e)) {
    status = OPENAI_STATUS[e.code];
    message = e.message;
  }
  return { status, body: errorBody(status, message, param, code) };
}

export function errorBody(status: number, message: string, param: string | null = null, code: string | null = null): string {
  return JSON.stringify({ error: { message, type: errorType(status), param, code } });
}

function errorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return status === 503 ? 'service_unavailable' : 'server_error';
  return 'invalid_request_error';
}
