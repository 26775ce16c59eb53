import type { RequestBounds } from '../../inference/index.js';
import type { InferHeader } from './infer-request.js';

/**
 * The JSON headers of binary infer requests decoded lately, by their bytes. A client sending tensors in binary
 * sends the same header for every request of the same shapes (Triton's clients and perf_analyzer do), so the
 * header it sent last is looked up before it is parsed: comparing a few hundred bytes costs a fraction of
 * JSON.parse and the checks after it. Only headers that hold no tensor data are kept (their bytes decide all
 * they decode to), each at most MEMO_HEADER_BYTES, MEMO_ENTRIES of them, with the model's bounds they were
 * checked against; a header is given out frozen, as requests share it.
 */
export const MEMO_HEADER_BYTES = 1024;
export const MEMO_ENTRIES = 4;

interface Entry {
  readonly bytes: Buffer;
  readonly bounds: RequestBounds;
  readonly maxInputSize: number;
  readonly header: InferHeader;
}

export class HeaderMemo {
  private readonly entries: (Entry | undefined)[] = new Array(MEMO_ENTRIES);
  private next = 0;

  /** The header decoded from `body`'s first `length` bytes with these limits, if remembered. */
  find(body: Buffer, length: number, bounds: RequestBounds, maxInputSize: number): InferHeader | undefined {
    if (length > MEMO_HEADER_BYTES) return undefined;
    for (const e of this.entries) {
      if (e !== undefined && e.bytes.byteLength === length && e.bounds === bounds && e.maxInputSize === maxInputSize && body.compare(e.bytes, 0, length, 0, length) === 0) return e.header;
    }
    return undefined;
  }

  /** Remembers `header`, decoded from `body`'s first `length` bytes, when it may be; returns it, frozen if kept. */
  keep(body: Buffer, length: number, bounds: RequestBounds, maxInputSize: number, header: InferHeader): InferHeader {
    if (length > MEMO_HEADER_BYTES || !header.inputs.every((i) => i.data === undefined)) return header;
    // A copy: the body's memory is the request's (and, on the direct path, the connection's buffer).
    this.entries[this.next] = { bytes: Buffer.from(body.subarray(0, length)), bounds, maxInputSize, header: deepFreeze(header) };
    this.next = (this.next + 1) % MEMO_ENTRIES;
    return header;
  }
}

/** Freezes `o` and everything it holds (a Map's entries cannot be frozen: the header's is only read). */
function deepFreeze<T>(o: T): T {
  if (o === null || typeof o !== 'object' || Object.isFrozen(o) || o instanceof Map) return o;
  Object.freeze(o);
  for (const v of Object.values(o as object)) deepFreeze(v);
  return o;
}
