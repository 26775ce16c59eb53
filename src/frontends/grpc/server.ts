import type { InferenceServer } from '../../server/inference-server.js';
import type { Logger } from '../../observability/logger.js';
import type { ServerCall } from './call.js';
import type { CallStatus } from './codes.js';
import { responseCompression } from './compression.js';
import { AbortControllers } from './abort-controllers.js';
import { DESERIALIZE_FAILED, handleModelInfer, type InferContext } from './model-infer.js';
import { DEFAULT_MAX_DECOMPRESSED_SIZE, MAX_CONCURRENT_STREAMS, MAX_HEADER_LIST_BYTES, MAX_MESSAGE_SIZE, type GrpcOptions } from './options.js';
import { encodeFramed, loadProtos, type MethodDefinition } from './proto.js';
import { headerForwarder } from './headers.js';
import type { ModelInferRequestMsg } from './messages.js';
import { boundedInferDeserializer } from './request-bounds.js';
import { restriction } from './restricted.js';
import { keyCheck, requestModel, type CallKeyCheck } from './api-keys.js';
import { RPCS, type RpcContext } from './rpcs.js';
import { toServiceError } from './status.js';
import { handleStreamInfer, type StreamContext } from './stream.js';
import { listen, type Method } from './transport.js';
import { answerLater, cancelCall, cancelsLate, grpcTestHooks } from './test-hooks.js';

export interface GrpcFrontend {
  readonly port: number;
  close(): Promise<void>;
}

/** Parses the .proto files ahead of startGrpcFrontend (they are parsed once per process), e.g. while models load. */
export function prepareGrpcFrontend(): void {
  loadProtos();
}

type Guard = ((call: ServerCall) => CallStatus | null) | null;

/**
 * Triton's gRPC frontend (inference.GRPCInferenceService and grpc.health.v1.Health) on the HTTP/2 transport of
 * transport.ts. It translates between protobuf messages and the InferenceServer API and nothing more; every
 * error ends its call with the status from the one table in status.ts.
 */
export async function startGrpcFrontend(server: InferenceServer, options: GrpcOptions, logger: Logger): Promise<GrpcFrontend> {
  const protos = loadProtos();
  const ctx: RpcContext = { server, logger, protos };
  const forwarded = headerForwarder(options.headerForwardPattern);
  const guard = (rpc: string): Guard => restriction(rpc, options.restricted);
  const inference = protos.inference;
  const streamType = protos.type('inference.ModelStreamInferResponse');
  const decode = boundedInferDeserializer(inference['ModelInfer']!.requestDeserialize, server) as (b: Buffer) => ModelInferRequestMsg;
  const hooks = grpcTestHooks();
  // A cancellation that may arrive after its call is over must not reach a controller used again by a later call.
  const controllers = new AbortControllers(cancelsLate(hooks) ? 0 : undefined);
  const inferCtx: InferContext = {
    server,
    decode,
    forwarded: (call) => forwarded(call),
    controllers,
    cancel: cancelCall(hooks, logger),
    answerLater: answerLater(hooks, logger),
    keyCheck: keyCheck('ModelInfer', options.keys),
  };
  const streamCtx: StreamContext = {
    ...inferCtx,
    logger,
    frame: (r) => encodeFramed(streamType, r),
    responseDelayMs: hooks.responseDelayMs,
    completeDelayMs: hooks.completeDelayMs,
    keys: options.keys,
  };

  const routes = new Map<string, Method>();
  for (const [name, rpc] of Object.entries(RPCS)) {
    routes.set(inference[name]!.path, unary(ctx, inference[name]!, rpc as (c: RpcContext, r: unknown) => object | Promise<object>, guard(name), hooks.nonInferResponseDelayMs, keyed(name, options.keys)));
  }
  const compressed = compressedResponses(options.responseCompressionLevel);
  const delayed = delayedStart(handleModelInfer(inferCtx), hooks.processDelayMs, logger, 'Delaying the Process execution');
  const modelInfer = delayedStart(delayed, hooks.processEntryDelayMs, logger, 'Delaying the entry of Process');
  routes.set(inference['ModelInfer']!.path, {
    kind: 'unary',
    handle: withGuard(compressed === null ? modelInfer : (call, message) => modelInfer(compressed(call), message), guard('ModelInfer')),
  });
  const streamGuard = guard('ModelStreamInfer');
  routes.set(inference['ModelStreamInfer']!.path, {
    kind: 'stream',
    handle: (call) => {
      const refused = streamGuard?.(call);
      if (refused) call.end(refused);
      else handleStreamInfer(streamCtx, compressed === null ? call : compressed(call));
    },
  });
  const check = protos.health['Check']!;
  routes.set(check.path, unary(ctx, check, (c: RpcContext) => ({ status: c.server.isReady() ? 1 : 2 }), guard('Check'), hooks.nonInferResponseDelayMs, keyed('Check', options.keys)));

  const transport = await listen(routes, {
    maxMessageBytes: MAX_MESSAGE_SIZE,
    maxDecompressedBytes: Math.min(options.maxDecompressedSize ?? DEFAULT_MAX_DECOMPRESSED_SIZE, MAX_MESSAGE_SIZE),
    maxConcurrentStreams: MAX_CONCURRENT_STREAMS,
    maxHeaderListBytes: MAX_HEADER_LIST_BYTES,
    errorStatus: (e) => toServiceError(e, ctx),
  }, options, (message) => logger.warn(message));
  logger.info(`Started GRPCInferenceService at ${options.address}:${transport.port}`);
  // Called after the server has drained (or given up at --exit-timeout-secs): calls still open after a short
  // grace period (an idle stream the client keeps open, say) are cancelled rather than waited for.
  return { port: transport.port, close: () => transport.close(1000) };
}

