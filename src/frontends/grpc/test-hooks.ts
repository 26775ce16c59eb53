import type { Logger } from '../../observability/logger.js';

/**
 * Triton's gRPC test hooks: environment variables its QA suites (L0_decoupled, L0_grpc_state_cleanup,
 * L0_request_cancellation) set to widen the windows between the frontend's steps, read once when the frontend
 * starts. Unset (0), the request path pays one comparison per request, or nothing.
 *
 * TRITONSERVER_DELAY_GRPC_RESPONSE=<ms>: each response written on a ModelStreamInfer stream waits that long
 *   first, so that several responses are ready to be written at once.
 * TRITONSERVER_DELAY_GRPC_PROCESS=<ms>: a ModelInfer call waits that long before its request is started; a
 *   call cancelled meanwhile never reaches the model.
 * TRITONSERVER_DELAY_GRPC_COMPLETE=<ms>: once a request on a ModelStreamInfer stream has reported its last
 *   response (or final flag), the stream learns that the request is over only that much later, so the stream's
 *   end waits for it (Triton delays its response-complete callback there).
 * TRITONSERVER_DELAY_GRPC_NOTIFICATION=<ms>: a client's cancellation (of a call or a stream) is noticed that
 *   much later, so a request can finish between the client's cancel and the server acting on it.
 * TRITONSERVER_DELAY_GRPC_ENQUEUE=<ms>: once noticed, the cancellation reaches the call's requests that much
 *   later still (Triton delays putting the cancelled call back on its queue).
 * TRITONSERVER_DELAY_GRPC_PROCESS_ENTRY=<ms>: a ModelInfer call is taken up that much later, before the process
 *   delay above.
 * TRITONSERVER_DELAY_RESPONSE_COMPLETE_EXEC=<ms>, TRITONSERVER_DELAY_RESPONSE_COMPLETION=<ms>: a ModelInfer call's
 *   answer (response or error) is written that much later (both: the sum) after the model gave it, so a client
 *   can cancel a call whose request is already over (Triton delays its response-complete callback, at its start
 *   and before it finishes the call).
 * TRITONSERVER_SERVER_DELAY_GRPC_RESPONSE_SEC=<s>: the answer of every RPC but the inference ones (health,
 *   metadata, config, statistics, repository, shared memory, trace, logging) is written that many seconds
 *   late, so that a client's deadline can pass first (L0_client_timeout).
 */
export interface GrpcTestHooks {
  readonly responseDelayMs: number;
  readonly processDelayMs: number;
  readonly completeDelayMs: number;
  readonly notificationDelayMs: number;
  readonly enqueueDelayMs: number;
  readonly nonInferResponseDelayMs: number;
  readonly processEntryDelayMs: number;
  readonly answerDelayMs: number;
}

export function grpcTestHooks(env: NodeJS.ProcessEnv = process.env): GrpcTestHooks {
  return {
    responseDelayMs: envMs(env['TRITONSERVER_DELAY_GRPC_RESPONSE']),
    processDelayMs: envMs(env['TRITONSERVER_DELAY_GRPC_PROCESS']),
    completeDelayMs: envMs(env['TRITONSERVER_DELAY_GRPC_COMPLETE']),
    notificationDelayMs: envMs(env['TRITONSERVER_DELAY_GRPC_NOTIFICATION']),
    enqueueDelayMs: envMs(env['TRITONSERVER_DELAY_GRPC_ENQUEUE']),
    nonInferResponseDelayMs: envMs(env['TRITONSERVER_SERVER_DELAY_GRPC_RESPONSE_SEC']) * 1000,
    processEntryDelayMs: envMs(env['TRITONSERVER_DELAY_GRPC_PROCESS_ENTRY']),
    answerDelayMs: envMs(env['TRITONSERVER_DELAY_RESPONSE_COMPLETE_EXEC']) + envMs(env['TRITONSERVER_DELAY_RESPONSE_COMPLETION']),
  };
}

/**
 * What a call does when its client cancels: logs Triton's verbose line (its QA suites count it, one per
 * cancelled call) and aborts the call's requests, at once or, with the notification and enqueue hooks, later.
 * `handler` is the name Triton gives the RPC's handler (ModelInferHandler, ModelStreamInferHandler).
 */
export type CancelCall = (abort: AbortController, handler: string) => void;

export function cancelCall(hooks: GrpcTestHooks, logger: Logger): CancelCall {
  const { notificationDelayMs: notification, enqueueDelayMs: enqueue } = hooks;
  const notified: CancelCall = (abort, handler) => {
    if (logger.isVerbose(1)) logger.verbose(1, `Cancellation notification received for ${handler}`);
    if (enqueue === 0) {
      abort.abort();
      return;
    }
    logger.info(`Delaying the enqueue of the cancellation by ${enqueue} ms...`);
    setTimeout(() => abort.abort(), enqueue);
  };
  if (notification === 0) return notified;
  return (abort, handler) => {
    logger.info(`Delaying the notification of the cancellation by ${notification} ms...`);
    setTimeout(notified, notification, abort, handler);
  };
}

/**
 * Whether a cancellation may reach a call's AbortController after its requests are over, when the controller
 * may already serve a later call (see abort-controllers.ts): the hooks that delay a cancellation or an answer.
 */
export function cancelsLate(hooks: GrpcTestHooks): boolean {
  return hooks.notificationDelayMs > 0 || hooks.enqueueDelayMs > 0 || hooks.answerDelayMs > 0;
}

/** ModelInfer's answer sent late (the response-complete hooks), or undefined when they are unset. */
export function answerLater(hooks: GrpcTestHooks, logger: Logger): ((send: () => void) => void) | undefined {
  const ms = hooks.answerDelayMs;
  if (ms === 0) return undefined;
  return (send) => {
    logger.info(`Delaying the completion of the response by ${ms} ms...`);
    setTimeout(send, ms);
  };
}

/** A count (milliseconds, or seconds) read as Triton reads them (C's atoi): leading digits; anything else, or below 1, is 0. */
function envMs(value: string | undefined): number {
  const n = value === undefined ? 0 : parseInt(value, 10);
  return n > 0 ? n : 0;
}
