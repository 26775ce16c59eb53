import { unsupported } from '../../errors.js';
import type { InferenceRequest, Parameters, RootTrace, TraceContextCarrier } from '../../inference/index.js';
import type { InferenceServer } from '../../server/inference-server.js';
import type { AbortControllers } from './abort-controllers.js';
import type { ServerCall } from './call.js';
import { Status, type CallStatus } from './codes.js';
import { decodeInferRequest } from './infer-request.js';
import { inferResponseFrame } from './infer-response.js';
import type { ModelInferRequestMsg } from './messages.js';
import type { CancelCall } from './test-hooks.js';
import type { CallKeyCheck } from './api-keys.js';

export interface InferContext {
  readonly server: InferenceServer;
  /** The request's bytes as a message, its counts checked first (request-bounds.ts); throws for bytes that are not one. */
  decode(message: Buffer): ModelInferRequestMsg;
  /** The call's headers that --grpc-header-forward-pattern passes to models, or undefined. */
  forwarded(call: ServerCall): Parameters | undefined;
  /** The calls' AbortControllers, used again (see abort-controllers.ts). */
  readonly controllers: AbortControllers;
  /** What a client's cancel does to the call's requests (test-hooks.ts); unset, they are aborted at once. */
  readonly cancel?: CancelCall;
  /** Test hooks TRITONSERVER_DELAY_RESPONSE_COMPLETE_EXEC / _COMPLETION (test-hooks.ts): ModelInfer's answer sent late. */
  readonly answerLater?: (send: () => void) => void;
  /** --api-keys-file: the call's key checked against the model its request names; null or unset without keys. */
  readonly keyCheck?: CallKeyCheck | null;
}

/**
 * ModelInfer: one request, one response. A client that cancels, or whose deadline passes, aborts the request,
 * so work still queued for it is dropped rather than run for nobody.
 */
export function handleModelInfer(ctx: InferContext): (call: ServerCall, message: Buffer) => void {
  const { server, controllers } = ctx;
  const cancel = ctx.cancel ?? abortNow;
  const later = ctx.answerLater;
  const keyCheck = ctx.keyCheck;
  const handle = (call: ServerCall, message: Buffer, loaded = false): void => {
    const msg = decodeOrEnd(ctx, call, message);
    if (msg === null) return;
    // A model not loaded loads first with --model-load-on-demand; the request is then decoded again.
    if (msg.refused !== undefined && !loaded && server.loadsOnDemand) {
      const loading = server.whenLoaded(msg.model_name, { signal: cancelSignal(call) });
      if (loading !== undefined) return void loading.then(() => handle(call, message, true), (e: unknown) => call.fail(e));
    }
    let tenant: string | undefined;
    if (keyCheck != null) {
      const passed = keyCheck(call, msg.model_name);
      if (typeof passed === 'string') tenant = passed;
      else if (passed !== null) return call.end(passed);
    }
    const abort = controllers.take();
    let request: InferenceRequest;
    try {
      // As Triton's, the refusal of a decoupled model comes before the request is looked at.
      if (msg.resolved?.decoupled) throw unsupported("ModelInfer RPC doesn't support models with decoupled transaction policy");
      // Borrowed outputs: the response is encoded into its own buffer before they are given back.
      request = decodeInferRequest(msg, abort.signal, ctx.forwarded(call), true, tenant).request;
    } catch (e) {
      call.fail(e);
      controllers.giveBack(abort);
      return;
    }
    // Only a request still running is aborted: an abort builds a DOMException, which would be work for nothing.
    call.onCancel(() => cancel(abort, 'ModelInferHandler'));
    const traces = server.traces;
    if (traces.active) {
      const trace = traces.sample(request.model, grpcTraceCarrier(call));
      // A sampled request's controller is not used again: tracing costs more than a new one.
      // (The response-complete test hooks do not delay a sampled request's answer.)
      if (trace !== null) return tracedInfer(server, call, { ...request, trace }, msg, trace);
    }
    // Answered through callbacks: a model run at once answers before inferTo returns, and the response leaves
    // without waiting for a turn of the promise jobs.
    server.inferTo(
      request,
      msg.resolved,
      (res) => {
        try {
          const framed = inferResponseFrame(res);
          if (later === undefined) call.respond(framed);
          else later(() => call.respond(framed));
        } catch (e) {
          call.fail(e);
        } finally {
          res.release?.();
          controllers.giveBack(abort);
        }
      },
      (e: unknown) => {
        if (later === undefined) call.fail(e);
        else later(() => call.fail(e));
        controllers.giveBack(abort);
      },
    );
  };
  return handle;
}

/** Aborts when the client cancels the call (or its deadline passes): a wait for a model's load ends then. */
function cancelSignal(call: ServerCall): AbortSignal {
  const c = new AbortController();
  call.onCancel(() => c.abort());
  return c.signal;
}

export const abortNow: CancelCall = (abort) => abort.abort();

/**
 * A sampled request, with the frontend's timestamps: its message has been read whole when the handler runs,
 * so the read's start and end are one moment.
 */
function tracedInfer(server: InferenceServer, call: ServerCall, request: InferenceRequest, msg: ModelInferRequestMsg, trace: RootTrace): void {
  const read = process.hrtime.bigint();
  trace.stamp('GRPC_WAITREAD_START', read);
  trace.stamp('GRPC_WAITREAD_END', read);
  server.infer(request, msg.resolved).then(
    (res) => {
      try {
        trace.stamp('INFER_RESPONSE_COMPLETE', process.hrtime.bigint());
        trace.stamp('GRPC_SEND_START', process.hrtime.bigint());
        call.respond(inferResponseFrame(res));
        trace.stamp('GRPC_SEND_END', process.hrtime.bigint());
      } catch (e) {
        call.fail(e);
      } finally {
        res.release?.();
        trace.end();
      }
    },
    (e: unknown) => {
      call.fail(e);
      trace.end();
    },
  );
}

/** A client's W3C trace context from the call's metadata, read only for requests of a server that traces. */
export function grpcTraceCarrier(call: ServerCall): TraceContextCarrier | null {
  const traceparent = call.get('traceparent');
  return traceparent === undefined ? null : { traceparent, tracestate: call.get('tracestate') };
}

/** The message, or null once the call has ended INTERNAL for bytes that are not one (as gRPC servers answer). */
export function decodeOrEnd(ctx: Pick<InferContext, 'decode'>, call: ServerCall, message: Buffer): ModelInferRequestMsg | null {
  try {
    return ctx.decode(message);
  } catch {
    call.end(DESERIALIZE_FAILED);
    return null;
  }
}

export const DESERIALIZE_FAILED: CallStatus = { code: Status.INTERNAL, details: 'Error deserializing request' };
