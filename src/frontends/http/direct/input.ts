/**
 * The bytes a connection has received and not yet consumed, as one contiguous Buffer. A chunk that arrives
 * while nothing is pending is kept as it is (no copy: the usual request comes in one read). Later chunks are
 * appended into spare room of a buffer of the connection's own, which doubles when full, so a request
 * trickling in a byte at a time costs each byte a copy or two, not a copy of everything before it.
 *
 * Bytes already consumed are never written over, only left behind: a request's body, handed out as a view
 * (see `take`), stays as it was while the next request is read.
 */
export class Input {
  private store: Buffer | null = null;
  /** Whether `store` is ours to append into (a socket's chunk is not). */
  private owned = false;
  private start = 0;
  private end = 0;

  get length(): number {
    return this.end - this.start;
  }

  push(chunk: Buffer): void {
    const n = chunk.byteLength;
    if (this.store === null) {
      this.store = chunk;
      this.owned = false;
      this.start = 0;
      this.end = n;
      return;
    }
    if (this.owned && this.end + n <= this.store.byteLength) {
      chunk.copy(this.store, this.end);
      this.end += n;
      return;
    }
    const pending = this.end - this.start;
    const grown = Buffer.allocUnsafeSlow(Math.max(2 * (pending + n), 4096));
    this.store.copy(grown, 0, this.start, this.end);
    chunk.copy(grown, pending);
    this.store = grown;
    this.owned = true;
    this.start = 0;
    this.end = pending + n;
  }

  /** The pending bytes, as a view (valid until the next push or take). */
  view(): Buffer {
    return this.store === null ? EMPTY : this.store.subarray(this.start, this.end);
  }

  /** Consumes `n` pending bytes and returns them, as a view that stays valid. */
  take(n: number): Buffer {
    if (n === 0) return EMPTY;
    const out = this.store!.subarray(this.start, this.start + n);
    this.start += n;
    if (this.start === this.end) this.clear();
    return out;
  }

  /** Drops `n` pending bytes. */
  skip(n: number): void {
    this.start += n;
    if (this.start === this.end) this.clear();
  }

  clear(): void {
    this.store = null;
    this.owned = false;
    this.start = 0;
    this.end = 0;
  }
}

const EMPTY = Buffer.alloc(0);
