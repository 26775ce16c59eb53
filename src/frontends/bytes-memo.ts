/**
 * Values computed from a few bytes of a request, remembered by those bytes: the one memo behind every place a
 * frontend skips work for bytes it has seen (the HTTP/1.1 request head, the JSON header of a binary infer, the
 * fields before a gRPC ModelInfer's tensors, an HTTP/2 header block, HPACK's Huffman literals). A client repeats
 * the same bytes for every request of the same shapes, and comparing a few hundred bytes costs a fraction of
 * parsing and checking them again.
 *
 * Each entry also carries a key (compared with ===: the model version's bounds it was checked against, the
 * HPACK table's state): a lookup with another finds nothing. At most `entries` entries of at most `maxBytes`
 * bytes each, the oldest replaced first; the bytes are copied, as a request's buffer is reused.
 *
 * A memo whose entries are never found rests: a client whose every request differs (an id of its own in each)
 * would otherwise pay for remembering each one (a copy, and the caller's freezing of what it decoded), as much
 * again as the decode. After MISS_RUN entries in a row that no lookup found, it neither looks nor remembers for
 * a rest of REST_FIRST lookups, then probes: it looks again and remembers PROBE more, and when those are not
 * found either it rests twice as long, up to REST_MAX. A hit ends the rests. Resting costs a request one
 * counter. Misses of what is never remembered (too long, or refused by the caller, such as JSON with tensor
 * data) count for nothing, so they cannot stop the memo for another client whose requests repeat.
 */
export const MISS_RUN = 8;
export const PROBE = 2;
export const REST_FIRST = 64;
export const REST_MAX = 4096;

/** Up to this many bytes are compared in a loop: shorter than the call into Buffer's native compare. */
const LOOP_BYTES = 32;

export class BytesMemo<T> {
  private readonly bytes: (Buffer | undefined)[];
  private readonly keys: unknown[];
  private readonly values: (T | undefined)[];
  private next = 0;
  /** Entries kept in a row that no lookup found. */
  private unfound = 0;
  /** Lookups left in the current rest. */
  private resting = 0;
  /** Whether the last lookup was skipped in a rest: what it was for is not to be remembered. */
  private quiet = false;
  private rest = REST_FIRST;

  constructor(readonly maxBytes: number, readonly entries: number) {
    this.bytes = new Array(entries);
    this.keys = new Array(entries);
    this.values = new Array(entries);
  }

  /** The value remembered for `buf`'s `length` bytes from `start`, and `key`. */
  find(buf: Buffer, start: number, length: number, key: unknown): T | undefined {
    if (length > this.maxBytes) return undefined;
    if (this.resting > 0) return this.skip();
    for (let i = 0; i < this.entries; i++) {
      const b = this.bytes[i];
      if (b !== undefined && b.byteLength === length && this.keys[i] === key && same(b, buf, start, length)) return this.hit(i);
    }
    return this.miss();
  }

  /** The value remembered for bytes that `buf` begins with, whatever follows them (a head and its body), and `key`. */
  findAtStart(buf: Buffer, key: unknown): T | undefined {
    if (this.resting > 0) return this.skip();
    for (let i = 0; i < this.entries; i++) {
      const b = this.bytes[i];
      if (b !== undefined && b.byteLength <= buf.byteLength && this.keys[i] === key && same(b, buf, 0, b.byteLength)) return this.hit(i);
    }
    return this.miss();
  }

  /** Whether keep() would remember `length` bytes now: not past maxBytes, and not in a rest. */
  wants(length: number): boolean {
    return length <= this.maxBytes && !this.quiet;
  }

  /** Remembers `value` for `buf`'s `length` bytes from `start`, and `key`, when wants(length). */
  keep(buf: Buffer, start: number, length: number, key: unknown, value: T): void {
    if (!this.wants(length)) return;
    const i = this.next;
    const old = this.bytes[i];
    // The entry replaced gives its copy of the bytes when they are as long (a client's ids often are).
    if (old !== undefined && old.byteLength === length) buf.copy(old, 0, start, start + length);
    else this.bytes[i] = Buffer.from(buf.subarray(start, start + length));
    this.keys[i] = key;
    this.values[i] = value;
    this.next = (i + 1) % this.entries;
    if (++this.unfound < MISS_RUN) return;
    this.resting = this.rest;
    this.rest = Math.min(2 * this.rest, REST_MAX);
    this.unfound = MISS_RUN - PROBE;
  }

  private skip(): undefined {
    this.resting--;
    this.quiet = true;
    return undefined;
  }

  private hit(i: number): T | undefined {
    this.quiet = false;
    this.unfound = 0;
    this.rest = REST_FIRST;
    return this.values[i];
  }

  private miss(): undefined {
    this.quiet = false;
    return undefined;
  }
}

/** Whether `b` holds the `length` bytes of `buf` from `start` (b.byteLength >= length). */
function same(b: Buffer, buf: Buffer, start: number, length: number): boolean {
  if (length > LOOP_BYTES) return buf.compare(b, 0, length, start, start + length) === 0;
  for (let i = 0; i < length; i++) if (b[i] !== buf[start + i]) return false;
  return true;
}

/** Freezes `o` and every object it holds, for a value that requests share (a Map's entries cannot be frozen). */
export function deepFreeze<T>(o: T): T {
  if (o === null || typeof o !== 'object' || Object.isFrozen(o) || o instanceof Map || ArrayBuffer.isView(o)) return o;
  Object.freeze(o);
  for (const v of Object.values(o as object)) deepFreeze(v);
  return o;
}
