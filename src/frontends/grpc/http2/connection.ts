import type { Socket } from 'node:net';
import {
  ACK, CONTINUATION, DATA, DEFAULT_MAX_FRAME, DEFAULT_WINDOW, END_HEADERS, END_STREAM, ENHANCE_YOUR_CALM,
  FLOW_CONTROL_ERROR, FRAME_SIZE_ERROR, GOAWAY, HEADERS, MAX_WINDOW, NO_ERROR, PADDED, PING, PRIORITY, PRIORITY_FLAG,
  PROTOCOL_ERROR, PUSH_PROMISE, REFUSED_STREAM, RST_STREAM, SETTINGS, SETTINGS_HEADER_TABLE_SIZE,
  SETTINGS_INITIAL_WINDOW_SIZE, SETTINGS_MAX_FRAME_SIZE, STREAM_CLOSED, COMPRESSION_ERROR, WINDOW_UPDATE, frame, uint32Frame,
} from './frames.js';
import { BytesMemo } from '../../bytes-memo.js';
import { ConnectionError } from './connection-error.js';
import { checkSetting, goawayFrame, settingsFrames, type ConnectionSettings } from './connection-settings.js';
import { FrameOutput } from './frame-output.js';
import { FrameReader, type FrameSink } from './frame-reader.js';
import { CompressionError, FixedBlock, HeaderDecoder, HeaderEncoder } from './hpack.js';
import { Pings, pingAck } from './pings.js';
import { RequestFields } from './request-fields.js';
import { Http2Stream, type HeaderBlock, type StreamOwner } from './stream.js';

export type { ConnectionSettings } from './connection-settings.js';

/**
 * The server side of one HTTP/2 connection (RFC 9113) over a socket, with prior knowledge or ALPN "h2": frames
 * in and out, SETTINGS, flow control both ways, PING, GOAWAY and the streams' states. What it serves is
 * left to `onStream`. Everything a client can make it hold is bounded: streams by SETTINGS_MAX_CONCURRENT_STREAMS,
 * a header block by twice the header list limit, unparsed input by one frame, and output by pausing the
 * socket's reading while the client does not read what was sent.
 */

/** The largest frame this side accepts: the protocol's default, which it never raises. */
const MAX_FRAME = DEFAULT_MAX_FRAME;
/**
 * Streams the client may reset while the server still worked on them, beyond the number the server finished:
 * past it the client is opening streams only to cancel them (the "rapid reset" attack) and is sent away.
 */
const RESET_ALLOWANCE = 1000;

export class Http2Connection extends FrameOutput implements StreamOwner, FrameSink {
  sendWindow = DEFAULT_WINDOW;
  peerMaxFrame = DEFAULT_MAX_FRAME;
  private peerInitialWindow = DEFAULT_WINDOW;
  /** This side's HPACK state: the entries it put in the client's dynamic table. */
  private readonly encoder = new HeaderEncoder();
  private readonly streams = new Map<number, Http2Stream>();
  private readonly blocked = new Set<Http2Stream>();
  private readonly decoder = new HeaderDecoder();
  /** The last header block that left the HPACK table as it was, with its fields (see KnownBlock). */
  private readonly knownBlocks = new BytesMemo<KnownBlock>(KNOWN_BLOCK_BYTES, 1);
  private readonly fields: RequestFields;
  /** The highest stream the client opened, served or refused: a higher one is idle. */
  private lastStreamId = 0;
  /** Input not yet parsed, and the frames in it. */
  private readonly reader: FrameReader;
  /** A header block continuing in CONTINUATION frames. */
  private block: { id: number; endStream: boolean; parts: Buffer[]; length: number } | null = null;
  private recvWindow: number;
  private recvUnacked = 0;
  /** GOAWAY sent: streams above `servedUpTo`, the last stream then, are refused. */
  private goingAway = false;
  private servedUpTo = 0;
  private finished = 0;
  private resets = 0;
  private readonly pings = new Pings();
  /** Called once when the connection has closed. */
  onClose: (() => void) | null = null;

