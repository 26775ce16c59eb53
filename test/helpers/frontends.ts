import { InferenceServer } from '../../src/server/inference-server.js';
import { startHttpFrontend } from '../../src/frontends/http/server.js';
import { startGrpcFrontend } from '../../src/frontends/grpc/server.js';
import type { ServerOptions } from '../../src/server/options.js';
import { createLogger } from '../../src/observability/logger.js';
import { connect, failure, unary, type Client } from './grpc.js';
import { postJson, request } from './http.js';

/** One real server with both frontends on free loopback ports, and a gRPC client connected to it. */
export interface BothFrontends {
  readonly server: InferenceServer;
  readonly url: string;
  readonly client: Client;
  /**
   * The error message of an HTTP call expected to fail: a POST with `body` when given (a string is sent as it is,
   * for JSON that JSON.stringify cannot write, such as integers past 2^53), else a GET.
   */
  httpError(path: string, body?: unknown): Promise<string>;
  /** The status details of a gRPC call expected to fail. */
  grpcError(rpc: string, message: unknown): Promise<string>;
  close(): Promise<void>;
}

export async function startBothFrontends(options: ServerOptions): Promise<BothFrontends> {
  const logger = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
  const server = await InferenceServer.create(options, { logger });
  const http = await startHttpFrontend(server, { port: 0, address: '127.0.0.1', maxInputSize: 64 * 1024 * 1024 }, logger);
  const grpc = await startGrpcFrontend(server, { port: 0, address: '127.0.0.1' }, logger);
  const client = connect(grpc.port);
  const url = `http://127.0.0.1:${http.port}`;
  return {
    server,
    url,
    client,
    httpError: async (path, body) => {
      const r = body === undefined ? await request(url + path)
        : typeof body === 'string' ? await request(url + path, { body }) : await postJson(url + path, body);
      if (r.status === 200) throw new Error(`${path} succeeded but was expected to fail`);
      return String(r.json().error);
    },
    grpcError: async (rpc, message) => (await failure(unary(client, rpc, message))).details,
    close: async () => {
      client.close();
      await server.close(5);
      await Promise.all([http.close(), grpc.close()]);
    },
  };
}
