/** gRPC status codes (grpc/doc/statuscodes.md), as sent in the grpc-status trailer. */
export const Status = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

export type StatusCode = (typeof Status)[keyof typeof Status];

/** How a call ends: its code and the text of grpc-message. */
export interface CallStatus {
  readonly code: StatusCode;
  readonly details: string;
  /** Seconds after which a refused call may be tried again, sent as the trailer retry-after (HTTP's header). */
  readonly retryAfterSecs?: number | undefined;
}
