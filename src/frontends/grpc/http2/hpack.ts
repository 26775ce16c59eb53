import { huffmanDecode } from './huffman.js';
import { BytesMemo } from '../../bytes-memo.js';

/**
 * HPACK (RFC 7541) as a gRPC server needs it: a decoder for the clients' header blocks, with the dynamic
 * table they index into, and an encoder of fixed blocks. The fields every response repeats (its headers and
 * OK trailers) enter each connection's dynamic table once and are indexes after (HeaderEncoder); other blocks
 * (error statuses) are literals that never index.
 */

/** RFC 7541 Appendix A: index 1 is the first entry. */
const STATIC_TABLE: ReadonlyArray<readonly [string, string]> = [
  [':authority', ''], [':method', 'GET'], [':method', 'POST'], [':path', '/'], [':path', '/index.html'],
  [':scheme', 'http'], [':scheme', 'https'], [':status', '200'], [':status', '204'], [':status', '206'],
  [':status', '304'], [':status', '400'], [':status', '404'], [':status', '500'], ['accept-charset', ''],
  ['accept-encoding', 'gzip, deflate'], ['accept-language', ''], ['accept-ranges', ''], ['accept', ''],
  ['access-control-allow-origin', ''], ['age', ''], ['allow', ''], ['authorization', ''], ['cache-control', ''],
  ['content-disposition', ''], ['content-encoding', ''], ['content-language', ''], ['content-length', ''],
  ['content-location', ''], ['content-range', ''], ['content-type', ''], ['cookie', ''], ['date', ''],
  ['etag', ''], ['expect', ''], ['expires', ''], ['from', ''], ['host', ''], ['if-match', ''],
  ['if-modified-since', ''], ['if-none-match', ''], ['if-range', ''], ['if-unmodified-since', ''],
  ['last-modified', ''], ['link', ''], ['location', ''], ['max-forwards', ''], ['proxy-authenticate', ''],
  ['proxy-authorization', ''], ['range', ''], ['referer', ''], ['refresh', ''], ['retry-after', ''],
  ['server', ''], ['set-cookie', ''], ['strict-transport-security', ''], ['transfer-encoding', ''],
  ['user-agent', ''], ['vary', ''], ['via', ''], ['www-authenticate', ''],
];

/** Each entry's size counts 32 octets of overhead beside its name and value (RFC 7541 4.1). */
const ENTRY_OVERHEAD = 32;

const EMPTY = Buffer.alloc(0);

/** Huffman literals up to this many octets are remembered, this many per connection: at most 1 KiB. */
const HUFFMAN_CACHE_OCTETS = 128;
const HUFFMAN_CACHE_ENTRIES = 8;

/** A header block the decoder could not read: a connection error of type COMPRESSION_ERROR (RFC 9113 4.3). */
export class CompressionError extends Error {}

/** Receives each decoded field in order. */
export type FieldSink = (name: string, value: string) => void;

/**
 * One connection's decoder. Its dynamic table is shared by every header block the client sends on the
 * connection, so every block must be decoded, also those of streams that are refused.
 */
export class HeaderDecoder {
  private names: string[] = [];
  /** The block being decoded and the position in it. */
  private src: Buffer = EMPTY;
  private at = 0;
  private values: string[] = [];
  private size = 0;
  private maxSize: number;
  /**
   * The text of Huffman literals decoded lately, by their octets. Clients send some fields as literals that are
   * never indexed, the same ones on every request (nghttp2 sends :path and content-length so): their text comes
   * from here rather than from decoding them bit by bit again.
   */
  private readonly huffmanTexts = new BytesMemo<string>(HUFFMAN_CACHE_OCTETS, HUFFMAN_CACHE_ENTRIES);
  /** Counts every change of the dynamic table: a block decodes to the same fields while it stays the same. */
  tableChanges = 0;

  /** `protocolMax` is SETTINGS_HEADER_TABLE_SIZE as announced (4096 unless changed). */
  constructor(private readonly protocolMax = 4096) {
    this.maxSize = protocolMax;
  }

