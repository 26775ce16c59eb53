import type { RequestBounds } from '../../inference/index.js';
import { BytesMemo, deepFreeze } from '../bytes-memo.js';
import type { InferHeader } from './infer-request.js';

/**
 * The JSON headers of binary infer requests decoded lately, by their bytes. A client sending tensors in binary
 * sends the same header for every request of the same shapes (Triton's clients and perf_analyzer do), so the
 * header it sent is looked up before it is parsed: comparing a few hundred bytes costs a fraction of JSON.parse
 * and the checks after it. Only headers that hold no tensor data are kept (their bytes decide all they decode
 * to), each at most MEMO_HEADER_BYTES, MEMO_ENTRIES of them, with the model's bounds and the input size limit
 * they were checked against; a header is given out frozen, as requests share it. Headers that never repeat (an
 * id per request) make the memo rest (bytes-memo.ts).
 */
export const MEMO_HEADER_BYTES = 1024;
export const MEMO_ENTRIES = 4;

interface Checked {
  readonly header: InferHeader;
  readonly maxInputSize: number;
}

export class HeaderMemo {
  private readonly memo = new BytesMemo<Checked>(MEMO_HEADER_BYTES, MEMO_ENTRIES);

  /** The header decoded from `body`'s first `length` bytes with these limits, if remembered. */
  find(body: Buffer, length: number, bounds: RequestBounds, maxInputSize: number): InferHeader | undefined {
    const c = this.memo.find(body, 0, length, bounds);
    return c !== undefined && c.maxInputSize === maxInputSize ? c.header : undefined;
  }

  /** Remembers `header`, decoded from `body`'s first `length` bytes, when it may be; returns it, frozen if kept. */
  keep(body: Buffer, length: number, bounds: RequestBounds, maxInputSize: number, header: InferHeader): InferHeader {
    // Frozen only when kept: a header the memo does not want (too long, or while it rests) costs nothing more.
    if (!this.memo.wants(length) || !header.inputs.every((i) => i.data === undefined)) return header;
    this.memo.keep(body, 0, length, bounds, { header: deepFreeze(header), maxInputSize });
    return header;
  }
}
