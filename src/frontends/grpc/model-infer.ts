import type { Metadata, sendUnaryData, ServerUnaryCall } from '@grpc/grpc-js';
import { unsupported } from '../../errors.js';
import type { Parameters } from '../../inference/index.js';
import type { Logger } from '../../observability/logger.js';
import type { InferenceServer } from '../../server/inference-server.js';
import { decodeInferRequest } from './infer-request.js';
import { encodeInferResponse } from './infer-response.js';
import type { ModelInferRequestMsg, ModelInferResponseOut } from './messages.js';
import { toServiceError } from './status.js';

interface InferContext {
  readonly server: InferenceServer;
  readonly logger: Logger;
  readonly forwarded: (m: Metadata) => Parameters | undefined;
}

/**
 * ModelInfer: one request, one response. A client that cancels, or whose deadline passes, aborts the request,
 * so work still queued for it is dropped rather than run for nobody.
 */
export function handleModelInfer(ctx: InferContext): (call: ServerUnaryCall<ModelInferRequestMsg, ModelInferResponseOut>, callback: sendUnaryData<ModelInferResponseOut>) => void {
  const { server, logger } = ctx;
  return (call, callback) => {
    const abort = new AbortController();
    const msg = call.request;
    let request;
    try {
      // As Triton's, the refusal of a decoupled model comes before the request is looked at.
      if (msg.resolved?.decoupled) throw unsupported("ModelInfer RPC doesn't support models with decoupled transaction policy");
      // Borrowed outputs: grpc-js serializes the message inside callback() (no server interceptors here),
      // copying the tensors' bytes, so they are given back as soon as it returns.
      request = decodeInferRequest(msg, abort.signal, ctx.forwarded(call.metadata), true).request;
    } catch (e) {
      callback(toServiceError(e, ctx));
      return;
    }
    // grpc-js emits 'cancelled' whenever a call's stream closes, also after the answer has gone out. Only a
    // request still running is aborted: an abort builds a DOMException (about 15 µs), which every request
    // would otherwise pay for nothing.
    let running = true;
    call.once('cancelled', () => {
      if (running) abort.abort();
    });
    server.infer(request, msg.resolved).then(
      (res) => {
        running = false;
        try {
          callback(null, encodeInferResponse(res));
        } finally {
          res.release?.();
        }
      },
      (e: unknown) => {
        running = false;
        callback(toServiceError(e, ctx));
      },
    );
  };
}