  /**
   * Decodes a whole header block. Returns the fields' total size as HTTP/2 counts it for
   * SETTINGS_MAX_HEADER_LIST_SIZE; fields are passed to `sink` only while that total stays within `maxListSize`.
   */
  decode(block: Buffer, maxListSize: number, sink: FieldSink): number {
    this.src = block;
    this.at = 0;
    let listSize = 0;
    const end = block.length;
    let first = true;
    while (this.at < end) {
      const b = block[this.at]!;
      let name: string;
      let value: string;
      if (b & 0x80) {
        const index = this.int(7);
        if (index === 0) throw new CompressionError('indexed field with index 0');
        name = this.name(index);
        value = this.value(index);
      } else if ((b & 0xe0) === 0x20) {
        // A dynamic table size update belongs at the start of a block (RFC 7541 4.2).
        if (!first) throw new CompressionError('dynamic table size update after a field');
        const size = this.int(5);
        if (size > this.protocolMax) throw new CompressionError('dynamic table size above the announced maximum');
        this.maxSize = size;
        this.evict(0);
        this.tableChanges++;
        continue;
      } else {
        const indexed = (b & 0xc0) === 0x40;
        const index = this.int(indexed ? 6 : 4);
        name = index === 0 ? this.string() : this.name(index);
        value = this.string();
        if (indexed) this.add(name, value);
      }
      first = false;
      listSize += name.length + value.length + ENTRY_OVERHEAD;
      if (listSize <= maxListSize) sink(name, value);
    }
    this.src = EMPTY;
    return listSize;
  }

  /**
   * An integer with an N-bit prefix (RFC 7541 5.1). Values are capped at 2^28: nothing in a header block is
   * larger, and a longer encoding is a client sending garbage.
   */
  private int(prefixBits: number): number {
    const src = this.src;
    const mask = (1 << prefixBits) - 1;
    let value = src[this.at++]! & mask;
    if (value < mask) return value;
    let shift = 0;
    for (;;) {
      if (this.at >= src.length) throw new CompressionError('truncated integer');
      const b = src[this.at++]!;
      value += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return value;
      shift += 7;
      if (shift > 21) throw new CompressionError('integer too large');
    }
  }

  /** A string literal (RFC 7541 5.2), plain or Huffman-coded, as Latin-1 text (one char per octet). */
  private string(): string {
    const src = this.src;
    if (this.at >= src.length) throw new CompressionError('truncated string');
    const huffman = (src[this.at]! & 0x80) !== 0;
    const length = this.int(7);
    const start = this.at;
    const end = start + length;
    if (end > src.length) throw new CompressionError('string past the end of the block');
    this.at = end;
    if (!huffman) return src.toString('latin1', start, end);
    const known = this.huffmanTexts.find(src, start, length, null);
    if (known !== undefined) return known;
    const text = huffmanDecode(src, start, end);
    if (text === null) throw new CompressionError('invalid Huffman coding');
    this.huffmanTexts.keep(src, start, length, null, text);
    return text;
  }

  private name(index: number): string {
    if (index <= STATIC_TABLE.length) return STATIC_TABLE[index - 1]![0];
    return this.dynamic(index, this.names);
  }

  private value(index: number): string {
    if (index <= STATIC_TABLE.length) return STATIC_TABLE[index - 1]![1];
    return this.dynamic(index, this.values);
  }

  /** The newest entry is index 62, and older entries follow it. */
  private dynamic(index: number, column: string[]): string {
    const i = column.length - 1 - (index - STATIC_TABLE.length - 1);
    if (i < 0) throw new CompressionError(`index ${index} is past the end of the table`);
    return column[i]!;
  }

  private add(name: string, value: string): void {
    this.tableChanges++;
    const size = name.length + value.length + ENTRY_OVERHEAD;
    this.evict(size);
    // An entry larger than the whole table empties it and is not added (RFC 7541 4.4).
    if (size > this.maxSize) return;
    this.names.push(name);
    this.values.push(value);
    this.size += size;
  }

  /** Drops the oldest entries until `incoming` more octets fit. */
  private evict(incoming: number): void {
    let drop = 0;
    while (this.size + incoming > this.maxSize && drop < this.names.length) {
      this.size -= this.names[drop]!.length + this.values[drop]!.length + ENTRY_OVERHEAD;
      drop++;
    }
    if (drop > 0) {
      this.names.splice(0, drop);
      this.values.splice(0, drop);
    }
  }
}

/**
 * A header block for fixed fields: a field whose name and value are in the static table is its index; any
 * other is a literal without indexing (with the static name's index where there is one), never Huffman-coded.
 */
export function encodeBlock(fields: ReadonlyArray<readonly [string, string]>): Buffer {
  const parts: number[] = [];
  for (const [name, value] of fields) {
    const exact = STATIC_TABLE.findIndex(([n, v]) => n === name && v === value);
    if (exact >= 0) {
      writeInt(parts, exact + 1, 7, 0x80);
      continue;
    }
    writeLiteral(parts, name, value, 4, 0x00);
  }
  return Buffer.from(parts);
}

/** A literal field: its name as the static table's index where it has one, else as a string, then its value. */
function writeLiteral(out: number[], name: string, value: string, prefixBits: number, flags: number): void {
  const named = STATIC_TABLE.findIndex(([n]) => n === name);
  writeInt(out, named + 1, prefixBits, flags);
  if (named < 0) writeString(out, name);
  writeString(out, value);
}