  constructor(
    socket: Socket,
    private readonly settings: ConnectionSettings,
    private readonly onStream: (stream: Http2Stream) => void,
  ) {
    super(socket);
    this.fields = new RequestFields();
    this.reader = new FrameReader(this, MAX_FRAME);
    this.recvWindow = settings.connectionWindow;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', ignore);
    socket.once('close', () => this.onSocketClose());
    this.write(settingsFrames(settings));
  }

  /** Sends a PING; `done` hears of its ACK, or of the connection closing first. */
  ping(done: (err: Error | null) => void): void {
    if (this.closed) {
      done(new Error('connection closed'));
      return;
    }
    this.write(this.pings.send(done));
  }

  /**
   * GOAWAY: streams the client opened so far are served, later ones refused; the connection closes once its
   * last stream has.
   */
  goaway(code = NO_ERROR): void {
    if (this.closed) return;
    if (!this.goingAway) {
      this.goingAway = true;
      this.servedUpTo = this.lastStreamId;
      this.write(goawayFrame(this.lastStreamId, code));
    }
    if (code !== NO_ERROR || this.streams.size === 0) this.socket.end();
  }

  destroy(): void {
    this.socket.destroy();
  }

  // StreamOwner (write() is FrameOutput's)

  outgoingBlock(block: HeaderBlock): Buffer {
    return block instanceof FixedBlock ? this.encoder.encode(block) : this.encoder.plain(block);
  }

  waitForWindow(stream: Http2Stream): void {
    this.blocked.add(stream);
  }

  release(stream: Http2Stream): void {
    this.blocked.delete(stream);
    if (this.streams.delete(stream.id)) this.finished++;
    if (this.goingAway && this.streams.size === 0) this.socket.end();
  }

  stopReceiving(stream: Http2Stream): void {
    this.write(uint32Frame(RST_STREAM, stream.id, NO_ERROR));
  }

  // Input

  private onData(chunk: Buffer): void {
    if (this.closed) return;
    const input = this.reader.take(chunk);
    if (input === null) return;
    // A client's HEADERS, its DATA and its END_STREAM often come in one read (in one frame or in two), and a
    // call can be answered before the last of them is handled: the socket is corked meanwhile, so that the
    // answers leave in one system call, at once.
    const socket = this.socket;
    this.reading = true;
    socket.cork();
    try {
      this.reader.parse(input);
    } catch (e) {
      if (e instanceof ConnectionError) this.fail(e.code);
      else if (e instanceof CompressionError) this.fail(COMPRESSION_ERROR);
      else throw e;
    } finally {
      this.reading = false;
      socket.uncork();
    }
  }

  notHttp2(): void {
    // An HTTP/1 client on the gRPC port, say: there is no frame to answer it with.
    this.socket.destroy();
  }

  frame(type: number, flags: number, id: number, payload: Buffer): void {
    if (this.block !== null && type !== CONTINUATION) throw new ConnectionError(PROTOCOL_ERROR, 'header block interrupted');
    switch (type) {
      case DATA: return this.onDataFrame(flags, id, payload);
      case HEADERS: return this.onHeaders(flags, id, payload);
      case CONTINUATION: return this.onContinuation(flags, id, payload);
      case PRIORITY: return this.onPriority(id, payload);
      case RST_STREAM: return this.onReset(id, payload);
      case SETTINGS: return this.onSettings(flags, id, payload);
      case PING: return this.onPing(flags, id, payload);
      case GOAWAY:
        if (id !== 0) throw new ConnectionError(PROTOCOL_ERROR, 'GOAWAY on a stream');
        return;
      case WINDOW_UPDATE: return this.onWindowUpdate(id, payload);
      case PUSH_PROMISE: throw new ConnectionError(PROTOCOL_ERROR, 'PUSH_PROMISE from a client');
      default: return; // Unknown frame types are ignored (RFC 9113 4.1).
    }
  }

