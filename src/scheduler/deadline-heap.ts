/** Something with a deadline that knows where it sits in the heap (-1: not in it), so it can leave in O(log n). */
export interface HasDeadline {
  readonly deadlineMs: number;
  heapIndex: number;
}

/**
 * A binary min-heap by deadline, for request timeouts: one timer is armed for the earliest deadline instead of
 * one timer per request, and a request that leaves the queue early (it ran, it was cancelled) leaves the heap
 * at once rather than lingering, with its tensors, until its deadline.
 */
export class DeadlineHeap<T extends HasDeadline> {
  private readonly items: T[] = [];

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(x: T): void {
    x.heapIndex = this.items.length;
    this.items.push(x);
    this.up(x.heapIndex);
  }

  pop(): T | undefined {
    const top = this.items[0];
    if (top) this.remove(top);
    return top;
  }

  remove(x: T): void {
    const i = x.heapIndex;
    if (i < 0) return;
    x.heapIndex = -1;
    const last = this.items.pop()!;
    if (last === x) return;
    this.items[i] = last;
    last.heapIndex = i;
    this.down(i);
    this.up(last.heapIndex);
  }

  private up(i: number): void {
    const items = this.items;
    const x = items[i]!;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = items[p]!;
      if (parent.deadlineMs <= x.deadlineMs) break;
      items[i] = parent;
      parent.heapIndex = i;
      i = p;
    }
    items[i] = x;
    x.heapIndex = i;
  }

  private down(i: number): void {
    const items = this.items;
    const n = items.length;
    const x = items[i]!;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && items[c + 1]!.deadlineMs < items[c]!.deadlineMs) c++;
      const child = items[c]!;
      if (child.deadlineMs >= x.deadlineMs) break;
      items[i] = child;
      child.heapIndex = i;
      i = c;
    }
    items[i] = x;
    x.heapIndex = i;
  }
}

/**
 * A DeadlineHeap with one timer, for its earliest deadline: `expired` runs once that deadline has passed, takes
 * what has expired, and calls arm() for the next. The timer may fire for an item that has already left, which
 * is harmless.
 */
export class DeadlineTimer<T extends HasDeadline> {
  readonly heap = new DeadlineHeap<T>();
  private timer: NodeJS.Timeout | undefined;
  private at = Infinity;

  constructor(private readonly expired: () => void) {}

  add(x: T): void {
    this.heap.push(x);
    if (x.deadlineMs < this.at) this.arm();
  }

  remove(x: T): void {
    if (x.heapIndex >= 0) this.heap.remove(x);
  }

  /** Sets the timer for the earliest deadline, unless it is set for it or earlier already. */
  arm(): void {
    const next = this.heap.peek();
    if (!next) return;
    if (this.timer) {
      if (this.at <= next.deadlineMs) return;
      clearTimeout(this.timer);
    }
    this.at = next.deadlineMs;
    this.timer = setTimeout(this.fire, Math.max(0, next.deadlineMs - performance.now()));
  }

  clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.at = Infinity;
  }

  private readonly fire = (): void => {
    this.timer = undefined;
    this.at = Infinity;
    this.expired();
  };
}
