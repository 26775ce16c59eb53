import net from 'node:net';
import { once } from 'node:events';
import { frame, FRAME_HEADER, HEADERS, CONTINUATION, DATA, END_HEADERS, END_STREAM, PREFACE, SETTINGS, ACK, uint32Frame } from '../../src/frontends/grpc/http2/frames.js';
import { encodeBlock, HeaderDecoder } from '../../src/frontends/grpc/http2/hpack.js';

/**
 * A client that speaks HTTP/2 frame by frame, for tests of what a well-behaved library would never send: it
 * writes the frames it is given and records every frame the server sends, with header blocks decoded.
 */

export interface Received {
  type: number;
  flags: number;
  stream: number;
  payload: Buffer;
  /** For HEADERS (and the CONTINUATIONs that end it): the decoded fields. */
  fields?: Record<string, string>;
}

export class FrameClient {
  readonly frames: Received[] = [];
  closed = false;
  private input = Buffer.alloc(0);
  private readonly decoder = new HeaderDecoder();
  private blockParts: Buffer[] | null = null;
  private waiters: Array<() => void> = [];

  private constructor(readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
  }

  /** Connects, sends the preface and `settings` (id, value pairs), and acknowledges the server's SETTINGS. */
  static async connect(port: number, settings: Array<[number, number]> = [], preface = true): Promise<FrameClient> {
    const socket = net.connect(port, '127.0.0.1');
    await once(socket, 'connect');
    const c = new FrameClient(socket);
    if (preface) {
      const payload = Buffer.alloc(6 * settings.length);
      settings.forEach(([id, v], i) => {
        payload.writeUInt16BE(id, 6 * i);
        payload.writeUInt32BE(v, 6 * i + 2);
      });
      socket.write(Buffer.concat([PREFACE, frame(SETTINGS, 0, 0, payload), frame(SETTINGS, ACK, 0, null)]));
    }
    return c;
  }

  send(...frames: Buffer[]): void {
    this.socket.write(Buffer.concat(frames));
  }

  /** The frames of a gRPC request's headers for `path` on `stream`, as one HEADERS frame. */
  static requestHeaders(stream: number, path: string, extra: Array<[string, string]> = [], endStream = false): Buffer {
    const block = encodeBlock([
      [':method', 'POST'], [':scheme', 'http'], [':path', path], [':authority', 'localhost'],
      ['content-type', 'application/grpc'], ['te', 'trailers'], ...extra,
    ]);
    return headerFrames(stream, block, endStream);
  }

  /** A gRPC message (length-prefixed) as one DATA frame, ending the stream when `end`. */
  static message(stream: number, message: Buffer, end = true): Buffer {
    const body = Buffer.alloc(5 + message.length);
    body.writeUInt32BE(message.length, 1);
    message.copy(body, 5);
    return frame(DATA, end ? END_STREAM : 0, stream, body);
  }

  static reset(stream: number, code = 0x8): Buffer {
    return uint32Frame(0x3, stream, code);
  }

  /** Resolves with the first received frame that `match` accepts (including ones already received). */
  async waitFor(match: (f: Received) => boolean, what: string, timeoutMs = 10_000): Promise<Received> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.frames.find(match);
      if (found) return found;
      if (this.closed) throw new Error(`connection closed before ${what}; received ${this.describe()}`);
      if (Date.now() > deadline) throw new Error(`no ${what} within ${timeoutMs} ms; received ${this.describe()}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
  }

  async waitClosed(timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed) {
      if (Date.now() > deadline) throw new Error(`connection still open after ${timeoutMs} ms; received ${this.describe()}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
  }

  /** The trailers (a HEADERS frame with END_STREAM) of `stream`. */
  trailersOf(stream: number): Promise<Received> {
    return this.waitFor((f) => f.type === HEADERS && f.stream === stream && (f.flags & END_STREAM) !== 0, `trailers of stream ${stream}`);
  }

  close(): void {
    this.socket.destroy();
  }

  describe(): string {
    return this.frames.map((f) => `${f.type}/${f.flags}/${f.stream}${f.type === 7 || f.type === 3 ? `(code ${f.payload.readUInt32BE(f.type === 7 ? 4 : 0)})` : ''}`).join(' ') || 'nothing';
  }

  private onData(chunk: Buffer): void {
    this.input = Buffer.concat([this.input, chunk]);
    while (this.input.length >= FRAME_HEADER) {
      const length = this.input.readUIntBE(0, 3);
      if (this.input.length < FRAME_HEADER + length) break;
      const f: Received = {
        type: this.input[3]!,
        flags: this.input[4]!,
        stream: this.input.readUInt32BE(5) & 0x7fffffff,
        payload: Buffer.from(this.input.subarray(FRAME_HEADER, FRAME_HEADER + length)),
      };
      this.input = this.input.subarray(FRAME_HEADER + length);
      if (f.type === HEADERS || f.type === CONTINUATION) {
        this.blockParts = [...(this.blockParts ?? []), f.payload];
        if ((f.flags & END_HEADERS) !== 0) {
          const fields: Record<string, string> = {};
          this.decoder.decode(Buffer.concat(this.blockParts), Infinity, (n, v) => {
            fields[n] = v;
          });
          f.fields = fields;
          this.blockParts = null;
        }
      }
      this.frames.push(f);
    }
    this.wake();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const resolve of w) resolve();
  }
}

/** A header block as HEADERS and as many CONTINUATION frames as 16 KiB frames need. */
export function headerFrames(stream: number, block: Buffer, endStream: boolean, maxFrame = 16_384): Buffer {
  const frames: Buffer[] = [];
  for (let from = 0; from < block.length || frames.length === 0; from += maxFrame) {
    const part = block.subarray(from, from + maxFrame);
    const first = frames.length === 0;
    const last = from + maxFrame >= block.length;
    frames.push(frame(first ? HEADERS : CONTINUATION, (last ? END_HEADERS : 0) | (first && endStream ? END_STREAM : 0), stream, part));
  }
  return Buffer.concat(frames);
}
