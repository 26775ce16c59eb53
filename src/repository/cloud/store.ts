import type { Readable } from 'node:stream';

/** What the repository needs of an object store; one thin module per SDK implements it. */
export interface StoredObject {
  readonly key: string;
  readonly size: number;
  /** Changes whenever the object's bytes change. */
  readonly etag: string;
  /** The MD5 of the bytes, hex, when the store states it. */
  readonly md5?: string;
}

export interface ObjectStore {
  /** Every object under `prefix`, at any depth. */
  listObjects(prefix: string): Promise<StoredObject[]>;
  /** The object's bytes as a stream, never whole in memory. */
  read(key: string): Promise<Readable>;
  /**
   * Loads what reads need, where the listing did not (the S3 SDK): called before downloads start, so that a
   * download's timing counts the transfer, not a library loading.
   */
  prepareReads?(): Promise<void>;
}

/** A failure of the store, with what decides whether trying again can help. */
export class StoreError extends Error {
  constructor(message: string, readonly transient: boolean) {
    super(message);
    this.name = 'StoreError';
  }
}

const TRANSIENT_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EAI_AGAIN', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'ERR_STREAM_PREMATURE_CLOSE', 'UND_ERR_SOCKET', 'ECONNABORTED', 'TimeoutError', 'RequestTimeout']);

/** Whether an SDK's error is worth another try: the network, a 5xx, throttling; never a 4xx such as a denial. */
export function isTransient(e: unknown): boolean {
  if (e instanceof StoreError) return e.transient;
  const x = e as { code?: unknown; name?: unknown; statusCode?: unknown; status?: unknown; $metadata?: { httpStatusCode?: number }; $retryable?: unknown; cause?: unknown; message?: unknown };
  if (!x || typeof x !== 'object') return false;
  const status = x.$metadata?.httpStatusCode ?? (typeof x.statusCode === 'number' ? x.statusCode : typeof x.code === 'number' ? x.code : typeof x.status === 'number' ? x.status : undefined);
  if (status !== undefined && status > 0) return status >= 500 || status === 408 || status === 429;
  if (typeof x.code === 'string' && TRANSIENT_CODES.has(x.code)) return true;
  if (typeof x.name === 'string' && TRANSIENT_CODES.has(x.name)) return true;
  if (x.$retryable) return true;
  if (typeof x.message === 'string' && /socket hang up|premature close|aborted|ECONNRESET|ECONNREFUSED|network|terminated/i.test(x.message)) return true;
  return x.cause !== undefined && x.cause !== e ? isTransient(x.cause) : false;
}

/** An SDK error in a few words: the status or code and the store's message, never a stack. */
export function describeError(e: unknown): string {
  const x = e as { name?: string; code?: unknown; message?: string; $metadata?: { httpStatusCode?: number }; statusCode?: number };
  if (!x || typeof x !== 'object') return String(e);
  const status = x.$metadata?.httpStatusCode ?? x.statusCode;
  const label = [status ? `HTTP ${status}` : undefined, typeof x.code === 'string' ? x.code : x.name && x.name !== 'Error' ? x.name : undefined].filter(Boolean).join(' ');
  const msg = (x.message ?? '').split('\n')[0]!.trim();
  return label && msg && !msg.includes(label) ? `${label}: ${msg}` : msg || label || 'unknown error';
}
