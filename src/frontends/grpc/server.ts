import {
  Server, ServerCredentials, type Metadata, type ServiceDefinition, type sendUnaryData, type ServerUnaryCall, type StatusObject, type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import type { InferenceServer } from '../../server/inference-server.js';
import type { Logger } from '../../observability/logger.js';
import { handleModelInfer } from './model-infer.js';
import { decompressionLimit } from './decompression.js';
import { channelOptions, DEFAULT_MAX_DECOMPRESSED_SIZE, MAX_MESSAGE_SIZE, type GrpcOptions } from './options.js';
import { loadProtos } from './proto.js';
import { headerForwarder } from './headers.js';
import { boundedInferDeserializer } from './request-bounds.js';
import { restriction } from './restricted.js';
import { RPCS, type RpcContext } from './rpcs.js';
import { toServiceError } from './status.js';
import { handleStreamInfer, type StreamCall } from './stream.js';

export interface GrpcFrontend {
  readonly port: number;
  close(): Promise<void>;
}

/** Parses the .proto files ahead of startGrpcFrontend (they are parsed once per process), e.g. while models load. */
export function prepareGrpcFrontend(): void {
  loadProtos();
}

/**
 * Triton's gRPC frontend (inference.GRPCInferenceService and grpc.health.v1.Health) on grpc-js. It translates
 * between protobuf messages and the InferenceServer API and nothing more; every error ends its call with the
 * status from the one table in status.ts.
 */
export async function startGrpcFrontend(server: InferenceServer, options: GrpcOptions, logger: Logger): Promise<GrpcFrontend> {
  const protos = loadProtos();
  const ctx: RpcContext = { server, logger, protos };
  const forwarded = headerForwarder(options.headerForwardPattern);
  const guard = (rpc: string) => restriction(rpc, options.restricted);

  const impl: UntypedServiceImplementation = {};
  for (const [name, rpc] of Object.entries(RPCS)) impl[name] = unary(ctx, rpc as (c: RpcContext, r: unknown) => object | Promise<object>, guard(name));
  impl['ModelInfer'] = withGuard(handleModelInfer({ server, logger, forwarded }), guard('ModelInfer'));
  const streamGuard = guard('ModelStreamInfer');
  impl['ModelStreamInfer'] = (call: StreamCall) => {
    const refused = streamGuard?.(call.metadata);
    if (refused) call.emit('error', refused);
    else handleStreamInfer({ server, logger, forwarded: (c) => forwarded(c.metadata) }, call);
  };

  const maxDecompressed = Math.min(options.maxDecompressedSize ?? DEFAULT_MAX_DECOMPRESSED_SIZE, MAX_MESSAGE_SIZE);
  const grpc = new Server({
    ...channelOptions(options),
    interceptors: [decompressionLimit(maxDecompressed, (e) => server.reportError(e), logger)],
  });
  grpc.addService(boundedInference(protos.inference, server), impl);
  grpc.addService(protos.health, {
    Check: unary(ctx, (c: RpcContext) => ({ status: c.server.isReady() ? 1 : 2 }), guard('Check')),
  });
  if (options.responseCompressionLevel && options.responseCompressionLevel !== 'none') {
    logger.warn(`--grpc-infer-response-compression-level=${options.responseCompressionLevel}: grpc-js servers cannot compress responses; they are sent uncompressed`);
  }
  const port = await new Promise<number>((resolve, reject) => {
    grpc.bindAsync(`${hostPart(options.address)}:${options.port}`, credentials(options), (err, p) => (err ? reject(err) : resolve(p)));
  });
  logger.info(`Started GRPCInferenceService at ${options.address}:${port}`);
  return { port, close: () => closeServer(grpc) };
}

/** The service with ModelInfer's and ModelStreamInfer's requests counted before they are decoded (request-bounds.ts). */
function boundedInference(service: ServiceDefinition, server: InferenceServer): ServiceDefinition {
  const bounded: Record<string, ServiceDefinition[string]> = { ...service };
  for (const rpc of ['ModelInfer', 'ModelStreamInfer']) {
    const m = service[rpc]!;
    bounded[rpc] = { ...m, requestDeserialize: boundedInferDeserializer(m.requestDeserialize, server) };
  }
  return bounded;
}

/** A unary RPC: its result or its error as the call's answer. A thrown error never escapes the frontend. */
function unary(
  ctx: RpcContext,
  rpc: (c: RpcContext, r: unknown) => object | Promise<object>,
  guard: ((m: Metadata) => Partial<StatusObject> | null) | null,
): (call: ServerUnaryCall<unknown, object>, callback: sendUnaryData<object>) => void {
  return withGuard((call, callback) => {
    let result: object | Promise<object>;
    try {
      result = rpc(ctx, call.request);
    } catch (e) {
      callback(toServiceError(e, ctx));
      return;
    }
    if (result instanceof Promise) result.then((r) => callback(null, r), (e: unknown) => callback(toServiceError(e, ctx)));
    else callback(null, result);
  }, guard);
}

function withGuard<Req, Res>(
  handler: (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => void,
  guard: ((m: Metadata) => Partial<StatusObject> | null) | null,
): (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => void {
  if (guard === null) return handler;
  return (call, callback) => {
    const refused = guard(call.metadata);
    if (refused) callback(refused);
    else handler(call, callback);
  };
}

function credentials(o: GrpcOptions): ServerCredentials {
  if (!o.ssl) return ServerCredentials.createInsecure();
  return ServerCredentials.createSsl(o.ssl.rootCert, [{ private_key: o.ssl.key, cert_chain: o.ssl.cert }], o.ssl.mutual);
}

/** An IPv6 literal needs brackets before the port. */
function hostPart(address: string): string {
  return address.includes(':') && !address.startsWith('[') ? `[${address}]` : address;
}

/**
 * Called after the server has drained (or given up at --exit-timeout-secs): calls still open after a short
 * grace period (an idle stream the client keeps open, say) are cancelled rather than waited for.
 */
async function closeServer(grpc: Server, graceMs = 1000): Promise<void> {
  const force = setTimeout(() => grpc.forceShutdown(), graceMs);
  await new Promise<void>((resolve) => grpc.tryShutdown(() => resolve()));
  clearTimeout(force);
}

