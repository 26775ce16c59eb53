import { DATA, END_HEADERS, END_STREAM, FRAME_HEADER, HEADERS, CONTINUATION, writeFrameHeader } from './frames.js';
import type { FixedBlock } from './hpack.js';

/** A header block to send: fields the connection's encoder may index, or a block encoded without indexing. */
export type HeaderBlock = FixedBlock | Buffer;

/** What a stream's owner hears from the client's side. */
export interface StreamHandler {
  /**
   * A piece of the request body (one DATA frame's payload, padding removed); `last` when the frame also ended
   * the client's side (onEnd follows at once).
   */
  onData(chunk: Buffer, last: boolean): void;
  /** The client half-closed: no more data comes. */
  onEnd(): void;
  /** The stream closed before this side ended it: the client reset it or its connection went. */
  onAbort(): void;
}

/** What a stream needs of its connection. */
export interface StreamOwner {
  /** Octets the connection may still send (the peer's connection window). */
  sendWindow: number;
  /** The peer's SETTINGS_MAX_FRAME_SIZE. */
  readonly peerMaxFrame: number;
  write(out: Buffer): void;
  /**
   * A header block encoded as it must leave now, by the connection's HPACK state: the caller writes it before
   * any other block is encoded.
   */
  outgoingBlock(block: HeaderBlock): Buffer;
  /** The stream has DATA waiting for a window update. */
  waitForWindow(stream: Http2Stream): void;
  /** The stream has closed on this side (ended or reset): the connection forgets it. */
  release(stream: Http2Stream): void;
  /** This side ended the stream before the client half-closed: RST_STREAM(NO_ERROR) asks it to stop sending. */
  stopReceiving(stream: Http2Stream): void;
}

/**
 * One request stream (RFC 9113 5.1) as the server sees it: the request's header fields, DATA in, and
 * HEADERS / DATA / trailing HEADERS out within the peer's flow-control windows. Response DATA that does not
 * fit the windows waits in the stream, and its trailers after it.
 */
export class Http2Stream {
  /** Octets this side may still send on the stream. */
  sendWindow: number;
  /** Octets the client may still send before a WINDOW_UPDATE (this side's receive window). */
  recvWindow: number;
  /** Octets received and handed on since the last stream WINDOW_UPDATE. */
  recvUnacked = 0;
  /** The client sent END_STREAM. */
  remoteEnded = false;
  /** This side sent END_STREAM or RST_STREAM, or the stream was aborted. */
  localEnded = false;
  private handler: StreamHandler | null = null;
  private queue: Buffer[] | null = null;
  private queuedTrailers: HeaderBlock | null = null;

  constructor(
    private readonly owner: StreamOwner,
    readonly id: number,
    /** Header fields by name; repeated fields joined by ', '. */
    readonly headers: Record<string, string>,
    /** Their size as SETTINGS_MAX_HEADER_LIST_SIZE counts it, also when it was over the limit and fields were dropped. */
    readonly headerListSize: number,
    sendWindow: number,
    recvWindow: number,
  ) {
    this.sendWindow = sendWindow;
    this.recvWindow = recvWindow;
  }

  /** Delivers the client's side to `handler`: attached when the stream is handed out, before any DATA can come. */
  attach(handler: StreamHandler): void {
    this.handler = handler;
  }

  /** The response's HEADERS; `endStream` for a response without body or trailers. */
  respond(block: HeaderBlock, endStream: boolean): void {
    if (this.localEnded) return;
    this.owner.write(this.headerFrames(this.owner.outgoingBlock(block), endStream));
    if (endStream) this.finish();
  }

  /** Response DATA, sent as the windows allow. */
  write(data: Buffer): void {
    if (this.localEnded || data.length === 0) return;
    if (this.queue !== null) {
      this.queue.push(data);
      return;
    }
    const sent = this.sendData(data);
    if (sent < data.length) this.wait([data.subarray(sent)]);
  }

  /** The trailing HEADERS, which end the stream once every DATA before them is sent. */
  end(trailers: HeaderBlock): void {
    if (this.localEnded) return;
    if (this.queue !== null) {
      this.queuedTrailers = trailers;
      return;
    }
    this.owner.write(this.headerFrames(this.owner.outgoingBlock(trailers), true));
    this.finish();
  }

