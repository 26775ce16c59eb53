import type { IncomingMessage } from 'node:http';
import { NereidError, limitExceeded } from '../../errors.js';

/** Declared body lengths from which chunks are copied into place as they arrive (see readBody). */
const COPY_AS_IT_ARRIVES = 1024 * 1024;

/** How much of a body `inspect` sees (see readBody): enough for a request's header, cheap to look at. */
export const INSPECT_BYTES = 64 * 1024;

/**
 * Reads a request body up to `limit` bytes. A declared Content-Length over the limit is refused before a byte
 * is read; a chunked body is refused as soon as it passes the limit. The chunks are joined once (those of a
 * large body of declared length, as they arrive). Listeners, not an async iterator: in Node 20 setting one up
 * costs more than the rest of a small request's parsing.
 * `tooLarge` makes the refusal, for frontends whose errors have another shape.
 *
 * `inspect`, when given, sees the first INSPECT_BYTES of a body that is at least that long, once, as soon as
 * they have arrived; what it throws ends the read at once and is the refusal. A request that can be refused
 * from its beginning (a body of millions of tiny inputs) then costs its first bytes, not all of them. The rest
 * of such a body is never read: the caller should close the connection after answering.
 */
export function readBody(
  req: IncomingMessage,
  limit: number,
  tooLarge: (size: number, limit: number) => Error = bodyTooLarge,
  inspect?: (prefix: Buffer) => void,
): Promise<Buffer> {
  const declared = req.headers['content-length'];
  const expected = declared === undefined ? 0 : Number(declared);
  if (expected > limit) return Promise.reject(tooLarge(expected, limit));
  // A large body of declared length is copied chunk by chunk, as it arrives, into one buffer: joining tens of
  // megabytes at the end would hold the event loop for one long copy. The buffer is not zero-filled, so what
  // the client declared but never sends costs address space, not memory. With `inspect` it is made only once
  // the start has been looked at: a body refused from its start never costs an allocation of its full size
  // (allocations that large, many a second, would also keep the garbage collector busy).
  const big = Number.isSafeInteger(expected) && expected >= COPY_AS_IT_ARRIVES;
  let whole: Buffer | undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  const allocate = (): void => {
    try {
      whole = Buffer.allocUnsafeSlow(expected);
    } catch {
      return; // No room for it in one piece (a limit set very high): the chunks are joined at the end, if they come.
    }
    let at = 0;
    for (const c of chunks) {
      whole.set(c, at);
      at += c.byteLength;
    }
    chunks.length = 0;
  };
  if (big && inspect === undefined) allocate();
  return new Promise((resolve, reject) => {
    req.on('data', (c: Buffer) => {
      size += c.byteLength;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        reject(tooLarge(size, limit));
        return;
      }
      // The HTTP parser delivers no more than Content-Length.
      if (whole !== undefined) whole.set(c, size - c.byteLength);
      else chunks.push(c);
      if (inspect !== undefined && size >= INSPECT_BYTES) {
        const look = inspect;
        inspect = undefined;
        try {
          look((chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)).subarray(0, INSPECT_BYTES));
        } catch (e) {
          req.removeAllListeners('data');
          req.pause();
          reject(e);
          return;
        }
        if (big) allocate();
      }
    });
    req.on('end', () => {
      if (whole !== undefined) resolve(size === whole.byteLength ? whole : whole.subarray(0, size));
      else resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    });
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
  return limitExceeded('INVALID_ARG', 'http-max-input-size', `Request JSON size of ${size} exceeds the maximum allowed value of ${limit}. Use --http-max-input-size to increase the limit.`);
}
