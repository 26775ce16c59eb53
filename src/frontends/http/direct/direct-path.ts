import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { Server as TlsServer } from 'node:tls';
import type { DirectAnswer } from './answer.js';
import { DirectConnection, type ConnectionSite } from './connection.js';
import type { RequestHead } from './request-head.js';

export interface DirectHandlers<T> {
  /** What to do with a request, decided from its head; undefined leaves the request to node:http. */
  decide(head: RequestHead): T | undefined;
  /** Answers a request through `answer`; the body is whole. */
  serve(head: RequestHead, body: Buffer, answer: DirectAnswer, ticket: T): void;
  /** Whether requests' arrival times are wanted now (they are traced). */
  timesArrival(): boolean;
}

/**
 * Plain requests read and answered straight on the socket, everything else by node:http. node:http builds
 * a request and a response stream per request, which costs a small inference more CPU than its own parsing
 * and answer. Most requests to an inference server are plain: GET, or POST with a small body framed by
 * Content-Length, on a kept-alive HTTP/1.1 connection. Those are read here. At the first request that is
 * anything else (chunked, Expect, Upgrade, HTTP/1.0, a large body, a head that does not follow RFC 9112 to
 * the letter, or a route that streams) the connection goes to node:http for good, with every byte not yet
 * answered, so node:http's parser and rules decide whatever the direct path does not fully understand.
 *
 * The direct path keeps node:http's timeouts (a request must arrive within headersTimeout, an idle
 * connection closes after keepAliveTimeout) with one timer for all connections, and the server's close:
 * idle connections end at once, busy ones after their answer.
 */
export class DirectPath<T> implements ConnectionSite<T> {
  dateLine = '';
  closing = false;
  now = Date.now();
  readonly keepAliveSeconds: number;
  private readonly connections = new Set<DirectConnection<T>>();
  private readonly timer: NodeJS.Timeout;
  private readonly nodeListener: (socket: Socket) => void;
  private readonly headersTimeout: number;
  private readonly keepAliveTimeout: number;

  constructor(private readonly http: Server, private readonly handlers: DirectHandlers<T>, readonly maxBody: number) {
    // node:http's own connection listener reads a connection the direct path hands over. Over TLS it listens
    // for the end of the handshake, and the socket it gets (and the direct path reads) yields the plaintext.
    const event = http instanceof TlsServer ? 'secureConnection' : 'connection';
    // The server's constructor registered it, so it comes first (the TLS guard's comes after).
    const nodeListener = (http.listeners(event) as ((socket: Socket) => void)[])[0];
    if (nodeListener === undefined) throw new Error('the direct path needs node:http’s connection listener');
    this.nodeListener = nodeListener;
    http.removeListener(event, this.nodeListener);
    http.on(event, (socket: Socket) => this.accept(socket));
    this.headersTimeout = http.headersTimeout;
    this.keepAliveTimeout = http.keepAliveTimeout;
    this.keepAliveSeconds = Math.floor(http.keepAliveTimeout / 1000);
    this.tick();
    this.timer = setInterval(() => this.tick(), 1000).unref();
  }

  timesArrival(): boolean {
    return this.handlers.timesArrival();
  }

  decide(head: RequestHead): T | undefined {
    return this.closing ? undefined : this.handlers.decide(head);
  }

  serve(head: RequestHead, body: Buffer, answer: DirectAnswer, ticket: T): void {
    this.handlers.serve(head, body, answer, ticket);
  }

  handOff(socket: Socket): void {
    this.nodeListener.call(this.http, socket);
  }

  forget(connection: DirectConnection<T>): void {
    this.connections.delete(connection);
  }

  /** The server is closing: idle connections end now, busy ones close after their answer. */
  closeIdle(): void {
    this.closing = true;
    for (const c of this.connections) c.closeIfIdle();
  }

  /** Ends every connection at once, and the timer: once this has run, nothing of the direct path remains. */
  closeAll(): void {
    this.closing = true;
    clearInterval(this.timer);
    for (const c of this.connections) c.socket.destroy();
  }

  private accept(socket: Socket): void {
    if (this.closing) {
      this.nodeListener.call(this.http, socket);
      return;
    }
    this.connections.add(new DirectConnection(this, socket));
  }

  private tick(): void {
    const now = Date.now();
    this.now = now;
    this.dateLine = `Date: ${new Date(now).toUTCString()}\r\n`;
    for (const c of this.connections) {
      // Answers still leaving for a slow reader: its time runs from when they have gone (as node:http's).
      if (c.flushing) {
        c.since = now;
        continue;
      }
      const age = now - c.since;
      if (c.state === 'receiving' ? this.headersTimeout > 0 && age > this.headersTimeout : c.state === 'idle' && age > this.keepAliveTimeout) c.timeOut();
    }
  }
}
