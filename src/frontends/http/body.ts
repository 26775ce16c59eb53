import type { IncomingMessage } from 'node:http';
import { limitExceeded } from '../../errors.js';

/**
 * Reads a request body up to `limit` bytes. A declared Content-Length over the limit is refused before a byte
 * is read; a chunked body is refused as soon as it passes the limit. The chunks are joined once. Listeners,
 * not an async iterator: in Node 20 setting one up costs more than the rest of a small request's parsing.
 * `tooLarge` makes the refusal, for frontends whose errors have another shape.
 */
export function readBody(req: IncomingMessage, limit: number, tooLarge: (size: number, limit: number) => Error = bodyTooLarge): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) {
    return Promise.reject(tooLarge(Number(declared), limit));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.byteLength;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        reject(tooLarge(size, limit));
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)));
    req.on('error', reject);
  });
}

function bodyTooLarge(size: number, limit: number): Error {
  return limitExceeded('INVALID_ARG', 'http-max-input-size', `request body of ${size} bytes exceeds the maximum input size of ${limit} bytes (--http-max-input-size)`);
}
