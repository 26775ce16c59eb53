import http2 from 'node:http2';
import { join } from 'node:path';
import protobuf from 'protobufjs';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { InferenceServer } from '../../src/server/inference-server.js';
import { startGrpcFrontend, type GrpcFrontend } from '../../src/frontends/grpc/server.js';
import type { GrpcOptions } from '../../src/frontends/grpc/options.js';
import type { ServerOptions } from '../../src/server/options.js';
import { createLogger, type Logger } from '../../src/observability/logger.js';
import { ROOT } from './paths.js';

/**
 * A gRPC client as Triton's users write one in Node: @grpc/grpc-js with stubs loaded by @grpc/proto-loader
 * from the project's .proto files (64-bit integers as strings, enums as names, defaults filled in).
 */
export const PROTO_DIR = join(ROOT, 'proto');

const definition = protoLoader.loadSync(['grpc_service.proto', 'health.proto'], {
  keepCase: true, longs: String, enums: String, defaults: true, oneofs: true, includeDirs: [PROTO_DIR],
});
const loaded = grpc.loadPackageDefinition(definition) as any;
export const InferenceClient: typeof grpc.Client = loaded.inference.GRPCInferenceService;
export const HealthClient: typeof grpc.Client = loaded.grpc.health.v1.Health;

export const CLIENT_OPTIONS = { 'grpc.max_receive_message_length': -1, 'grpc.max_send_message_length': -1 };

export type Client = grpc.Client & Record<string, any>;

export function connect(port: number, options: grpc.ChannelOptions = CLIENT_OPTIONS): Client {
  return new InferenceClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), options) as Client;
}

export interface CallOptions {
  metadata?: grpc.Metadata;
  deadlineMs?: number;
}

/** A unary call as a promise; a failed call rejects with the grpc-js ServiceError (code, details). */
export function unary(client: Client, rpc: string, request: unknown, o: CallOptions = {}): Promise<any> {
  return new Promise((resolve, reject) => {
    const opts: grpc.CallOptions = o.deadlineMs === undefined ? {} : { deadline: Date.now() + o.deadlineMs };
    client[rpc](request, o.metadata ?? new grpc.Metadata(), opts, (err: grpc.ServiceError | null, res: unknown) => (err ? reject(err) : resolve(res)));
  });
}

/** Resolves with the error of a call expected to fail. */
export async function failure(p: Promise<unknown>): Promise<grpc.ServiceError> {
  try {
    await p;
  } catch (e) {
    return e as grpc.ServiceError;
  }
  throw new Error('the call succeeded but was expected to fail');
}

export interface GrpcTestServer {
  readonly server: InferenceServer;
  readonly grpc: GrpcFrontend;
  readonly client: Client;
  readonly logger: Logger;
  close(): Promise<void>;
}

/** A real server with its gRPC frontend on a free loopback port, in this process, and a client connected to it. */
export async function startGrpcTestServer(options: ServerOptions, grpcOptions: Partial<GrpcOptions> = {}): Promise<GrpcTestServer> {
  const logger = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
  const server = await InferenceServer.create(options, { logger });
  const frontend = await startGrpcFrontend(server, { port: 0, address: '127.0.0.1', ...grpcOptions }, logger);
  const client = connect(frontend.port);
  return {
    server,
    grpc: frontend,
    client,
    logger,
    close: async () => {
      client.close();
      await server.close(5);
      await frontend.close();
    },
  };
}

/** Little-endian bytes of an INT32 array, as Triton's clients put them in raw_input_contents. */
export function int32Bytes(values: number[]): Buffer {
  return Buffer.from(new Int32Array(values).buffer);
}

export function int32s(b: Buffer): number[] {
  const copy = Buffer.from(b);
  return Array.from(new Int32Array(copy.buffer, copy.byteOffset, copy.byteLength / 4));
}

/** The protobufjs types of ModelInferRequest/Response, for tests that frame messages by hand. */
const protoRoot = new protobuf.Root().loadSync(join(PROTO_DIR, 'grpc_service.proto'), { keepCase: true });
export const requestType = protoRoot.lookupType('inference.ModelInferRequest');
export const responseType = protoRoot.lookupType('inference.ModelInferResponse');
export const streamResponseType = protoRoot.lookupType('inference.ModelStreamInferResponse');

export interface RawReply {
  status: string | undefined;
  message: string;
  /** The first response message's compressed flag, or -1 without a message. */
  compressedFlag: number;
  body: Buffer;
}

/** One unary call over plain HTTP/2, the message framed by hand (optionally marked gzip-compressed), with any extra headers. */
export function rawCall(port: number, path: string, message: Buffer, gzip: boolean, extra: http2.OutgoingHttpHeaders = {}): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on('error', reject);
    const headers: http2.OutgoingHttpHeaders = { ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...extra };
    if (gzip) headers['grpc-encoding'] = 'gzip';
    const req = session.request(headers);
    const chunks: Buffer[] = [];
    let trailers: http2.IncomingHttpHeaders = {};
    let head: http2.IncomingHttpHeaders = {};
    req.on('response', (h) => (head = h));
    req.on('trailers', (t) => (trailers = t));
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      session.close();
      const all = Buffer.concat(chunks);
      const t = { ...head, ...trailers };
      resolve({
        status: t['grpc-status'] as string | undefined,
        message: decodeURIComponent(String(t['grpc-message'] ?? '')),
        compressedFlag: all.byteLength >= 5 ? all[0]! : -1,
        body: all.byteLength >= 5 ? all.subarray(5, 5 + all.readUInt32BE(1)) : Buffer.alloc(0),
      });
    });
    const frame = Buffer.alloc(5);
    frame[0] = gzip ? 1 : 0;
    frame.writeUInt32BE(message.byteLength, 1);
    req.end(Buffer.concat([frame, message]));
  });
}
