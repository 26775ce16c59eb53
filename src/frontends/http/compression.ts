import { promisify } from 'node:util';
import { gzip, deflate, unzip } from 'node:zlib';
import { NereidError, invalidArg, limitExceeded } from '../../errors.js';

const gzipAsync = promisify(gzip);
const deflateAsync = promisify(deflate);
const unzipAsync = promisify(unzip);

export type Encoding = 'identity' | 'gzip' | 'deflate';

/** Content-Encoding of a request body: gzip, deflate (zlib-wrapped), identity or none; anything else is refused. */
export function requestEncoding(header: string | undefined): Encoding {
  const v = (header ?? '').trim().toLowerCase();
  if (v === '' || v === 'identity') return 'identity';
  if (v === 'gzip' || v === 'deflate') return v;
  throw new NereidError('UNSUPPORTED_ENCODING', `Unsupported compression type '${header}'`);
}

/**
 * Inflates a compressed body (zlib or gzip, detected from its header), never past `limit` bytes, so a small
 * compressed body cannot expand into an unbounded one.
 */
export async function decompress(body: Buffer, limit: number): Promise<Buffer> {
  try {
    return await unzipAsync(body, { maxOutputLength: limit });
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'ERR_BUFFER_TOO_LARGE' || /Cannot create a Buffer larger|maxOutputLength/.test(err.message)) {
      throw limitExceeded('INVALID_ARG', 'http-max-input-size', `Request JSON size exceeds the maximum allowed value of ${limit} after decompression. Use --http-max-input-size to increase the limit.`);
    }
    throw invalidArg(`failed to decompress the request body: ${err.message}`);
  }
}

/** Picks the response encoding from Accept-Encoding: highest q among identity, gzip, deflate; ties go to the first. */
export function negotiate(accept: string | undefined): Encoding {
  if (!accept) return 'identity';
  let best: Encoding = 'identity';
  let bestQ = -1;
  for (const part of accept.split(',')) {
    const [rawName, ...params] = part.trim().split(';');
    const name = rawName?.trim().toLowerCase();
    if (name !== 'identity' && name !== 'gzip' && name !== 'deflate') continue;
    let q = 1;
    for (const p of params) {
      const m = /^\s*q\s*=\s*([0-9.]+)\s*$/.exec(p);
      if (m) q = Number(m[1]);
    }
    if (Number.isNaN(q)) continue;
    if (q > bestQ) {
      best = name;
      bestQ = q;
    }
  }
  return bestQ > 0 ? best : 'identity';
}

export function compress(body: Buffer, encoding: Exclude<Encoding, 'identity'>): Promise<Buffer> {
  return encoding === 'gzip' ? gzipAsync(body) : deflateAsync(body);
}
