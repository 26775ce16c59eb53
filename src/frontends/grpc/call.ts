import { ACCEPT_ENCODING, compress, decompress, type ResponseCompression } from './compression.js';
import { Status, type CallStatus } from './codes.js';
import { frame, MessageReader } from './framing.js';
import { encodeBlock, FixedBlock } from './http2/hpack.js';
import type { Http2Stream, StreamHandler } from './http2/stream.js';

/**
 * One gRPC call on its HTTP/2 stream (PROTOCOL-HTTP2.md): request messages in, response headers, messages and
 * the status trailers out. A call ends once: by this side's status, by its deadline, or by the client's
 * RST_STREAM (or its connection going away), which cancels it.
 */

/** What calls share: set once per server. */
export interface CallSettings {
  /** The largest message accepted, compressed or not, checked from its length prefix. */
  readonly maxMessageBytes: number;
  /** The most bytes a compressed message may inflate to. */
  readonly maxDecompressedBytes: number;
  /** A thrown value as the status to end with (the frontend's one table). */
  errorStatus(e: unknown): CallStatus;
}

/**
 * A call's metadata as the frontend reads it: a key's first text value, and every key with its first value,
 * text or, for a `-bin` key, the bytes its base64 stands for.
 */
export interface Metadata {
  get(key: string): string | undefined;
  getMap(): Record<string, string | Buffer>;
}

/** Headers that carry the protocol itself, not the application's metadata. */
const TRANSPORT_HEADERS = new Set(['content-type', 'te', 'grpc-timeout', 'grpc-encoding', 'grpc-accept-encoding', 'accept-encoding']);

/** The header blocks every call sends alike, indexed by each connection's encoder after the first (hpack.ts). */
const RESPONSE_FIELDS: ReadonlyArray<readonly [string, string]> = [
  [':status', '200'],
  ['content-type', 'application/grpc'],
  ['grpc-accept-encoding', ACCEPT_ENCODING],
];
const RESPONSE_HEAD = new FixedBlock(RESPONSE_FIELDS);
const COMPRESSED_HEADS: Readonly<Record<string, FixedBlock>> = {
  gzip: new FixedBlock([...RESPONSE_FIELDS, ['grpc-encoding', 'gzip']]),
  deflate: new FixedBlock([...RESPONSE_FIELDS, ['grpc-encoding', 'deflate']]),
};
const OK_TRAILERS = new FixedBlock([['grpc-status', '0']]);

export class ServerCall implements Metadata, StreamHandler {
  /** True once the call has ended, either way: nothing more is sent. */
  ended = false;
  /** The request's header fields. */
  readonly headers: Readonly<Record<string, string>>;
  private headersSent = false;
  private timer: NodeJS.Timeout | null = null;
  private cancelHandler: (() => void) | null = null;
  private endedHandler: (() => void) | null = null;
  private onMessage: ((message: Buffer, last: boolean) => void) | null = null;
  private onHalfClose: (() => void) | null = null;
  private reader: MessageReader | null = null;
  /** The DATA being read ended the client's side. */
  private lastChunk = false;
  /** Set while a compressed message inflates: later messages and the half-close wait their turn. */
  private pending: Promise<void> | null = null;
  /** How responses are compressed, when they are. */
  private compression: ResponseCompression | null = null;
  /** Set while a response compresses: later responses and the status wait their turn. */
  private sending: Promise<void> | null = null;

  constructor(
    private readonly stream: Http2Stream,
    private readonly settings: CallSettings,
    /** The request's grpc-encoding, for messages marked compressed. */
    private readonly encoding: string,
  ) {
    this.headers = stream.headers;
    stream.attach(this);
  }

  /** The value of a metadata key (a text key, in lower case); a key sent twice has its values joined by ", ". */
  get(key: string): string | undefined {
    return this.headers[key];
  }

  getMap(): Record<string, string | Buffer> {
    const out: Record<string, string | Buffer> = {};
    const headers = this.headers;
    for (const key in headers) {
      if (key.charCodeAt(0) === 0x3a || TRANSPORT_HEADERS.has(key)) continue;
      const v = headers[key]!;
      out[key] = key.endsWith('-bin') ? Buffer.from(v.split(',')[0]!, 'base64') : v;
    }
    return out;
  }

  /** Ends the call with DEADLINE_EXCEEDED after `ms`, cancelling its work. */
  setDeadline(ms: number): void {
    this.timer = setTimeout(expire, ms, this);
  }

  /** Called once when the call has ended, whichever way (an API key's quota counts it in flight until then). */
  onEnded(handler: () => void): void {
    this.endedHandler = handler;
  }

  private markEnded(): void {
    this.ended = true;
    const h = this.endedHandler;
    if (h !== null) {
      this.endedHandler = null;
      h();
    }
  }

  /** Called once if the call is cancelled (client, connection or deadline) before it ended. */
  onCancel(handler: () => void): void {
    this.cancelHandler = handler;
  }

  /**
   * Starts delivering the request messages in order, then the half-close (the client's END_STREAM). A message
   * is `last` when the client's END_STREAM came with it, so the half-close is known to follow it; a client that
   * half-closes with an empty DATA frame of its own sends no message marked last.
   */
  read(onMessage: (message: Buffer, last: boolean) => void, onHalfClose: () => void): void {
    this.onMessage = onMessage;
    this.onHalfClose = onHalfClose;
    this.reader = new MessageReader(this.settings.maxMessageBytes, (m, compressed, endsChunk) => this.received(m, compressed, this.lastChunk && endsChunk));
  }