  private onDataFrame(flags: number, id: number, payload: Buffer): void {
    if (id === 0) throw new ConnectionError(PROTOCOL_ERROR, 'DATA on stream 0');
    const length = payload.length;
    if (length > this.recvWindow) throw new ConnectionError(FLOW_CONTROL_ERROR, 'DATA beyond the connection window');
    this.recvWindow -= length;
    this.recvUnacked += length;
    if (this.recvUnacked >= this.settings.connectionWindow >>> 1) {
      this.write(uint32Frame(WINDOW_UPDATE, 0, this.recvUnacked));
      this.recvWindow += this.recvUnacked;
      this.recvUnacked = 0;
    }
    const stream = this.streams.get(id);
    if (stream === undefined) {
      if (id > this.lastStreamId) throw new ConnectionError(PROTOCOL_ERROR, 'DATA on an idle stream');
      return; // A stream this side closed or reset: what was in flight is dropped.
    }
    if (stream.remoteEnded) return this.resetStream(stream, STREAM_CLOSED);
    if (length > stream.recvWindow) return this.resetStream(stream, FLOW_CONTROL_ERROR);
    stream.recvWindow -= length;
    const data = unpad(flags, payload);
    const last = (flags & END_STREAM) !== 0;
    if (data.length > 0) stream.deliver(data, last);
    if (last) {
      stream.remoteEnd();
      return;
    }
    stream.recvUnacked += length;
    if (stream.recvUnacked >= this.settings.streamWindow >>> 1 && !stream.localEnded) {
      this.write(uint32Frame(WINDOW_UPDATE, id, stream.recvUnacked));
      stream.recvWindow += stream.recvUnacked;
      stream.recvUnacked = 0;
    }
  }

  private onHeaders(flags: number, id: number, payload: Buffer): void {
    if (id === 0) throw new ConnectionError(PROTOCOL_ERROR, 'HEADERS on stream 0');
    let fragment = unpad(flags, payload);
    if ((flags & PRIORITY_FLAG) !== 0) {
      if (fragment.length < 5) throw new ConnectionError(FRAME_SIZE_ERROR, 'HEADERS too short for its priority');
      fragment = fragment.subarray(5);
    }
    const endStream = (flags & END_STREAM) !== 0;
    if ((flags & END_HEADERS) !== 0) this.headerBlock(id, endStream, fragment);
    else this.block = { id, endStream, parts: [fragment], length: this.checkBlock(fragment.length) };
  }

  private onContinuation(flags: number, id: number, payload: Buffer): void {
    const block = this.block;
    if (block === null || block.id !== id) throw new ConnectionError(PROTOCOL_ERROR, 'CONTINUATION without its HEADERS');
    block.parts.push(payload);
    block.length = this.checkBlock(block.length + payload.length);
    if ((flags & END_HEADERS) === 0) return;
    this.block = null;
    this.headerBlock(id, block.endStream, Buffer.concat(block.parts, block.length));
  }

  /** A header block longer than twice the header list limit cannot decode within it: the client is flooding. */
  private checkBlock(length: number): number {
    if (length > 2 * this.settings.maxHeaderListBytes) throw new ConnectionError(ENHANCE_YOUR_CALM, 'header block too large');
    return length;
  }

  private headerBlock(id: number, endStream: boolean, block: Buffer): void {
    // Every block is decoded, refused or not, to keep the connection's HPACK table in step with the client's;
    // one that repeats the last block and leaves the table as it was is not decoded again (see KnownBlock).
    const fields = this.knownBlocks.find(block, 0, block.byteLength, this.decoder.tableChanges) ?? this.decodeBlock(block);
    const size = fields.size;
    if (id <= this.lastStreamId) {
      this.trailers(id, endStream);
      return;
    }
    if ((id & 1) === 0) throw new ConnectionError(PROTOCOL_ERROR, 'a client stream with an even identifier');
    // A refused stream is no longer idle: its DATA, already in flight, is dropped like a closed stream's.
    this.lastStreamId = id;
    if (this.goingAway && id > this.servedUpTo) {
      this.write(uint32Frame(RST_STREAM, id, REFUSED_STREAM));
      return;
    }
    if (this.streams.size >= this.settings.maxConcurrentStreams) {
      this.write(uint32Frame(RST_STREAM, id, REFUSED_STREAM));
      this.countReset();
      return;
    }
    if (!fields.valid) {
      this.write(uint32Frame(RST_STREAM, id, PROTOCOL_ERROR));
      return;
    }
    const stream = new Http2Stream(this, id, fields.headers, size, this.peerInitialWindow, this.settings.streamWindow);
    this.streams.set(id, stream);
    if (endStream) stream.remoteEnded = true;
    this.onStream(stream);
    if (endStream && !stream.localEnded) stream.remoteEnd();
  }

