import { isNereidError, type ErrorCode } from '../../errors.js';
import type { Logger } from '../../observability/logger.js';
import type { InferenceServer } from '../../server/inference-server.js';
import { Status, type CallStatus, type StatusCode } from './codes.js';

/** What answering an error needs: the log for bugs, and the server that counts refusals by its limits. */
export interface ErrorContext {
  readonly logger: Logger;
  readonly server: InferenceServer;
}

/** The one table from error codes to gRPC status codes (Triton's GrpcStatusUtil::CodeToStatus, plus Nereid's own codes). */
export const GRPC_STATUS: Record<ErrorCode, StatusCode> = {
  INVALID_ARG: Status.INVALID_ARGUMENT,
  NOT_FOUND: Status.NOT_FOUND,
  UNAVAILABLE: Status.UNAVAILABLE,
  RESOURCE_EXHAUSTED: Status.RESOURCE_EXHAUSTED,
  INTERNAL: Status.INTERNAL,
  UNSUPPORTED: Status.UNIMPLEMENTED,
  ALREADY_EXISTS: Status.ALREADY_EXISTS,
  UNAUTHENTICATED: Status.UNAUTHENTICATED,
  PERMISSION_DENIED: Status.PERMISSION_DENIED,
  CANCELLED: Status.CANCELLED,
  UNKNOWN: Status.UNKNOWN,
  UNSUPPORTED_ENCODING: Status.UNIMPLEMENTED,
  INVALID_SETTING: Status.INVALID_ARGUMENT,
  CONTEXT_LENGTH_EXCEEDED: Status.INVALID_ARGUMENT,
};

/**
 * Any thrown value as the status a call ends with: a NereidError by its code, with its message as the status
 * details; anything else is a bug, logged in full and answered INTERNAL with a generic message.
 */
export function toServiceError(e: unknown, ctx: ErrorContext): CallStatus {
  if (isNereidError(e)) {
    if (e.limit !== undefined) ctx.server.reportError(e);
    return { code: GRPC_STATUS[e.code], details: e.message, retryAfterSecs: e.retryAfterSecs };
  }
  ctx.logger.error(`unexpected error in the gRPC frontend: ${(e as Error)?.stack ?? String(e)}`);
  return { code: Status.INTERNAL, details: 'internal error' };
}