/**
 * --grpc-infer-response-compression-level: the inference RPCs' responses compressed as the client accepts
 * (as Triton applies the level to them alone); null when off, so that calls pay nothing for it.
 */
function compressedResponses(level: GrpcOptions['responseCompressionLevel']): ((call: ServerCall) => ServerCall) | null {
  if (level === undefined || level === 'none') return null;
  return (call) => {
    call.compressResponses(responseCompression(level, call.get('grpc-accept-encoding')));
    return call;
  };
}

/**
 * A unary RPC: its result or its error as the call's answer. A thrown error never escapes the frontend.
 * `delayMs`: test hook TRITONSERVER_SERVER_DELAY_GRPC_RESPONSE_SEC (see test-hooks.ts), 0 when unset.
 */
function unary(
  ctx: RpcContext, def: MethodDefinition, rpc: (c: RpcContext, r: unknown) => object | Promise<object>, guard: Guard, delayMs: number,
  keys: ((call: ServerCall, request: unknown) => CallStatus | null) | null,
): Method {
  const write = (call: ServerCall, result: object): void => {
    let framed: Buffer;
    try {
      framed = def.responseFrame(result);
    } catch (e) {
      call.fail(e);
      return;
    }
    call.respond(framed);
  };
  const answer = late(write, delayMs, ctx.logger);
  const fail = late((call: ServerCall, e: unknown) => call.fail(e), delayMs, ctx.logger);
  return {
    kind: 'unary',
    handle: withGuard((call, message) => {
      let request: unknown;
      try {
        request = def.requestDeserialize(message);
      } catch {
        call.end(DESERIALIZE_FAILED);
        return;
      }
      const refused = keys?.(call, request);
      if (refused) {
        call.end(refused);
        return;
      }
      let result: object | Promise<object>;
      try {
        result = rpc(ctx, request);
      } catch (e) {
        fail(call, e);
        return;
      }
      if (result instanceof Promise) result.then((r) => answer(call, r), (e: unknown) => fail(call, e));
      else answer(call, result);
    }, guard),
  };
}

/** An RPC's API-key check on its decoded request (which names the model), null when calls need no key. */
function keyed(rpc: string, keys: GrpcOptions['keys']): ((call: ServerCall, request: unknown) => CallStatus | null) | null {
  const check: CallKeyCheck | null = keyCheck(rpc, keys);
  if (check === null) return null;
  return (call, request) => {
    const passed = check(call, requestModel(rpc, request));
    return typeof passed === 'string' ? null : passed;
  };
}

/** Test hook TRITONSERVER_SERVER_DELAY_GRPC_RESPONSE_SEC (see test-hooks.ts): the RPC runs at once, its answer leaves `ms` later. */
function late<T>(send: (call: ServerCall, x: T) => void, ms: number, logger: Logger): (call: ServerCall, x: T) => void {
  if (ms === 0) return send;
  return (call, x) => {
    logger.verbose(1, `Delaying the write of the response by ${ms / 1000} seconds`);
    setTimeout(send, ms, call, x);
  };
}

function withGuard(handler: (call: ServerCall, message: Buffer) => void, guard: Guard): (call: ServerCall, message: Buffer) => void {
  if (guard === null) return handler;
  return (call, message) => {
    const refused = guard(call);
    if (refused) call.end(refused);
    else handler(call, message);
  };
}

/**
 * Test hooks TRITONSERVER_DELAY_GRPC_PROCESS and _PROCESS_ENTRY (see test-hooks.ts): the call starts `ms` later,
 * unless cancelled meanwhile.
 */
function delayedStart(handle: (call: ServerCall, message: Buffer) => void, ms: number, logger: Logger, what: string): (call: ServerCall, message: Buffer) => void {
  if (ms === 0) return handle;
  return (call, message) => {
    logger.info(`${what} by ${ms} ms...`);
    setTimeout(() => {
      if (!call.ended) handle(call, message);
    }, ms);
  };
}
