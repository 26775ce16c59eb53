import type { Answer } from './exchange.js';

export const JSON_HEADERS = { 'Content-Type': 'application/json' };

export function sendJson(res: Answer, status: number, body: string): void {
  res.writeHead(status, { ...JSON_HEADERS, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

export function sendEmpty(res: Answer, status: number): void {
  res.writeHead(status, { 'Content-Length': 0 });
  res.end();
}

/**
 * Calls `release` (the give-back of a response's borrowed outputs) once the response is over: when it closes,
 * or when its connection ends first. A response queued behind another on a keep-alive connection (HTTP
 * pipelining) gets no 'close' of its own if the connection drops while it waits; `connection` is the
 * connection's signal, aborted when its socket closes. `release` must be safe to call twice.
 */
export function releaseWhenDone(res: Answer, connection: AbortSignal, release: () => void): void {
  if (connection.aborted) return release();
  connection.addEventListener('abort', release, { once: true });
  res.once('close', () => {
    connection.removeEventListener('abort', release);
    release();
  });
}
