/**
 * A FIFO queue on a growable ring buffer: push and shift are O(1) and make no garbage, unlike
 * Array.prototype.shift on a long array. The capacity stays a power of two so the index wraps with a mask.
 */
export class RingQueue<T> {
  private items: (T | undefined)[] = new Array(16);
  private head = 0;
  private count = 0;

  get length(): number {
    return this.count;
  }

  push(item: T): void {
    if (this.count === this.items.length) this.grow();
    this.items[(this.head + this.count) & (this.items.length - 1)] = item;
    this.count++;
  }

  /** Removes one item wherever it is (O(n): for timeouts and cancellations, not the hot path). */
  remove(item: T): boolean {
    const all = this.drainAll();
    const i = all.indexOf(item);
    if (i >= 0) all.splice(i, 1);
    for (const x of all) this.push(x);
    return i >= 0;
  }

  /** Puts items back in front, in the given order (O(n)). */
  unshiftAll(items: readonly T[]): void {
    const rest = this.drainAll();
    for (const x of items) this.push(x);
    for (const x of rest) this.push(x);
  }

  private drainAll(): T[] {
    const out: T[] = [];
    for (let x = this.shift(); x !== undefined; x = this.shift()) out.push(x);
    return out;
  }

  /** The item shift() would return, left in place. */
  peek(): T | undefined {
    return this.count === 0 ? undefined : this.items[this.head];
  }

  shift(): T | undefined {
    if (this.count === 0) return undefined;
    const item = this.items[this.head];
    this.items[this.head] = undefined;
    this.head = (this.head + 1) & (this.items.length - 1);
    this.count--;
    return item;
  }

  private grow(): void {
    const next = new Array<T | undefined>(this.items.length * 2);
    for (let i = 0; i < this.count; i++) next[i] = this.items[(this.head + i) & (this.items.length - 1)];
    this.items = next;
    this.head = 0;
  }
}
