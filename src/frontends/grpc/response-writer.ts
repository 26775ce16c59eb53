/**
 * A protobuf writer over one buffer of a size computed beforehand, for the messages encoded on every request
 * (infer-response.ts): sizes first, then bytes, with no intermediate objects. Field numbers here are below
 * 16, so every tag is one byte.
 */

export function varintSize(n: number): number {
  if (n < 0) return 10;
  let size = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

export function bigVarintSize(n: bigint): number {
  if (n < 0n) return 10;
  let size = 1;
  while (n >= 128n) {
    n >>= 7n;
    size++;
  }
  return size;
}

/**
 * The UTF-8 length of a string; a short ASCII one (names, datatypes, ids) is measured without a call into
 * the runtime, which costs more than the string.
 */
export function utf8Length(s: string): number {
  const n = s.length;
  if (n > 64) return Buffer.byteLength(s);
  for (let i = 0; i < n; i++) if (s.charCodeAt(i) >= 0x80) return Buffer.byteLength(s);
  return n;
}

/** A length-delimited field of `length` bytes: tag, length, contents. */
export const delimitedSize = (length: number): number => 1 + varintSize(length) + length;

export class ResponseWriter {
  pos: number;
  constructor(readonly buf: Buffer, start = 0) {
    this.pos = start;
  }

  tag(field: number, wireType: number): void {
    this.buf[this.pos++] = (field << 3) | wireType;
  }

  /** A non-negative integer up to 2^53, or a negative one as its 64-bit two's complement (10 bytes). */
  varint(n: number): void {
    if (n < 0) {
      this.bigVarint(BigInt(n));
      return;
    }
    const buf = this.buf;
    let pos = this.pos;
    while (n >= 128) {
      buf[pos++] = (n % 128) | 0x80;
      n = Math.floor(n / 128);
    }
    buf[pos++] = n;
    this.pos = pos;
  }

  bigVarint(n: bigint): void {
    let u = BigInt.asUintN(64, n);
    const buf = this.buf;
    while (u >= 128n) {
      buf[this.pos++] = Number(u & 127n) | 0x80;
      u >>= 7n;
    }
    buf[this.pos++] = Number(u);
  }

  /** A string field whose UTF-8 length is `length`. */
  string(field: number, s: string, length: number): void {
    this.tag(field, 2);
    this.varint(length);
    if (length === s.length && length <= 64) {
      // ASCII (its UTF-8 length is its length): byte by byte, cheaper than a call for a short string.
      const buf = this.buf;
      const pos = this.pos;
      for (let i = 0; i < length; i++) buf[pos + i] = s.charCodeAt(i);
      this.pos = pos + length;
    } else {
      this.pos += this.buf.write(s, this.pos, length, 'utf8');
    }
  }

  bytes(field: number, b: Uint8Array): void {
    this.tag(field, 2);
    this.varint(b.byteLength);
    this.buf.set(b, this.pos);
    this.pos += b.byteLength;
  }

  double(field: number, v: number): void {
    this.tag(field, 1);
    this.buf.writeDoubleLE(v, this.pos);
    this.pos += 8;
  }
}
