import type { Socket } from 'node:net';
import { BAD_REQUEST, REQUEST_TIMEOUT } from '../client-error.js';
import { DirectAnswer, type AnswerOwner } from './answer.js';
import { Input } from './input.js';
import { KnownHead, MAX_HEAD_BYTES, NEEDS_MORE, NOT_PLAIN, notPlainSoFar, parseRequestHead, type RequestHead } from './request-head.js';

/** What a connection needs of the direct path that accepted it (see DirectPath). */
export interface ConnectionSite<T> {
  readonly dateLine: string;
  readonly closing: boolean;
  /** A clock of whole seconds' precision, read often, set once a second. */
  readonly now: number;
  readonly keepAliveSeconds: number;
  /** The largest body the direct path reads; a longer one goes to node:http. */
  readonly maxBody: number;
  /** Whether a request's arrival is timed (Triton's HTTP_RECV_START is when its first byte came). */
  timesArrival(): boolean;
  /** What to do with a request, decided from its head; undefined gives the connection to node:http. */
  decide(head: RequestHead): T | undefined;
  serve(head: RequestHead, body: Buffer, answer: DirectAnswer, ticket: T): void;
  handOff(socket: Socket): void;
  forget(connection: DirectConnection<T>): void;
}

export type ConnectionState = 'idle' | 'receiving' | 'answering';

/**
 * One client connection on the direct path: requests are read from the socket, answered one at a time in
 * the order they came (pipelined ones wait their turn), and the connection is handed to node:http, with
 * every byte not yet answered, at the first request that is not plain.
 */
export class DirectConnection<T> implements AnswerOwner {
  state: ConnectionState = 'idle';
  /** When the current state began, on the site's clock. */
  since: number;
  private readonly input = new Input();
  /** How far the input has been searched for the end of a head. */
  private searched = 0;
  /** How long the unfinished head was when its lines so far were last checked (see readHead). */
  private checked = 0;
  private head: RequestHead | null = null;
  /** The head this connection sent last (see KnownHead). */
  private readonly known = new KnownHead();
  private ticket: T | undefined;
  private answer: DirectAnswer | null = null;
  /** When the request being received began to arrive, while arrivals are timed. */
  private arrivedAt: bigint | undefined;
  private driving = false;
  /** Set while answers wait for a client that does not read them (see drive). */
  private draining = false;
  private done = false;

  constructor(private readonly site: ConnectionSite<T>, readonly socket: Socket) {
    this.since = site.now;
    socket.on('data', this.onData);
    socket.on('error', ignore);
    socket.once('end', this.onEnd);
    socket.once('close', this.onClose);
  }

  get dateLine(): string {
    return this.site.dateLine;
  }

  get closing(): boolean {
    return this.site.closing;
  }

  /** The server is closing: an idle connection ends now, a busy one after its answer. */
  closeIfIdle(): void {
    if (this.state === 'idle') this.socket.destroy();
  }

  /** True while answers already written wait to leave (for a client that reads slowly): no timeout runs then. */
  get flushing(): boolean {
    return this.draining || this.socket.writableLength > 0;
  }

  /** The answer to a request whose head or body takes too long to arrive (node:http's), and the end of the connection. */
  timeOut(): void {
    if (this.state === 'receiving' && this.socket.writable) this.socket.end(REQUEST_TIMEOUT);
    this.socket.destroy();
  }

  answered(keepAlive: boolean): void {
    this.answer = null;
    if (!keepAlive) {
      // Nothing more is read; the connection closes once the answer has left (node:http's destroySoon).
      this.finish();
      this.socket.destroySoon();
      return;
    }
    this.state = this.input.length === 0 ? 'idle' : 'receiving';
    this.since = this.site.now;
    if (this.state === 'receiving') this.arrived();
    if (this.socket.isPaused() && !this.draining) this.socket.resume();
    if (!this.driving) this.drive();
  }

  private readonly onData = (chunk: Buffer): void => {
    if (this.done) return;
    this.input.push(chunk);
    if (this.state === 'idle') {
      this.state = 'receiving';
      this.since = this.site.now;
      this.arrived();
    }
    if (this.answer !== null) {
      // Pipelined requests wait for the one being answered; past one more request's worth they wait in the kernel.
      if (this.input.length > MAX_HEAD_BYTES + this.site.maxBody) this.socket.pause();
      return;
    }
    this.drive();
  };

