import { setTimeout as sleep } from 'node:timers/promises';
import type { InferenceRequest, InferenceResponse, Parameters } from '../../inference/index.js';
import type { InferenceServer } from '../../server/inference-server.js';
import type { ServerCall } from './call.js';
import { Status } from './codes.js';
import { decodeInferRequest } from './infer-request.js';
import { inferResponseFrame } from './infer-response.js';
import type { InferParameterOut, ModelInferRequestMsg, ModelStreamInferResponseOut } from './messages.js';
import { abortNow, decodeOrEnd, grpcTraceCarrier, type InferContext } from './model-infer.js';
import type { ErrorContext } from './status.js';
import { toServiceError } from './status.js';
import { refusalError, type ApiKey, type ApiKeys } from '../api-keys.js';
import { permitStream, streamKey } from './api-keys.js';

/**
 * ModelStreamInfer with Triton's stream semantics. Each client message is a request, started as it arrives;
 * responses go out as they come, ordinary models with one response per request, decoupled models with zero or
 * more. Every response carries `triton_final_response`, true on the last one of its request; a decoupled
 * model's bare final flag becomes an empty response only when the request asked with
 * `triton_enable_empty_final_response`. A failed request is answered on the stream with `error_message` and
 * the stream stays open; with the `triton_grpc_error: true` header the first failure ends the stream with its
 * gRPC status instead. The stream closes with OK once the client has half-closed and every request is over;
 * a client that cancels (or whose deadline passes) cancels every request of the stream still running.
 */

export interface StreamContext extends InferContext, ErrorContext {
  /** A ModelStreamInferResponse with gRPC's prefix, for the answers that are not encoded from a response. */
  frame(r: ModelStreamInferResponseOut): Buffer;
  /** Test hook TRITONSERVER_DELAY_GRPC_RESPONSE (see test-hooks.ts); 0 when unset. */
  readonly responseDelayMs?: number;
  /** Test hook TRITONSERVER_DELAY_GRPC_COMPLETE (see test-hooks.ts); 0 when unset. */
  readonly completeDelayMs?: number;
  /** --api-keys-file: the keys streams must present; undefined when they need none. */
  readonly keys?: ApiKeys;
}

const FINAL: Record<string, InferParameterOut> = Object.freeze({ triton_final_response: { bool_param: true } });
const NOT_FINAL: Record<string, InferParameterOut> = Object.freeze({ triton_final_response: { bool_param: false } });
const OK = { code: Status.OK, details: '' };

export function handleStreamInfer(ctx: StreamContext, call: ServerCall): void {
  const key = streamKey(ctx.keys, call);
  if (key !== null && 'code' in key) call.end(key);
  else new InferStream(ctx, call, key).start();
}

class InferStream {
  private readonly abort: AbortController;
  private readonly grpcErrorMode: boolean;
  private readonly forwarded: Parameters | undefined;
  /** A refusal of the stream's forwarded headers, answered to each of its requests as Triton does. */
  private readonly forwardError: unknown;
  private inflight = 0;
  private halfClosed = false;
  private closed = false;

  /** The stream's API key, each request checked against its model; null when the server has no keys. */
  constructor(private readonly ctx: StreamContext, private readonly call: ServerCall, private readonly key: ApiKey | null) {
    this.abort = ctx.controllers.take();
    this.grpcErrorMode = call.get('triton_grpc_error') === 'true';
    this.done = ctx.completeDelayMs ? () => this.completeLater() : this.over;
    try {
      this.forwarded = ctx.forwarded(call);
    } catch (e) {
      this.forwardError = e;
    }
  }

  start(): void {
    // Only a stream still open has requests to abort (an abort builds a DOMException, not worth paying for nothing).
    const cancel = this.ctx.cancel ?? abortNow;
    this.call.onCancel(() => cancel(this.abort, 'ModelStreamInferHandler'));
    this.call.read(
      (message, last) => {
        const msg = decodeOrEnd(this.ctx, this.call, message);
        if (msg === null) {
          this.abort.abort();
          return;
        }
        // A message that came with the client's half-close (a stream per request) is known to be the last
        // before it runs, so an answer given at once can end the stream in the same write.
        if (last) this.halfClosed = true;
        this.inflight++;
        if (msg.refused === undefined || !this.runAfterLoad(msg, message)) this.run(msg);
      },
      () => {
        this.halfClosed = true;
        this.maybeEnd();
      },
    );
  }

  /**
   * --model-load-on-demand: a request whose model is not loaded runs once it has loaded, decoded again; false
   * when there is nothing to wait for.
   */
  private runAfterLoad(msg: ModelInferRequestMsg, message: Buffer): boolean {
    const server = this.ctx.server;
    const loading = server.loadsOnDemand ? server.whenLoaded(msg.model_name, { signal: this.abort.signal }) : undefined;
    if (loading === undefined) return false;
    loading.then(() => {
      const again = decodeOrEnd(this.ctx, this.call, message);
      if (again === null) this.over();
      else this.run(again);
    }, (e: unknown) => {
      this.fail(e, msg, false);
      this.over();
    });
    return true;
  }

  /** A request of the stream is over, answered or failed. */
  private readonly over = (): void => {
    this.inflight--;
    this.maybeEnd();
  };

  /** A request that reached the model has reported its last response or its failure. */
  private readonly done: () => void;

  /** Test hook TRITONSERVER_DELAY_GRPC_COMPLETE: the stream learns late that a request is over, as Triton's callback does. */
  private completeLater(): void {
    const ms = this.ctx.completeDelayMs!;
    this.ctx.logger.info(`Delaying the completion of reporting response / flag by ${ms} ms...`);
    setTimeout(this.over, ms);
  }

