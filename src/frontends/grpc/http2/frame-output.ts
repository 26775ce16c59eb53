import type { Socket } from 'node:net';

/** Output buffered in the socket beyond which reading stops until it drains. */
const OUTPUT_HIGH_WATER = 4 << 20;
/**
 * The output side of an HTTP/2 connection: when the frames written leave the socket, and back-pressure on a
 * client that does not read them. Http2Connection is its one subclass; a base class rather than a member so
 * that a stream's write is still one call.
 */
export class FrameOutput {
  /** The connection has ended (GOAWAY for an error sent, or the socket closed): nothing more is read or written. */
  closed = false;
  private readPaused = false;
  /** Writes in the current tick of the loop, and in the last one that wrote (see write()). */
  private tickWrites = 0;
  private lastTickWrites = 0;
  /** The socket is corked until the end of the current tick. */
  private corked = false;
  /** Frames from the socket are being handled: what they answer is held until all of them have been. */
  protected reading = false;
  private readonly endTick = (): void => {
    this.lastTickWrites = this.tickWrites;
    this.tickWrites = 0;
    if (!this.corked) return;
    this.corked = false;
    this.socket.uncork();
  };

  constructor(protected readonly socket: Socket) {}

  write(out: Buffer): void {
    if (this.closed) return;
    const socket = this.socket;
    // Answers to what one read brought (a call answered as its model runs, a PING, SETTINGS' ACK) leave together
    // when its frames have all been handled (onData), still within the read.
    if (this.reading) {
      socket.write(out);
      this.checkOutput();
      return;
    }
    // Frames written in one tick of the event loop (responses that completed together) leave in one system
    // call: the socket is corked until the tick ends. But the tick ends only after every promise job queued
    // behind the response has run, so a lone response (one client at a time, one call in flight) would wait
    // for the server's bookkeeping. The first write of a tick therefore leaves at once when the last tick that
    // wrote wrote once, and only what follows it in the same tick is corked.
    if (this.tickWrites++ === 0) {
      process.nextTick(this.endTick);
      if (this.lastTickWrites > 1) this.cork();
    } else if (!this.corked) {
      this.cork();
    }
    socket.write(out);
    this.checkOutput();
  }

  /** A client that does not read its responses is not read from either, until the socket drains. */
  private checkOutput(): void {
    const socket = this.socket;
    if (!this.readPaused && socket.writableLength > OUTPUT_HIGH_WATER) {
      this.readPaused = true;
      socket.pause();
      socket.once('drain', () => {
        this.readPaused = false;
        socket.resume();
      });
    }
  }

  private cork(): void {
    this.corked = true;
    this.socket.cork();
  }
}
