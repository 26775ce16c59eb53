import { ACK, PING, frame } from './frames.js';

/** PINGs this side sent on one connection, each waiting for its ACK (RFC 9113 6.7). */
export class Pings {
  private nextId = 0;
  private readonly waiting = new Map<number, (err: Error | null) => void>();

  /** The PING frame to send; `done` hears of its ACK, or of the connection closing first (closeAll). */
  send(done: (err: Error | null) => void): Buffer {
    const id = ++this.nextId;
    const payload = Buffer.alloc(8);
    payload.writeUInt32BE(id, 4);
    this.waiting.set(id, done);
    return frame(PING, 0, 0, payload);
  }

  /** A PING ACK from the client: the PING it answers is done; one this side never sent is ignored. */
  acked(payload: Buffer): void {
    const key = payload.readUInt32BE(4);
    const done = this.waiting.get(key);
    if (done === undefined) return;
    this.waiting.delete(key);
    done(null);
  }

  closeAll(): void {
    for (const done of this.waiting.values()) done(new Error('connection closed'));
    this.waiting.clear();
  }
}

/** The PING frame that answers a client's PING: its payload, with ACK. */
export function pingAck(payload: Buffer): Buffer {
  return frame(PING, ACK, 0, payload);
}
