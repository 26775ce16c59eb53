import { STATUS_CODES, type OutgoingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';

/** What a DirectAnswer needs of its connection. */
export interface AnswerOwner {
  /** `Date: ...\r\n`, refreshed once a second (as node:http caches its date). */
  readonly dateLine: string;
  /** True once the server is closing: every answer then closes its connection. */
  readonly closing: boolean;
  answered(keepAlive: boolean): void;
}

const KEEP_ALIVE = 'Connection: keep-alive\r\nKeep-Alive: timeout=';
const CLOSE = 'Connection: close\r\n\r\n';

/**
 * The answer to a request on the direct path: the part of node:http's ServerResponse the handlers use
 * (writeHead, write, end, cork, 'finish' and 'close'), writing straight to the socket. The status line and
 * headers go out with the first write, in one string with the body when the body is text. The headers
 * are node:http's: the handler's, then Date, Connection and Keep-Alive.
 */
export class DirectAnswer {
  headersSent = false;
  shouldKeepAlive = true;
  private head: string | null = null;
  private ended = false;
  private finishListeners: (() => void)[] | null = null;
  private closeListeners: (() => void)[] | null = null;

  constructor(readonly socket: Socket, private readonly owner: AnswerOwner, private readonly keepAliveSeconds: number) {}

  writeHead(status: number, headers: OutgoingHttpHeaders): this {
    let h = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Unknown'}\r\n`;
    let framed = false;
    for (const name in headers) {
      const v = headers[name];
      if (v === undefined) continue;
      const value = String(v);
      // Headers are Nereid's own, never a client's text; a line break would still split the answer.
      if (value.includes('\n') || value.includes('\r')) throw new TypeError(`invalid character in header ${name}`);
      if (name === 'Content-Length') framed = true;
      h += `${name}: ${value}\r\n`;
    }
    // An answer without a length ends where its connection does.
    if (!framed || this.owner.closing) this.shouldKeepAlive = false;
    h += this.owner.dateLine;
    h += this.shouldKeepAlive ? `${KEEP_ALIVE}${this.keepAliveSeconds}\r\n\r\n` : CLOSE;
    this.head = h;
    this.headersSent = true;
    return this;
  }

  write(chunk: string | Uint8Array): boolean {
    return this.send(chunk, undefined);
  }

  end(chunk?: string | Uint8Array): this {
    if (this.ended) return this;
    this.ended = true;
    if (!this.headersSent) this.writeHead(200, {});
    if (!this.socket.writable) {
      // The connection ended before the answer: it reaches no one, and its 'close' is now.
      this.head = null;
      this.connectionClosed();
      this.owner.answered(false);
      return this;
    }
    const done = this.finishListeners !== null || this.closeListeners !== null ? (err?: Error | null) => (err ? this.connectionClosed() : this.finished()) : undefined;
    if (chunk !== undefined) this.send(chunk, done);
    else if (this.head !== null) this.send('', done);
    else if (done !== undefined) this.socket.write('', done);
    this.owner.answered(this.shouldKeepAlive);
    return this;
  }

  cork(): void {
    this.socket.cork();
  }

  uncork(): void {
    this.socket.uncork();
  }

  destroy(): void {
    this.socket.destroy();
  }

  once(event: 'finish' | 'close', listener: () => void): this {
    if (event === 'finish') (this.finishListeners ??= []).push(listener);
    else (this.closeListeners ??= []).push(listener);
    return this;
  }

  /** The connection closed: a response that had not finished ends here, as node:http's 'close' says. */
  connectionClosed(): void {
    const close = this.closeListeners;
    this.finishListeners = null;
    this.closeListeners = null;
    if (close !== null) for (const f of close) f();
  }

  private send(chunk: string | Uint8Array, done: ((err?: Error | null) => void) | undefined): boolean {
    if (!this.socket.writable) {
      // The connection has ended: nothing reaches the client, and 'close' has come or will.
      this.head = null;
      return false;
    }
    const head = this.head;
    if (head === null) return this.socket.write(chunk, done);
    this.head = null;
    if (typeof chunk === 'string') return this.socket.write(head + chunk, done);
    this.socket.write(head, 'latin1');
    return this.socket.write(chunk, done);
  }

  private finished(): void {
    const finish = this.finishListeners;
    this.finishListeners = null;
    if (finish !== null) for (const f of finish) f();
    this.connectionClosed();
  }
}
