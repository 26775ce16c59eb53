import { FRAME_HEADER, FRAME_SIZE_ERROR, PREFACE } from './frames.js';
import { ConnectionError } from './connection-error.js';

/** Where the frames read from a connection go. */
export interface FrameSink {
  /** Once closed, no further frame is read. */
  readonly closed: boolean;
  frame(type: number, flags: number, id: number, payload: Buffer): void;
  /** The client's first octets are not HTTP/2's preface. */
  notHttp2(): void;
}

/**
 * The frames of one HTTP/2 connection's input: the client preface, then each whole frame (RFC 9113 4.1) given
 * to the sink as its header's fields and a view of its payload. Input that does not hold a whole frame is kept,
 * as it came, until it does, and joined once: a client sending a byte at a time costs one copy of the frame,
 * not one per byte. Unparsed input is bounded by one frame of at most `maxFrame` octets.
 */
export class FrameReader {
  private parts: Buffer[] = [];
  private partsLength = 0;
  /** How many octets the next step needs. */
  private needed = PREFACE.length;
  private prefaceSeen = false;

  constructor(private readonly sink: FrameSink, private readonly maxFrame: number) {}

  /** The input to parse with this chunk, null while it does not hold the next step whole (the chunk is kept). */
  take(chunk: Buffer): Buffer | null {
    if (this.partsLength + chunk.length < this.needed) {
      this.parts.push(chunk);
      this.partsLength += chunk.length;
      return null;
    }
    const input = this.partsLength === 0 ? chunk : Buffer.concat([...this.parts, chunk]);
    this.parts = [];
    this.partsLength = 0;
    return input;
  }

  /**
   * Handles every whole frame in `input` (from take()), and keeps the rest, setting `needed` for the next
   * chunk. One method rather than two: it runs for every read of the socket.
   */
  parse(input: Buffer): void {
    let pos = 0;
    const sink = this.sink;
    if (!this.prefaceSeen) {
      if (input.length < PREFACE.length) {
        this.parts.push(input);
        this.partsLength = input.length;
        return;
      }
      if (!input.subarray(0, PREFACE.length).equals(PREFACE)) return sink.notHttp2();
      this.prefaceSeen = true;
      pos = PREFACE.length;
    }
    while (!sink.closed) {
      if (input.length - pos < FRAME_HEADER) {
        this.needed = FRAME_HEADER;
        break;
      }
      const length = (input[pos]! << 16) | (input[pos + 1]! << 8) | input[pos + 2]!;
      if (length > this.maxFrame) throw new ConnectionError(FRAME_SIZE_ERROR, 'frame larger than SETTINGS_MAX_FRAME_SIZE');
      if (input.length - pos < FRAME_HEADER + length) {
        this.needed = FRAME_HEADER + length;
        break;
      }
      const type = input[pos + 3]!;
      const flags = input[pos + 4]!;
      const id = input.readUInt32BE(pos + 5) & 0x7fffffff;
      const payload = input.subarray(pos + FRAME_HEADER, pos + FRAME_HEADER + length);
      pos += FRAME_HEADER + length;
      sink.frame(type, flags, id, payload);
    }
    if (pos < input.length && !sink.closed) {
      this.parts.push(input.subarray(pos));
      this.partsLength = input.length - pos;
    }
  }
}