  /**
   * The client ended its side: as node:http does (httpAllowHalfOpen off), nothing more is read or answered and
   * the connection closes, which cancels what it still had queued. A request cut short by the end is refused
   * first, as node:http's parser refuses it (an invalid EOF state).
   */
  private readonly onEnd = (): void => {
    const cutShort = this.input.length > 0 && this.answer === null && !this.draining;
    this.finish();
    if (!this.socket.writable) return;
    if (cutShort) this.socket.end(BAD_REQUEST);
    else this.socket.end();
  };

  private readonly onClose = (): void => {
    this.finish();
    this.site.forget(this);
    const answer = this.answer;
    this.answer = null;
    if (answer !== null) answer.connectionClosed();
  };

  /**
   * Answers every whole request in the buffer, one at a time; returns when one waits for something. While the
   * answers already written wait for a client that does not read them, nothing more is read or answered (as
   * node:http does): pipelined requests for large answers would otherwise hold the server's memory.
   */
  private drive(): void {
    this.driving = true;
    try {
      while (this.input.length > 0 && this.answer === null && !this.done) {
        if (this.socket.writableNeedDrain) {
          this.waitForDrain();
          return;
        }
        if (this.head === null && !this.readHead(this.input.view())) return;
        const head = this.head!;
        if (this.input.length < head.headLength + head.contentLength) return;
        this.input.skip(head.headLength);
        const body = this.input.take(head.contentLength);
        this.head = null;
        this.searched = 0;
        this.checked = 0;
        if (this.arrivedAt !== undefined) {
          head.receivedAt = this.arrivedAt;
          this.arrivedAt = undefined;
        }
        this.state = 'answering';
        const answer = new DirectAnswer(this.socket, this, this.site.keepAliveSeconds);
        this.answer = answer;
        this.site.serve(head, body, answer, this.ticket as T);
      }
    } finally {
      this.driving = false;
    }
  }

  private arrived(): void {
    this.arrivedAt = this.site.timesArrival() ? process.hrtime.bigint() : undefined;
  }

  private waitForDrain(): void {
    if (this.draining) return;
    this.draining = true;
    this.socket.pause();
    this.socket.once('drain', this.onDrain);
  }

  private readonly onDrain = (): void => {
    this.draining = false;
    if (this.done) return;
    this.socket.resume();
    if (!this.driving && this.answer === null) this.drive();
  };

  /** Reads the head of the next request; false when it has not all arrived or the connection went to node:http. */
  private readHead(buf: Buffer): boolean {
    const known = this.known.match(buf);
    const head = known ?? parseRequestHead(buf, this.socket, this.searched);
    if (head === NEEDS_MORE) {
      this.searched = buf.byteLength;
      // Checked again each time it has doubled: a head that trickles in costs a small multiple of its bytes.
      if (buf.byteLength < 2 * this.checked) return false;
      this.checked = buf.byteLength;
      if (!notPlainSoFar(buf, this.socket)) return false;
      this.handOff();
      return false;
    }
    const ticket = head === NOT_PLAIN || head.contentLength > this.site.maxBody ? undefined : this.site.decide(head);
    if (ticket === undefined) {
      this.handOff();
      return false;
    }
    if (known === null) this.known.remember(buf, head as RequestHead);
    this.head = head as RequestHead;
    this.ticket = ticket;
    return true;
  }

  /** node:http reads the connection from here on, starting with the bytes not yet answered. */
  private handOff(): void {
    const socket = this.socket;
    const rest = this.input.length === 0 ? null : this.input.view();
    this.finish();
    socket.removeListener('data', this.onData);
    socket.removeListener('error', ignore);
    socket.removeListener('end', this.onEnd);
    socket.removeListener('close', this.onClose);
    if (rest !== null) socket.unshift(rest);
    if (socket.isPaused()) socket.resume();
    this.site.forget(this);
    this.site.handOff(socket);
  }

  /** Nothing more is read or answered on this connection. It stays known to the site until it closes (or is handed over). */
  private finish(): void {
    if (this.done) return;
    this.done = true;
    this.input.clear();
    this.socket.removeListener('drain', this.onDrain);
  }
}

function ignore(): void {
  // The socket's 'close' follows; an error a client causes is not the server's to report.
}
