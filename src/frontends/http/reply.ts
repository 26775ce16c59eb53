import type { ServerResponse } from 'node:http';

export const JSON_HEADERS = { 'Content-Type': 'application/json' };

export function sendJson(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { ...JSON_HEADERS, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

export function sendEmpty(res: ServerResponse, status: number): void {
  res.writeHead(status, { 'Content-Length': 0 });
  res.end();
}