  private maybeEnd(): void {
    if (!this.halfClosed || this.inflight !== 0 || this.closed) return;
    this.closed = true;
    this.call.end(OK);
    this.ctx.controllers.giveBack(this.abort);
  }

  private checkKey(model: string): void {
    const refusal = permitStream(this.ctx.keys!, this.key!, model);
    if (refusal !== null) throw refusalError(refusal);
  }

  /** Starts one request; `done` runs once it is over, whichever way. */
  private run(msg: ModelInferRequestMsg): void {
    const server = this.ctx.server;
    let request: InferenceRequest;
    let emptyFinal: boolean;
    try {
      if (this.forwardError !== undefined) throw this.forwardError;
      if (this.key !== null) this.checkKey(msg.model_name);
      ({ request, emptyFinalResponse: emptyFinal } = decodeInferRequest(msg, this.abort.signal, this.forwarded, false, this.key?.id));
    } catch (e) {
      this.fail(e, msg, false);
      this.over();
      return;
    }
    const traces = server.traces;
    if (traces.active) {
      const trace = traces.sample(request.model, grpcTraceCarrier(this.call));
      if (trace !== null) {
        const read = process.hrtime.bigint();
        trace.stamp('GRPC_WAITREAD_START', read);
        trace.stamp('GRPC_WAITREAD_END', read);
        void this.answer(msg, { ...request, trace }, emptyFinal).finally(() => {
          trace.end();
          this.done();
        });
        return;
      }
    }
    const resolved = msg.resolved;
    if ((resolved !== undefined && resolved.decoupled) || this.ctx.responseDelayMs) {
      void this.answer(msg, request, emptyFinal).finally(this.done);
      return;
    }
    // The usual request, one response, answered through callbacks: a model run at once answers before inferTo
    // returns (see ModelInfer).
    server.inferTo(
      request,
      resolved,
      (res) => {
        this.reply(msg, res);
        this.done();
      },
      (e: unknown) => {
        this.fail(e, msg, true);
        this.done();
      },
    );
  }

  private async answer(msg: ModelInferRequestMsg, request: InferenceRequest, emptyFinal: boolean): Promise<void> {
    const server = this.ctx.server;
    const resolved = msg.resolved;
    if (resolved === undefined || !resolved.decoupled) {
      let res: InferenceResponse;
      try {
        res = await server.infer(request, resolved);
      } catch (e) {
        this.fail(e, msg, true);
        return;
      }
      if (this.ctx.responseDelayMs) await this.delayWrite();
      request.trace?.stamp('INFER_RESPONSE_COMPLETE', process.hrtime.bigint());
      this.reply(msg, res);
      return;
    }
    const stream = server.inferStream(request, resolved);
    const refused = stream.refused;
    let finalSent = false;
    let first = true;
    try {
      for await (const res of stream) {
        // Triton stamps a streamed request's first response only.
        if (first) {
          first = false;
          request.trace?.stamp('INFER_RESPONSE_COMPLETE', process.hrtime.bigint());
        }
        finalSent = stream.drained;
        if (this.ctx.responseDelayMs) await this.delayWrite();
        this.call.write(inferResponseFrame(res, finalSent ? FINAL : NOT_FINAL, true));
      }
    } catch (e) {
      this.fail(e, msg, !refused);
      return;
    }
    if (!finalSent && emptyFinal) {
      if (this.ctx.responseDelayMs) await this.delayWrite();
      this.call.write(this.ctx.frame({ error_message: '', infer_response: { id: msg.id, model_name: msg.model_name, model_version: msg.model_version, parameters: FINAL, outputs: [], raw_output_contents: [] } }));
    }
  }

  /**
   * Test hook TRITONSERVER_DELAY_GRPC_RESPONSE: each write waits, as Triton's stream handler does before writing.
   * Callers test the setting first, so that a stream without the hook pays no promise per response.
   */
  private async delayWrite(): Promise<void> {
    const ms = this.ctx.responseDelayMs;
    if (!ms) return;
    this.ctx.logger.info(`Delaying the write of the response by ${ms} ms...`);
    await sleep(ms);
  }

  /** The one response of a request to an ordinary model. */
  private reply(msg: ModelInferRequestMsg, res: InferenceResponse): void {
    try {
      const framed = inferResponseFrame(res, FINAL, true);
      // The stream's last answer once the client has half-closed (a stream per request, as some clients use it):
      // headers, message and OK trailers leave in one buffer, as a unary call's do.
      // (Not when the hook TRITONSERVER_DELAY_GRPC_COMPLETE holds the stream's end back.)
      if (this.halfClosed && this.inflight === 1 && !this.ctx.completeDelayMs) this.call.respond(framed);
      else this.call.write(framed);
    } catch (e) {
      this.fail(e, msg, true);
    }
  }

  /**
   * A request failed. Before inference started the error answer carries only the request id; once the model
   * had the request it also names the model and is the request's final response, as Triton's.
   */
  private fail(e: unknown, msg: ModelInferRequestMsg, started: boolean): void {
    if (this.call.ended) return;
    const status = toServiceError(e, this.ctx);
    if (this.grpcErrorMode) {
      this.abort.abort();
      this.call.end(status);
      return;
    }
    const infer_response = started
      ? { id: msg.id, model_name: msg.model_name, model_version: msg.model_version, parameters: FINAL, outputs: [], raw_output_contents: [] }
      : { id: msg.id, model_name: '', model_version: '', outputs: [], raw_output_contents: [] };
    this.call.write(this.ctx.frame({ error_message: status.details, infer_response }));
  }
}
