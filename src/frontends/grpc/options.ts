import type { ApiKeys } from '../api-keys.js';
import type { TlsFiles } from '../tls-listener.js';

/** The gRPC frontend's settings: tritonserver's --grpc-* flags, already parsed. */
export interface GrpcOptions {
  port: number;
  address: string;
  keepaliveTimeMs?: number;
  keepaliveTimeoutMs?: number;
  keepalivePermitWithoutCalls?: boolean;
  http2MaxPingsWithoutData?: number;
  http2MinRecvPingIntervalWithoutDataMs?: number;
  http2MaxPingStrikes?: number;
  /** 0 = unset. */
  maxConnectionAgeMs?: number;
  maxConnectionAgeGraceMs?: number;
  /** --grpc-infer-response-compression-level. */
  responseCompressionLevel?: 'none' | 'low' | 'medium' | 'high';
  /** --grpc-use-ssl: serve over TLS with these files, reloaded when they change. */
  ssl?: TlsFiles;
  /** --grpc-header-forward-pattern: metadata keys matching it (any case) become request parameters. */
  headerForwardPattern?: string;
  /** --api-keys-file: the keys calls must present; undefined when calls need none. */
  keys?: ApiKeys;
  /** --grpc-restricted-protocol groups. */
  restricted?: readonly RestrictedGroup[];
  /** --grpc-max-decompressed-size: the most bytes a compressed request message may inflate to. */
  maxDecompressedSize?: number;
}

export interface RestrictedGroup {
  readonly categories: readonly string[];
  readonly key: string;
  readonly value: string;
}

/** Triton's message size limit in both directions. */
export const MAX_MESSAGE_SIZE = 2147483647;

/**
 * The default of --grpc-max-decompressed-size, the same as --http-max-input-size's: a compressed message
 * costs the server what it inflates to, not what the client sent.
 */
export const DEFAULT_MAX_DECOMPRESSED_SIZE = 67108864;

/**
 * Streams (calls) one connection may have open at once, announced in the HTTP/2 settings: each holds a
 * request and its work, so a client cannot open more than this many at a time.
 */
export const MAX_CONCURRENT_STREAMS = 1024;

/**
 * The largest header block (metadata included) a request may send, announced in the HTTP/2 settings: far more
 * than Triton's clients send, and a bound on what a call's metadata costs.
 */
export const MAX_HEADER_LIST_BYTES = 16384;

/** PEM files for --grpc-use-ssl, read at start and again when they change. */
export function readSslFiles(cert: string, key: string, rootCert: string, mutual: boolean): TlsFiles {
  return { cert, key, rootCert, mutual };
}
