import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { InferenceServer } from '../../server/inference-server.js';
import type { Logger } from '../../observability/logger.js';

export interface MetricsFrontendOptions {
  /** --metrics-port (default 8002; 0 picks a free port). */
  port: number;
  /** --metrics-address (default: the HTTP address). */
  address: string;
}

export interface MetricsFrontend {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Triton's metrics endpoint: GET /metrics (or /metrics/) answers the Prometheus text exposition of
 * InferenceServer.metricsText(). As Triton's: another method is 405, and another path is an empty 200.
 */
export async function startMetricsFrontend(server: InferenceServer, options: MetricsFrontendOptions, logger: Logger): Promise<MetricsFrontend> {
  const http = createServer((req, res) => {
    handle(server, req, res).catch((e: unknown) => {
      logger.error(`metrics scrape failed: ${(e as Error).message}`);
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port, options.address, () => resolve());
  });
  const port = (http.address() as AddressInfo).port;
  logger.info(`Started Metrics Service at ${options.address}:${port}`);
  return { port, close: () => closeServer(http) };
}

async function handle(server: InferenceServer, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method !== 'GET') {
    res.writeHead(405, { Allow: 'GET', 'Content-Length': '0' });
    res.end();
    return;
  }
  const path = (req.url ?? '').split('?', 1)[0];
  if (path !== '/metrics' && path !== '/metrics/') {
    res.writeHead(200, { 'Content-Length': '0' });
    res.end();
    return;
  }
  const body = Buffer.from(await server.metricsText());
  res.writeHead(200, { 'Content-Type': server.metricsContentType, 'Content-Length': String(body.byteLength) });
  res.end(body);
}

function closeServer(http: Server): Promise<void> {
  return new Promise((resolve) => {
    http.close(() => resolve());
    http.closeAllConnections();
  });
}
