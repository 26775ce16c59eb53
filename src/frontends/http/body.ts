import type { IncomingMessage } from 'node:http';
import { NereidError, limitExceeded } from '../../errors.js';

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
    // A client that goes away mid-upload is not a server fault: Node reports it as an 'aborted' error (or
    // only closes the request); either way it becomes one CANCELLED error, which frontends log as one line.
    req.on('error', (e) => reject(req.complete ? e : clientGone()));
    req.on('close', () => {
      if (!req.complete) reject(clientGone());
    });
  });
}

/** The client closed its connection before the whole request body arrived. */
export function clientGone(): NereidError {
  return new NereidError('CANCELLED', 'the client closed the connection before sending the whole request body');
}

function bodyTooLarge(size: number, limit: number): Error {
  return limitExceeded('INVALID_ARG', 'http-max-input-size', `request body of ${size} bytes exceeds the maximum input size of ${limit} bytes (--http-max-input-size)`);
}