/** Fields a server sends alike on many streams (a response's headers, its OK trailers): see HeaderEncoder. */
export class FixedBlock {
  constructor(readonly fields: ReadonlyArray<readonly [string, string]>) {}
}

/** The default SETTINGS_HEADER_TABLE_SIZE, the most this side's encoder uses (RFC 9113 6.5.2). */
const ENCODER_TABLE_SIZE = 4096;

/**
 * One connection's encoder. A FixedBlock's fields that the static table lacks are sent the first time as
 * literals with incremental indexing, and from then on as indexes into the client's dynamic table: the
 * headers and trailers of a response shrink from about 80 octets to 4, and the client's decoder looks them up
 * instead of reading and allocating them again. A block is encoded once per state of the table and reused
 * while the table stays as it was. Blocks must leave in the order they are encoded, as the client's decoder
 * changes its table in the order it reads them. Only FixedBlocks insert; other blocks (plain()) never index.
 */
export class HeaderEncoder {
  /** The entries this side inserted, newest first, as the client's decoder holds them. */
  private readonly names: string[] = [];
  private readonly values: string[] = [];
  private size = 0;
  private maxSize = ENCODER_TABLE_SIZE;
  /** A size the next block must announce first (RFC 7541 4.2), or -1. */
  private sizeUpdate = -1;
  /** Counts every change of the table: an encoding stays valid while the count does. */
  private changes = 0;
  private readonly encoded = new Map<FixedBlock, { bytes: Buffer; changes: number }>();

  /** The client's SETTINGS_HEADER_TABLE_SIZE. A smaller table than this side's takes effect with the next block. */
  peerTableSize(value: number): void {
    // A larger table is the client's offer, not a request: this side keeps to the one it has.
    if (value >= this.maxSize) return;
    this.maxSize = value;
    this.sizeUpdate = value;
    this.evict(0);
    this.changes++;
  }

  /** A block encoded elsewhere, without indexing: as it is, or after the size update this side owes. */
  plain(block: Buffer): Buffer {
    if (this.sizeUpdate < 0) return block;
    const out: number[] = [];
    writeInt(out, this.sizeUpdate, 5, 0x20);
    this.sizeUpdate = -1;
    return Buffer.concat([Buffer.from(out), block]);
  }

  encode(block: FixedBlock): Buffer {
    const known = this.encoded.get(block);
    if (known !== undefined && known.changes === this.changes) return known.bytes;
    const before = this.changes;
    const out: number[] = [];
    const announces = this.sizeUpdate >= 0;
    if (announces) {
      writeInt(out, this.sizeUpdate, 5, 0x20);
      this.sizeUpdate = -1;
    }
    for (const [name, value] of block.fields) this.field(out, name, value);
    const bytes = Buffer.from(out);
    // Kept only when it inserted nothing and announced no size: the same bytes then mean the same fields.
    if (this.changes === before && !announces) this.encoded.set(block, { bytes, changes: this.changes });
    return bytes;
  }

  private field(out: number[], name: string, value: string): void {
    const exact = STATIC_TABLE.findIndex(([n, v]) => n === name && v === value);
    if (exact >= 0) {
      writeInt(out, exact + 1, 7, 0x80);
      return;
    }
    for (let i = 0; i < this.names.length; i++) {
      if (this.names[i] === name && this.values[i] === value) {
        writeInt(out, STATIC_TABLE.length + 1 + i, 7, 0x80);
        return;
      }
    }
    const size = Buffer.byteLength(name, 'latin1') + Buffer.byteLength(value, 'latin1') + ENTRY_OVERHEAD;
    if (size > this.maxSize) {
      writeLiteral(out, name, value, 4, 0x00);
      return;
    }
    writeLiteral(out, name, value, 6, 0x40);
    this.evict(size);
    this.names.unshift(name);
    this.values.unshift(value);
    this.size += size;
    this.changes++;
  }

  /** Drops the oldest entries until `incoming` more octets fit, as the client's decoder does. */
  private evict(incoming: number): void {
    while (this.size + incoming > this.maxSize && this.names.length > 0) {
      this.size -= Buffer.byteLength(this.names.pop()!, 'latin1') + Buffer.byteLength(this.values.pop()!, 'latin1') + ENTRY_OVERHEAD;
      this.changes++;
    }
  }
}

function writeInt(out: number[], value: number, prefixBits: number, flags: number): void {
  const mask = (1 << prefixBits) - 1;
  if (value < mask) {
    out.push(flags | value);
    return;
  }
  out.push(flags | mask);
  let rest = value - mask;
  while (rest >= 0x80) {
    out.push((rest & 0x7f) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  out.push(rest);
}

function writeString(out: number[], text: string): void {
  const bytes = Buffer.from(text, 'latin1');
  writeInt(out, bytes.length, 7, 0x00);
  for (const b of bytes) out.push(b);
}
