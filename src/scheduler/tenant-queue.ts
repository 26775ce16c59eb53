import { RingQueue } from './queue.js';

/** One tenant's waiting items, in arrival order. */
class Lane<T> {
  readonly items = new RingQueue<T>();
  constructor(readonly tenant: string | undefined) {}
}

/**
 * A queue shared among tenants (the API key ids of requests): each tenant's items keep their order, and the
 * tenants with items waiting take turns, one item each. So a tenant that floods a model waits behind its own
 * requests, while another tenant's request waits behind at most one of each other tenant's. Items of no
 * tenant (no API keys in use) are one tenant of their own: then this is a FIFO, at the cost of one comparison
 * per push and a rotation of the one lane per shift.
 *
 * A lane, once made, is kept: tenants are the ids of the key file, so their number is bounded by it.
 */
export class TenantQueue<T> {
  private readonly lanes = new Map<string | undefined, Lane<T>>();
  /** The lanes with items, in the order they take their turns. */
  private readonly turns = new RingQueue<Lane<T>>();
  /** The lane pushed to last: consecutive pushes of one tenant skip the map. */
  private last: Lane<T> | undefined;
  private count = 0;

  get length(): number {
    return this.count;
  }

  push(item: T, tenant: string | undefined): void {
    let lane = this.last;
    if (lane === undefined || lane.tenant !== tenant) {
      lane = this.lanes.get(tenant);
      if (lane === undefined) this.lanes.set(tenant, (lane = new Lane<T>(tenant)));
      this.last = lane;
    }
    if (lane.items.length === 0) this.turns.push(lane);
    lane.items.push(item);
    this.count++;
  }

  /** The item shift() would return, left in place. */
  peek(): T | undefined {
    return this.turns.peek()?.items.peek();
  }

  /** The next item of the tenant whose turn it is; that tenant then goes behind the others waiting. */
  shift(): T | undefined {
    const lane = this.turns.shift();
    if (lane === undefined) return undefined;
    const item = lane.items.shift();
    this.count--;
    if (lane.items.length > 0) this.turns.push(lane);
    return item;
  }
}
