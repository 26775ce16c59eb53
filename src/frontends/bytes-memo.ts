/**
 * Values computed from a few bytes of a request, remembered by those bytes: a client repeats the same request
 * head, JSON header or message prefix for every request of the same shapes, and comparing a few hundred bytes
 * costs a fraction of parsing and checking them again. Each entry also names the object the value was checked
 * against (a model version's bounds): a lookup with another finds nothing. At most `entries` entries of at most
 * `maxBytes` bytes each, the oldest replaced first; the bytes are copied, as a request's buffer is reused.
 */
export class BytesMemo<T> {
  private readonly bytes: (Buffer | undefined)[];
  private readonly keys: (object | undefined)[];
  private readonly values: (T | undefined)[];
  private next = 0;

  constructor(readonly maxBytes: number, readonly entries: number) {
    this.bytes = new Array(entries);
    this.keys = new Array(entries);
    this.values = new Array(entries);
  }

  /** The value remembered for `buf`'s first `length` bytes and `key`. */
  find(buf: Buffer, length: number, key: object): T | undefined {
    if (length > this.maxBytes) return undefined;
    for (let i = 0; i < this.entries; i++) {
      const b = this.bytes[i];
      if (b !== undefined && b.byteLength === length && this.keys[i] === key && buf.compare(b, 0, length, 0, length) === 0) return this.values[i];
    }
    return undefined;
  }

  /** Remembers `value` for `buf`'s first `length` bytes and `key`; false when they are too long to be kept. */
  keep(buf: Buffer, length: number, key: object, value: T): boolean {
    if (length > this.maxBytes) return false;
    const i = this.next;
    this.bytes[i] = Buffer.from(buf.subarray(0, length));
    this.keys[i] = key;
    this.values[i] = value;
    this.next = (i + 1) % this.entries;
    return true;
  }
}

/** Freezes `o` and every object it holds, for a value that requests share (a Map's entries cannot be frozen). */
export function deepFreeze<T>(o: T): T {
  if (o === null || typeof o !== 'object' || Object.isFrozen(o) || o instanceof Map || ArrayBuffer.isView(o)) return o;
  Object.freeze(o);
  for (const v of Object.values(o as object)) deepFreeze(v);
  return o;
}
