import { promisify } from 'node:util';
import { deflate, gunzip, gzip, inflate } from 'node:zlib';
import { internal, limitExceeded, type NereidError } from '../../errors.js';

/**
 * Message compression as gRPC negotiates it: a request's grpc-encoding names how its messages marked
 * compressed were compressed; the server lists what it accepts in grpc-accept-encoding. "deflate" is zlib's
 * format (RFC 1950), "gzip" RFC 1952.
 */

export const ACCEPT_ENCODING = 'identity,deflate,gzip';

export function isSupportedEncoding(encoding: string): boolean {
  return encoding === 'identity' || encoding === 'gzip' || encoding === 'deflate';
}

const gzipAsync = promisify(gzip);
const deflateAsync = promisify(deflate);
const gunzipAsync = promisify(gunzip);
const inflateAsync = promisify(inflate);

/**
 * A compressed message inflated in zlib's thread pool, which stops as soon as the output passes `maxBytes`
 * (--grpc-max-decompressed-size): a small message cannot make the server hold what it would inflate to.
 * Rejects with a NereidError: RESOURCE_EXHAUSTED past the limit, INTERNAL for data that does not inflate.
 */
export async function decompress(encoding: 'gzip' | 'deflate', message: Buffer, maxBytes: number): Promise<Buffer> {
  try {
    return await (encoding === 'gzip' ? gunzipAsync : inflateAsync)(message, { maxOutputLength: maxBytes });
  } catch (e) {
    throw (e as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' ? tooLarge(maxBytes) : internal('Failed to decompress message');
  }
}

function tooLarge(maxBytes: number): NereidError {
  return limitExceeded('RESOURCE_EXHAUSTED', 'grpc-max-decompressed-size',
    `request message decompresses to more than the maximum of ${maxBytes} bytes (--grpc-max-decompressed-size)`);
}

/** --grpc-infer-response-compression-level as zlib's levels. */
const ZLIB_LEVEL = { low: 1, medium: 6, high: 9 } as const;

export type ResponseCompression = { readonly encoding: 'gzip' | 'deflate'; readonly level: number };

/**
 * How to compress a call's responses at `level`: with gzip, or deflate when the client accepts only that
 * (its grpc-accept-encoding); null for none, or when the client accepts neither.
 */
export function responseCompression(level: 'none' | 'low' | 'medium' | 'high' | undefined, accepted: string | undefined): ResponseCompression | null {
  if (level === undefined || level === 'none' || accepted === undefined) return null;
  const names = accepted.split(',').map((e) => e.trim());
  const encoding = names.includes('gzip') ? 'gzip' : names.includes('deflate') ? 'deflate' : null;
  return encoding === null ? null : { encoding, level: ZLIB_LEVEL[level] };
}

/** A message compressed in zlib's thread pool. */
export function compress(c: ResponseCompression, message: Buffer): Promise<Buffer> {
  return (c.encoding === 'gzip' ? gzipAsync : deflateAsync)(message, { level: c.level });
}
