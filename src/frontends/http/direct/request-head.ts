import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import { BytesMemo } from '../../bytes-memo.js';

/**
 * The head of a plain HTTP/1.1 request, as the direct path reads it: GET or POST, an origin-form target, one
 * Host, each header at most once, the body framed by Content-Length alone. The shapes of `headers` and
 * `rawHeaders` are node:http's (names lower-cased in the one, as sent in the other), so a handler reads a
 * request the same way on either path.
 */
export interface RequestHead {
  readonly method: 'GET' | 'POST';
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly rawHeaders: string[];
  /** The body's length in bytes (0 when no Content-Length was sent). */
  readonly contentLength: number;
  /** The head's length in bytes, its closing empty line included. */
  readonly headLength: number;
  /** The connection it came on. */
  readonly socket: Socket;
  /** When its first byte arrived (process.hrtime), set by the connection only while requests are traced. */
  receivedAt?: bigint;
}

/**
 * What parseRequestHead found: a head, NEEDS_MORE when its end has not arrived yet, or NOT_PLAIN when the
 * request is anything else. A request that is not plain is not refused here: node:http reads it, with its own
 * parser and every rule of RFC 9112, so this parser only ever has to recognise what it fully understands.
 */
export const NEEDS_MORE = 0;
export const NOT_PLAIN = 1;
export type HeadResult = RequestHead | typeof NEEDS_MORE | typeof NOT_PLAIN;

/** node:http's default --max-http-header-size: a longer head goes to node:http, which answers 431. */
export const MAX_HEAD_BYTES = 16 * 1024;
/** More header lines than any client of an inference server sends; more go to node:http. */
export const MAX_HEADERS = 64;

const END_OF_HEAD = Buffer.from('\r\n\r\n');
const VERSION = ' HTTP/1.1';
// RFC 9110's token for names; for targets the visible ASCII characters; for values the visible characters,
// space, tab and obs-text. Anything else (a bare CR or LF, NUL, DEL) makes the request not plain.
const HEADER_LINES = /^(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+:[\t\x20-\x7e\x80-\xff]*\r\n)*$/;
const TARGET = /^\/[\x21-\x7e]*$/;
const CONTENT_LENGTH = /^ *[0-9]{1,15} *$/;

/**
 * Reads the head at the start of `buf`, which came on `socket`. `from` is how far an earlier call already looked for the head's end
 * without finding it, so that a head arriving a byte at a time is searched once, not once per byte.
 */
export function parseRequestHead(buf: Buffer, socket: Socket, from = 0): HeadResult {
  const end = buf.indexOf(END_OF_HEAD, from > 3 ? from - 3 : 0);
  if (end === -1) return buf.byteLength >= MAX_HEAD_BYTES || looseLineEnd(buf, from) ? NOT_PLAIN : NEEDS_MORE;
  if (end + 4 > MAX_HEAD_BYTES) return NOT_PLAIN;
  return readHead(buf.toString('latin1', 0, end + 2), socket, end + 4);
}

/**
 * Whether the bytes from `from` on hold a line ended by a bare LF, or a CR followed by anything but LF. Such a
 * head never shows the CRLF CRLF that ends a plain one, while llhttp refuses it as soon as it meets the bare
 * ending (400): without this the client, waiting for that answer, would hold its connection until the timeout.
 * Only bytes not looked at before are searched (the CR one back, whose next byte had not come then).
 */
function looseLineEnd(buf: Buffer, from: number): boolean {
  for (let i = buf.indexOf(LF, from); i !== -1; i = buf.indexOf(LF, i + 1)) if (i === 0 || buf[i - 1] !== CR) return true;
  const last = buf.byteLength - 1;
  for (let i = buf.indexOf(CR, from > 0 ? from - 1 : 0); i !== -1 && i < last; i = buf.indexOf(CR, i + 1)) if (buf[i + 1] !== LF) return true;
  return false;
}

const CR = 13;
const LF = 10;

/**
 * Whether a head whose end has not arrived already cannot be plain, from its lines so far (and the method of an
 * unfinished first line). node:http's parser refuses most such heads as soon as it meets the fault (one with both
 * framings as soon as it has read both names), so the connection goes to it then, not at the head's end or timeout.
 */
export function notPlainSoFar(buf: Buffer, socket: Socket): boolean {
  const last = buf.lastIndexOf(CRLF);
  if (last === -1) {
    const start = buf.toString('latin1', 0, Math.min(buf.byteLength, 5));
    return !(start.startsWith('GET ') || start.startsWith('POST ') || 'GET '.startsWith(start) || 'POST '.startsWith(start));
  }
  return readHead(buf.toString('latin1', 0, last + 2), socket, 0, false) === NOT_PLAIN;
}

