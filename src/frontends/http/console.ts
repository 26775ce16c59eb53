import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { negotiate } from './compression.js';

/** The console's files: the package's top-level console/ folder (plain JavaScript modules, no build step). */
const CONSOLE_DIR = fileURLToPath(new URL('../../../../console/', import.meta.url));

/** uPlot, a dependency already, served from the installed package rather than a CDN: the console works offline. */
const VENDOR: Readonly<Record<string, string>> = {
  'vendor/uPlot.esm.js': 'uplot/dist/uPlot.esm.js',
  'vendor/uPlot.min.css': 'uplot/dist/uPlot.min.css',
};

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

/**
 * No inline script or style, nothing from another origin; the page talks to this port only. uPlot sizes its
 * elements through the CSSOM (element.style), which style-src does not govern.
 */
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const COMMON_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': CSP,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

interface Asset {
  readonly body: Buffer;
  /** The body gzipped once at start, when that makes it smaller (uPlot's module is 4 times smaller). */
  readonly gzip: Buffer | null;
  readonly type: string;
  readonly etag: string;
}

export const CONSOLE_PATH = '/console/';

/**
 * The web console's static files, read once when the frontend starts and answered from memory. A request
 * names an asset by its exact path in a fixed table: nothing is looked up on disk per request, so no path a
 * client sends can reach another file. Requests revalidate (no-cache) against a content hash, so a new
 * version of the package is picked up at once and an unchanged file costs a 304.
 */
export class ConsoleAssets {
  private readonly assets = new Map<string, Asset>();

  constructor(dir = CONSOLE_DIR) {
    for (const name of readdirSync(dir)) {
      const type = TYPES[extname(name)];
      if (type !== undefined) this.add(name, readFileSync(join(dir, name)), type);
    }
    const require = createRequire(import.meta.url);
    for (const [name, file] of Object.entries(VENDOR)) this.add(name, readFileSync(require.resolve(file)), TYPES[extname(name)]!);
  }

  private add(name: string, body: Buffer, type: string): void {
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
    const packed = gzipSync(body, { level: 9 });
    this.assets.set(CONSOLE_PATH + (name === 'index.html' ? '' : name), { body, gzip: packed.byteLength < body.byteLength * 0.9 ? packed : null, type, etag });
  }

  /** Answers a request under /console and returns true; false for any other path (left to the caller's 404). */
  answer(req: IncomingMessage, res: ServerResponse): boolean {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    if (path === '/console') return redirect(res);
    if (!path.startsWith(CONSOLE_PATH)) return false;
    const method = req.method ?? 'GET';
    if (method !== 'GET' && method !== 'HEAD') return plain(res, 405, 'Method Not Allowed', { Allow: 'GET, HEAD' });
    const asset = this.assets.get(path);
    if (asset === undefined) return plain(res, 404, 'Not Found');
    const head: Record<string, string | number> = { ...COMMON_HEADERS, 'Content-Type': asset.type, ETag: asset.etag, 'Cache-Control': 'no-cache', Vary: 'Accept-Encoding' };
    if (req.headers['if-none-match'] === asset.etag) {
      res.writeHead(304, head);
      res.end();
      return true;
    }
    const gzip = asset.gzip !== null && negotiate(req.headers['accept-encoding']) === 'gzip';
    const body = gzip ? asset.gzip! : asset.body;
    if (gzip) head['Content-Encoding'] = 'gzip';
    res.writeHead(200, { ...head, 'Content-Length': body.byteLength });
    res.end(method === 'HEAD' ? undefined : body);
    return true;
  }
}

function redirect(res: ServerResponse): true {
  res.writeHead(301, { ...COMMON_HEADERS, Location: CONSOLE_PATH, 'Content-Length': 0 });
  res.end();
  return true;
}

function plain(res: ServerResponse, status: number, text: string, extra: Record<string, string> = {}): true {
  res.writeHead(status, { ...COMMON_HEADERS, ...extra, 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
  return true;
}

/** The console's address for the start-up line: a wildcard bind is reached through loopback. */
export function consoleUrl(address: string, port: number, tls: boolean): string {
  const host = address === '0.0.0.0' || address === '::' || address === '' ? '127.0.0.1' : address;
  return `${tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}${CONSOLE_PATH}`;
}

/** Whether an HTTP bind address is loopback only (the console is on by default there). */
export function isLoopback(address: string): boolean {
  return address === 'localhost' || address === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(address);
}
