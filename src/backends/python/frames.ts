/**
 * The framing of messages between the server and a Python stub, on the two pipes (fd 3 towards the stub, fd 4
 * back): uint32 LE length of what follows, uint32 LE length of a JSON header, the header, then an optional
 * binary tail. Execution tensors do not travel here (they are in shared memory); tails carry only the tensors
 * of BLS calls and the files of a model load.
 */

/** One frame as bytes, ready to write; `tail` is appended without a copy when given separately. */
export function encodeFrame(header: string, tailLength = 0): Buffer {
  const jsonLength = Buffer.byteLength(header);
  const frame = Buffer.allocUnsafe(8 + jsonLength);
  frame.writeUInt32LE(4 + jsonLength + tailLength, 0);
  frame.writeUInt32LE(jsonLength, 4);
  frame.write(header, 8, 'utf8');
  return frame;
}

/**
 * JSON for a header. A 64-bit correlation id arrives as a bigint, which JSON.stringify refuses; only then is the
 * header written again with the bigint as a bare integer literal, which Python reads back exactly.
 */
export function headerJson(header: object): string {
  try {
    return JSON.stringify(header);
  } catch {
    const text = JSON.stringify(header, (_k, v: unknown) => (typeof v === 'bigint' ? `\u0000bigint:${v}` : v));
    return text.replace(/"\\u0000bigint:(-?\d+)"/g, '$1');
  }
}

/** Reassembles frames from the chunks a pipe delivers. */
export class FrameReader {
  private chunks: Buffer[] = [];
  private buffered = 0;

  constructor(private readonly onFrame: (header: unknown, tail: Buffer | undefined) => void) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    while (this.buffered >= 8) {
      const head = this.chunks[0]!.length >= 8 ? this.chunks[0]! : this.join();
      const total = head.readUInt32LE(0);
      if (this.buffered < 4 + total) return;
      const data = this.chunks.length === 1 ? this.chunks[0]! : this.join();
      const jsonLength = data.readUInt32LE(4);
      const header: unknown = JSON.parse(data.toString('utf8', 8, 8 + jsonLength));
      const end = 4 + total;
      const tail = end > 8 + jsonLength ? data.subarray(8 + jsonLength, end) : undefined;
      if (end === data.length) {
        this.chunks = [];
        this.buffered = 0;
      } else {
        this.chunks = [data.subarray(end)];
        this.buffered = data.length - end;
      }
      this.onFrame(header, tail);
    }
  }

  private join(): Buffer {
    const all = Buffer.concat(this.chunks, this.buffered);
    this.chunks = [all];
    return all;
  }
}
