/**
 * Triton's gRPC test hooks: environment variables its QA suites (L0_decoupled, L0_grpc_state_cleanup,
 * L0_request_cancellation) set to widen the windows between the frontend's steps, read once when the frontend
 * starts. Unset (0), the request path pays one comparison per request.
 *
 * TRITONSERVER_DELAY_GRPC_RESPONSE=<ms>: each response written on a ModelStreamInfer stream waits that long
 *   first, so that several responses are ready to be written at once.
 * TRITONSERVER_DELAY_GRPC_PROCESS=<ms>: a ModelInfer call waits that long before its request is started; a
 *   call cancelled meanwhile never reaches the model.
 */
export interface GrpcTestHooks {
  readonly responseDelayMs: number;
  readonly processDelayMs: number;
}

export function grpcTestHooks(env: NodeJS.ProcessEnv = process.env): GrpcTestHooks {
  return { responseDelayMs: envMs(env['TRITONSERVER_DELAY_GRPC_RESPONSE']), processDelayMs: envMs(env['TRITONSERVER_DELAY_GRPC_PROCESS']) };
}

/** Milliseconds read as Triton reads them (C's atoi): leading digits; anything else, or below 1, is 0. */
function envMs(value: string | undefined): number {
  const n = value === undefined ? 0 : parseInt(value, 10);
  return n > 0 ? n : 0;
}