const CRLF = Buffer.from('\r\n');

/**
 * Reads `head`, the request line and header lines of a head, each ending in CRLF. `whole` is false for the lines
 * of a head not yet ended: then the rules that need every line (Host, the framing a method needs) wait, and a head
 * plain so far is NEEDS_MORE.
 */
function readHead(head: string, socket: Socket, headLength: number, whole = true): HeadResult {
  const lineEnd = head.indexOf('\r\n');
  const space = head.indexOf(' ');
  if (space === -1 || space > lineEnd || head.slice(lineEnd - VERSION.length, lineEnd) !== VERSION) return NOT_PLAIN;
  const method = head.slice(0, space);
  if (method !== 'GET' && method !== 'POST') return NOT_PLAIN;
  const url = head.slice(space + 1, lineEnd - VERSION.length);
  if (!TARGET.test(url)) return NOT_PLAIN;
  // The header lines are checked in one pass, and lower-cased in one, before they are split.
  const block = head.slice(lineEnd + 2);
  if (!HEADER_LINES.test(block)) return NOT_PLAIN;
  const lower = block.toLowerCase();
  // A plain object, as node:http's: a name Object.prototype already has (__proto__, constructor) reads as
  // present below, so such a request goes to node:http.
  const headers: IncomingHttpHeaders = {};
  const rawHeaders: string[] = [];
  let contentLength = 0;
  let at = 0;
  while (at < block.length) {
    if (rawHeaders.length === 2 * MAX_HEADERS) return NOT_PLAIN;
    const next = block.indexOf('\r\n', at);
    const colon = block.indexOf(':', at);
    const key = lower.slice(at, colon);
    const raw = block.slice(colon + 1, next);
    const value = trim(raw);
    if (headers[key] !== undefined) return NOT_PLAIN;
    switch (key) {
      case 'content-length':
        // Spaces around the digits only: llhttp refuses some tabs there, and the two parsers must agree.
        if (!CONTENT_LENGTH.test(raw)) return NOT_PLAIN;
        contentLength = Number(value);
        break;
      // llhttp reads Proxy-Connection as Connection (close ends the connection after its answer).
      case 'connection': case 'proxy-connection':
        if (value.toLowerCase() !== 'keep-alive') return NOT_PLAIN;
        break;
      // Another framing, an interim answer or another protocol: node:http's to handle.
      case 'transfer-encoding': case 'expect': case 'upgrade': return NOT_PLAIN;
      default: break;
    }
    headers[key] = value;
    rawHeaders.push(block.slice(at, colon), value);
    at = next + 2;
  }
  if (!whole) return NEEDS_MORE;
  if (headers.host === undefined) return NOT_PLAIN;
  if (method === 'POST' ? headers['content-length'] === undefined : contentLength !== 0) return NOT_PLAIN;
  return { method, url, headers, rawHeaders, contentLength, headLength, socket };
}

/** Optional whitespace around a value, as RFC 9112 allows it. */
function trim(v: string): string {
  let a = 0;
  let b = v.length;
  while (a < b && (v.charCodeAt(a) === 32 || v.charCodeAt(a) === 9)) a++;
  while (b > a && (v.charCodeAt(b - 1) === 32 || v.charCodeAt(b - 1) === 9)) b--;
  return a === 0 && b === v.length ? v : v.slice(a, b);
}

/** Heads longer than this are not remembered (see KnownHead). */
export const KNOWN_HEAD_BYTES = 1024;

/**
 * The last head a connection read, with its bytes. A client sends the same head for every request of the same
 * size (the same target, headers and Content-Length: binary tensors of fixed shapes), so the next head is
 * compared with it before it is parsed, as one memcmp rather than a parse. What a head parses to depends on its
 * bytes and the connection alone. Its header objects are shared by the requests that match it, so they are
 * frozen. Heads that never repeat (an id header per request) make the memo rest (bytes-memo.ts).
 */
export class KnownHead {
  private readonly memo = new BytesMemo<RequestHead>(KNOWN_HEAD_BYTES, 1);

  /** The head at the start of `buf` when it is the known one: a head of its own (receivedAt is per request). */
  match(buf: Buffer): RequestHead | null {
    const head = this.memo.findAtStart(buf, null);
    return head === undefined ? null : { ...head };
  }

  /** Remembers `head`, just parsed from the start of `buf`. */
  remember(buf: Buffer, head: RequestHead): void {
    if (!this.memo.wants(head.headLength)) return;
    Object.freeze(head.headers);
    Object.freeze(head.rawHeaders);
    this.memo.keep(buf, 0, head.headLength, null, { ...head });
  }
}