  /** The fields of a block, decoded; remembered when decoding it left the table as it was. */
  private decodeBlock(block: Buffer): KnownBlock {
    const fields = this.fields;
    fields.start();
    const before = this.decoder.tableChanges;
    const size = this.decoder.decode(block, this.settings.maxHeaderListBytes, fields.sink);
    const decoded: KnownBlock = { size, valid: fields.valid(), headers: fields.take() };
    if (this.decoder.tableChanges === before && this.knownBlocks.wants(block.byteLength)) {
      Object.freeze(decoded.headers);
      this.knownBlocks.keep(block, 0, block.byteLength, before, decoded);
    }
    return decoded;
  }

  /** A second header block on an open stream: trailers, which must end the stream; gRPC servers ignore their fields. */
  private trailers(id: number, endStream: boolean): void {
    const stream = this.streams.get(id);
    if (stream === undefined || stream.remoteEnded) return;
    if (!endStream) return this.resetStream(stream, PROTOCOL_ERROR);
    stream.remoteEnd();
  }

  private onPriority(id: number, payload: Buffer): void {
    if (id === 0) throw new ConnectionError(PROTOCOL_ERROR, 'PRIORITY on stream 0');
    if (payload.length !== 5) throw new ConnectionError(FRAME_SIZE_ERROR, 'PRIORITY of the wrong size');
  }

  private onReset(id: number, payload: Buffer): void {
    if (id === 0) throw new ConnectionError(PROTOCOL_ERROR, 'RST_STREAM on stream 0');
    if (payload.length !== 4) throw new ConnectionError(FRAME_SIZE_ERROR, 'RST_STREAM of the wrong size');
    if (id > this.lastStreamId) throw new ConnectionError(PROTOCOL_ERROR, 'RST_STREAM on an idle stream');
    const stream = this.streams.get(id);
    if (stream === undefined) return;
    this.streams.delete(id);
    this.blocked.delete(stream);
    stream.abort();
    this.countReset();
  }

  private countReset(): void {
    if (++this.resets > this.finished + RESET_ALLOWANCE) throw new ConnectionError(ENHANCE_YOUR_CALM, 'too many streams reset or refused');
  }

  private onSettings(flags: number, id: number, payload: Buffer): void {
    if (id !== 0) throw new ConnectionError(PROTOCOL_ERROR, 'SETTINGS on a stream');
    if ((flags & ACK) !== 0) {
      if (payload.length !== 0) throw new ConnectionError(FRAME_SIZE_ERROR, 'SETTINGS ACK with a payload');
      return;
    }
    if (payload.length % 6 !== 0) throw new ConnectionError(FRAME_SIZE_ERROR, 'SETTINGS of the wrong size');
    for (let at = 0; at < payload.length; at += 6) this.setting(payload.readUInt16BE(at), payload.readUInt32BE(at + 2));
    this.write(frame(SETTINGS, ACK, 0, null));
    if (this.blocked.size > 0) this.flushBlocked();
  }

  private setting(key: number, value: number): void {
    checkSetting(key, value);
    if (key === SETTINGS_INITIAL_WINDOW_SIZE) this.peerWindow(value);
    else if (key === SETTINGS_MAX_FRAME_SIZE) this.peerMaxFrame = value;
    // RFC 7541 4.2: once the client's decoder has a smaller table, this side's next block starts with a dynamic
    // table size update (nghttp2 refuses a block without one). The other settings are advisory.
    else if (key === SETTINGS_HEADER_TABLE_SIZE) this.encoder.peerTableSize(value);
  }

  /** SETTINGS_INITIAL_WINDOW_SIZE changes every open stream's send window by the difference. */
  private peerWindow(value: number): void {
    const delta = value - this.peerInitialWindow;
    this.peerInitialWindow = value;
    for (const s of this.streams.values()) {
      s.sendWindow += delta;
      if (s.sendWindow > MAX_WINDOW) throw new ConnectionError(FLOW_CONTROL_ERROR, 'a stream window above 2^31-1');
      if (delta > 0 && !s.localEnded) this.blocked.add(s);
    }
  }

