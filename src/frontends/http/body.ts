import type { IncomingMessage } from 'node:http';
import { invalidArg } from '../../errors.js';

/**
 * Reads a request body up to `limit` bytes. A declared Content-Length over the limit is refused before a byte
 * is read; a chunked body is refused as soon as it passes the limit. The chunks are joined once.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
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

function tooLarge(size: number, limit: number) {
  return invalidArg(`request body of ${size} bytes exceeds the maximum input size of ${limit} bytes (--http-max-input-size)`);
}