  /** HEADERS, DATA and trailers of a whole response, in one write when the windows take the DATA at once. */
  respondWhole(headBlock: HeaderBlock, data: Buffer, trailerBlock: HeaderBlock): void {
    if (this.localEnded) return;
    const owner = this.owner;
    const n = data.length;
    if (this.queue !== null || n > this.sendWindow || n > owner.sendWindow) {
      this.respond(headBlock, false);
      this.write(data);
      this.end(trailerBlock);
      return;
    }
    // Encoded in the order they leave. The windows take the DATA, so all of it leaves now, after the headers.
    const head = owner.outgoingBlock(headBlock);
    const trailers = owner.outgoingBlock(trailerBlock);
    const maxFrame = owner.peerMaxFrame;
    if (head.length > maxFrame || trailers.length > maxFrame) {
      owner.write(this.headerFrames(head, false));
      this.sendData(data);
      owner.write(this.headerFrames(trailers, true));
      this.finish();
      return;
    }
    const frames = n === 0 ? 0 : Math.ceil(n / maxFrame);
    const out = Buffer.allocUnsafe(FRAME_HEADER * (2 + frames) + head.length + n + trailers.length);
    writeFrameHeader(out, 0, head.length, HEADERS, END_HEADERS, this.id);
    let at = FRAME_HEADER + head.copy(out, FRAME_HEADER);
    for (let from = 0; from < n; from += maxFrame) {
      const length = Math.min(maxFrame, n - from);
      writeFrameHeader(out, at, length, DATA, 0, this.id);
      at += FRAME_HEADER + data.copy(out, at + FRAME_HEADER, from, from + length);
    }
    writeFrameHeader(out, at, trailers.length, HEADERS, END_HEADERS | END_STREAM, this.id);
    trailers.copy(out, at + FRAME_HEADER);
    this.sendWindow -= n;
    owner.sendWindow -= n;
    owner.write(out);
    this.finish();
  }

  /** Sends queued DATA (and then the trailers) as far as the windows now allow. */
  flush(): void {
    const queue = this.queue;
    if (queue === null || this.localEnded) return;
    while (queue.length > 0) {
      const head = queue[0]!;
      const sent = this.sendData(head);
      if (sent < head.length) {
        queue[0] = head.subarray(sent);
        this.owner.waitForWindow(this);
        return;
      }
      queue.shift();
    }
    this.queue = null;
    const trailers = this.queuedTrailers;
    if (trailers !== null) {
      this.queuedTrailers = null;
      this.end(trailers);
    }
  }

  // The connection's side.

  deliver(chunk: Buffer, last: boolean): void {
    this.handler?.onData(chunk, last);
  }

  remoteEnd(): void {
    this.remoteEnded = true;
    this.handler?.onEnd();
  }

  /** The client reset the stream or the connection went: nothing more is sent, and the owner hears of it. */
  abort(): void {
    if (this.localEnded) return;
    this.localEnded = true;
    this.queue = null;
    this.handler?.onAbort();
  }

  /** DATA frames from the start of `data` within the windows; the number of octets sent. */
  private sendData(data: Buffer): number {
    const owner = this.owner;
    const allowed = Math.min(data.length, this.sendWindow, owner.sendWindow);
    if (allowed <= 0) return 0;
    const maxFrame = owner.peerMaxFrame;
    const frames = Math.ceil(allowed / maxFrame);
    const out = Buffer.allocUnsafe(FRAME_HEADER * frames + allowed);
    let at = 0;
    for (let sent = 0; sent < allowed; sent += maxFrame) {
      const length = Math.min(maxFrame, allowed - sent);
      writeFrameHeader(out, at, length, DATA, 0, this.id);
      at += FRAME_HEADER + data.copy(out, at + FRAME_HEADER, sent, sent + length);
    }
    this.sendWindow -= allowed;
    owner.sendWindow -= allowed;
    owner.write(out);
    return allowed;
  }

  private wait(rest: Buffer[]): void {
    this.queue = rest;
    this.owner.waitForWindow(this);
  }

  /** An encoded header block as HEADERS and, past the peer's frame size, CONTINUATION frames. */
  private headerFrames(block: Buffer, endStream: boolean): Buffer {
    const maxFrame = this.owner.peerMaxFrame;
    const frames = Math.max(1, Math.ceil(block.length / maxFrame));
    const out = Buffer.allocUnsafe(FRAME_HEADER * frames + block.length);
    let at = 0;
    for (let i = 0, from = 0; i < frames; i++, from += maxFrame) {
      const length = Math.min(maxFrame, block.length - from);
      const last = i === frames - 1;
      const type = i === 0 ? HEADERS : CONTINUATION;
      const flags = (last ? END_HEADERS : 0) | (i === 0 && endStream ? END_STREAM : 0);
      writeFrameHeader(out, at, length, type, flags, this.id);
      at += FRAME_HEADER + block.copy(out, at + FRAME_HEADER, from, from + length);
    }
    return out;
  }

  private finish(): void {
    this.localEnded = true;
    if (!this.remoteEnded) this.owner.stopReceiving(this);
    this.owner.release(this);
  }
}