  private onPing(flags: number, id: number, payload: Buffer): void {
    if (id !== 0) throw new ConnectionError(PROTOCOL_ERROR, 'PING on a stream');
    if (payload.length !== 8) throw new ConnectionError(FRAME_SIZE_ERROR, 'PING of the wrong size');
    if ((flags & ACK) === 0) this.write(pingAck(payload));
    else this.pings.acked(payload);
  }

  private onWindowUpdate(id: number, payload: Buffer): void {
    if (payload.length !== 4) throw new ConnectionError(FRAME_SIZE_ERROR, 'WINDOW_UPDATE of the wrong size');
    const increment = payload.readUInt32BE(0) & 0x7fffffff;
    if (id === 0) {
      if (increment === 0) throw new ConnectionError(PROTOCOL_ERROR, 'WINDOW_UPDATE of 0');
      this.sendWindow += increment;
      if (this.sendWindow > MAX_WINDOW) throw new ConnectionError(FLOW_CONTROL_ERROR, 'connection window above 2^31-1');
      if (this.blocked.size > 0) this.flushBlocked();
      return;
    }
    const stream = this.streams.get(id);
    if (stream === undefined) {
      if (id > this.lastStreamId) throw new ConnectionError(PROTOCOL_ERROR, 'WINDOW_UPDATE on an idle stream');
      return;
    }
    if (increment === 0) return this.resetStream(stream, PROTOCOL_ERROR);
    stream.sendWindow += increment;
    if (stream.sendWindow > MAX_WINDOW) return this.resetStream(stream, FLOW_CONTROL_ERROR);
    if (this.blocked.has(stream)) {
      this.blocked.delete(stream);
      stream.flush();
    }
  }

  private flushBlocked(): void {
    const streams = [...this.blocked];
    this.blocked.clear();
    for (const s of streams) {
      if (this.sendWindow <= 0) {
        this.blocked.add(s);
        continue;
      }
      s.flush();
    }
  }

  /** A stream error (RFC 9113 5.4.2): RST_STREAM, and the stream's owner hears it as an abort. */
  private resetStream(stream: Http2Stream, code: number): void {
    this.write(uint32Frame(RST_STREAM, stream.id, code));
    this.streams.delete(stream.id);
    this.blocked.delete(stream);
    stream.abort();
  }

  /** A connection error (RFC 9113 5.4.1): GOAWAY with the code, then the connection closes. */
  private fail(code: number): void {
    if (this.closed) return;
    this.write(goawayFrame(this.lastStreamId, code));
    this.goingAway = true;
    this.closed = true;
    this.socket.end();
    this.closeStreams();
  }

  private onSocketClose(): void {
    this.closed = true;
    this.closeStreams();
    this.pings.closeAll();
    this.onClose?.();
  }

  private closeStreams(): void {
    const streams = [...this.streams.values()];
    this.streams.clear();
    this.blocked.clear();
    for (const s of streams) s.abort();
  }
}

/** A DATA or HEADERS payload without its padding (RFC 9113 6.1). */
function unpad(flags: number, payload: Buffer): Buffer {
  if ((flags & PADDED) === 0) return payload;
  if (payload.length === 0) throw new ConnectionError(PROTOCOL_ERROR, 'padded frame without its pad length');
  const pad = payload[0]!;
  if (pad >= payload.length) throw new ConnectionError(PROTOCOL_ERROR, 'padding longer than the frame');
  return payload.subarray(1, payload.length - pad);
}

function ignore(): void {}

/** Header blocks longer than this are not remembered (see KnownBlock). */
export const KNOWN_BLOCK_BYTES = 1024;

/**
 * What a header block decoded to. A client sends the same block for every call of the same method: grpc-js and
 * grpcio index every field, nghttp2 clients send the path as a literal never indexed, so once their fields are
 * in the table each call's block is the same bytes. A block whose decoding added nothing to the HPACK table
 * decodes to the same fields as long as the table has not changed since, so the next block is looked up by its
 * bytes and the table's state (one memcmp, bytes-memo.ts) before it is decoded and checked. Its fields are
 * shared by the streams that repeat it, so they are frozen.
 */
interface KnownBlock {
  readonly size: number;
  readonly valid: boolean;
  readonly headers: Record<string, string>;
}