  /** Compresses the call's responses from now on (--grpc-infer-response-compression-level). */
  compressResponses(c: ResponseCompression | null): void {
    this.compression = c;
  }

  /** A response message (already framed); the response headers go first. */
  write(framed: Buffer): void {
    if (this.ended) return;
    const c = this.compression;
    if (c === null) {
      this.send(framed);
      return;
    }
    const compressed = compress(c, framed.subarray(5));
    this.sending = (this.sending ?? Promise.resolve()).then(async () => {
      const m = await compressed;
      if (!this.ended) this.send(frame(m, true));
    }).catch((e: unknown) => this.fail(e));
  }

  private send(framed: Buffer): void {
    if (!this.headersSent) {
      this.headersSent = true;
      const c = this.compression;
      this.stream.respond(c === null ? RESPONSE_HEAD : COMPRESSED_HEADS[c.encoding]!, false);
    }
    this.stream.write(framed);
  }

  /** The one response of a unary call and status OK. */
  respond(framed: Buffer): void {
    if (this.compression !== null || this.headersSent || this.ended) {
      this.write(framed);
      this.end(OK);
      return;
    }
    // The usual case in one go: headers, the message and the OK trailers.
    this.markEnded();
    if (this.timer !== null) clearTimeout(this.timer);
    this.headersSent = true;
    this.stream.respondWhole(RESPONSE_HEAD, framed, OK_TRAILERS);
  }

  /** Ends the call with `status`: trailers after the response, or a trailers-only response when nothing was sent. */
  end(status: CallStatus): void {
    if (this.ended) return;
    const sending = this.sending;
    if (sending !== null && status.code === Status.OK) {
      // Responses still compressing go first, for every OK end that comes meanwhile alike.
      void sending.then(() => {
        if (this.sending === sending) this.sending = null;
        this.end(status);
      });
      return;
    }
    // A failure ends the call at once.
    this.sending = null;
    this.markEnded();
    if (this.timer !== null) clearTimeout(this.timer);
    if (this.headersSent) this.stream.end(status.code === Status.OK ? OK_TRAILERS : encodeBlock(statusFields(status)));
    else this.stream.respond(encodeBlock([...RESPONSE_FIELDS, ...statusFields(status)]), true);
  }

  /** Ends the call with the status of a thrown value. */
  fail(e: unknown): void {
    this.end(this.settings.errorStatus(e));
  }

  onAbort(): void {
    if (!this.ended) this.cancel(null);
  }

  /** The client cancelled, the connection went, or the deadline passed: the work for the call is abandoned. */
  cancel(status: CallStatus | null): void {
    if (this.ended) return;
    if (status !== null) this.end(status);
    else {
      this.markEnded();
      if (this.timer !== null) clearTimeout(this.timer);
    }
    const handler = this.cancelHandler;
    this.cancelHandler = null;
    handler?.();
  }

  onData(data: Buffer, last: boolean): void {
    if (this.ended || this.reader === null) return;
    this.lastChunk = last;
    try {
      this.reader!.push(data);
    } catch (e) {
      this.fail(e);
    }
  }

  onEnd(): void {
    if (this.ended || this.reader === null) return;
    if (!this.reader!.idle) {
      this.end({ code: Status.INTERNAL, details: 'Incomplete message: the stream ended inside a message' });
      return;
    }
    if (this.pending === null) this.onHalfClose!();
    else this.pending = this.pending.then(() => {
      if (!this.ended) this.onHalfClose!();
    });
  }

  private received(message: Buffer, compressed: boolean, last: boolean): void {
    if (!compressed && this.pending === null) {
      this.onMessage!(message, last);
      return;
    }
    const encoding = this.encoding;
    if (compressed && encoding !== 'gzip' && encoding !== 'deflate') {
      this.end({ code: Status.INTERNAL, details: 'Compressed message received without a grpc-encoding that compresses' });
      return;
    }
    const settings = this.settings;
    const inflated = compressed ? decompress(encoding as 'gzip' | 'deflate', message, settings.maxDecompressedBytes) : null;
    this.pending = (this.pending ?? Promise.resolve()).then(async () => {
      const m = inflated === null ? message : await inflated;
      if (!this.ended) this.onMessage!(m, last);
    }).catch((e: unknown) => this.fail(e));
  }
}

const OK: CallStatus = { code: Status.OK, details: '' };

function statusFields(status: CallStatus): Array<[string, string]> {
  const fields: Array<[string, string]> = [['grpc-status', String(status.code)]];
  if (status.details !== '') fields.push(['grpc-message', percentEncode(status.details)]);
  if (status.retryAfterSecs !== undefined) fields.push(['retry-after', String(status.retryAfterSecs)]);
  return fields;
}

/**
 * grpc-message as the spec writes it: UTF-8, with every byte outside printable ASCII (0x20-0x7E) and '%'
 * itself as %XX.
 */
export function percentEncode(text: string): string {
  let plain = true;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x25) {
      plain = false;
      break;
    }
  }
  if (plain) return text;
  let out = '';
  for (const b of Buffer.from(text, 'utf8')) {
    out += b < 0x20 || b > 0x7e || b === 0x25 ? `%${b.toString(16).toUpperCase().padStart(2, '0')}` : String.fromCharCode(b);
  }
  return out;
}

const DEADLINE: CallStatus = { code: Status.DEADLINE_EXCEEDED, details: 'Deadline Exceeded' };

function expire(call: ServerCall): void {
  call.cancel(DEADLINE);
}
