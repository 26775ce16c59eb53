/**
 * A FIFO queue on a growable ring buffer: push and shift are O(1) and make no garbage, unlike
 * Array.prototype.shift on a long array. The capacity stays a power of two so the index wraps with a mask.
 *
 *   items:  [ . . h x x x x t . . ]     h = head (next shift), t = head + length (next push), mod capacity
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

  /** The item shift() would return, left in place. */
  peek(): T | undefined {
    return this.count === 0 ? undefined : this.items[this.head];
  }

  /** The item `i` places behind the head (0 = peek()), left in place; undefined past the end. */
  at(i: number): T | undefined {
    return i < this.count ? this.items[(this.head + i) & (this.items.length - 1)] : undefined;
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
