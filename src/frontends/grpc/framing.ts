import { limitExceeded } from '../../errors.js';

/**
 * gRPC's Length-Prefixed-Message framing (PROTOCOL-HTTP2.md): a compressed flag byte, a 4-byte big-endian
 * length, then the message. The reader takes DATA chunks as they come and hands out whole messages; a message
 * that arrived in one chunk is a view of it (no copy). A declared length above the limit is refused from the
 * prefix, before any of the message is kept. Each message says whether it ended its chunk: with the chunk's
 * end of stream, that makes it the call's last.
 */
export class MessageReader {
  private head = Buffer.allocUnsafe(5);
  private headLength = 0;
  /** The parts of a message that spans chunks, once its prefix is known: kept as they came, joined once whole. */
  private parts: Buffer[] | null = null;
  private partsLength = 0;
  private bodyLength = 0;
  private compressed = false;

  constructor(
    private readonly maxBytes: number,
    private readonly onMessage: (message: Buffer, compressed: boolean, endsChunk: boolean) => void,
  ) {}

  /** True when no message is partly read (a stream that ends here ended cleanly). */
  get idle(): boolean {
    return this.headLength === 0 && this.parts === null;
  }

  /** Throws NereidError RESOURCE_EXHAUSTED for a message above the limit. */
  push(chunk: Buffer): void {
    let pos = 0;
    const n = chunk.length;
    while (pos < n) {
      if (this.parts !== null) {
        // Nothing is allocated from the declared length: only what arrived is held.
        const take = Math.min(n - pos, this.bodyLength - this.partsLength);
        this.parts.push(pos === 0 && take === n ? chunk : chunk.subarray(pos, pos + take));
        this.partsLength += take;
        pos += take;
        if (this.partsLength === this.bodyLength) {
          const m = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.bodyLength);
          this.parts = null;
          this.onMessage(m, this.compressed, pos === n);
        }
        continue;
      }
      if (this.headLength === 0 && n - pos >= 5) {
        // The common case: the prefix and, often, the whole message in this chunk.
        const flag = chunk[pos]!;
        const length = chunk.readUInt32BE(pos + 1);
        pos = this.start(chunk, pos + 5, flag, length);
        continue;
      }
      this.head[this.headLength++] = chunk[pos++]!;
      if (this.headLength === 5) {
        this.headLength = 0;
        pos = this.start(chunk, pos, this.head[0]!, this.head.readUInt32BE(1));
      }
    }
  }

  private start(chunk: Buffer, pos: number, flag: number, length: number): number {
    if (length > this.maxBytes) {
      throw limitExceeded('RESOURCE_EXHAUSTED', 'grpc-max-message-size', `Received message larger than max (${length} vs. ${this.maxBytes})`);
    }
    const compressed = flag === 1;
    const end = pos + length;
    if (chunk.length >= end) {
      this.onMessage(chunk.subarray(pos, end), compressed, end === chunk.length);
      return end;
    }
    this.compressed = compressed;
    this.parts = [];
    this.partsLength = 0;
    this.bodyLength = length;
    return pos;
  }
}

/** A message with its 5-byte prefix. */
export function frame(message: Uint8Array, compressed = false): Buffer {
  const out = Buffer.allocUnsafe(message.byteLength + 5);
  out[0] = compressed ? 1 : 0;
  out.writeUInt32BE(message.byteLength, 1);
  out.set(message, 5);
  return out;
}
