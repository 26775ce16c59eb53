import type { ExecutionTimes } from '../backends/backend.js';
import { RingQueue } from './queue.js';
import type { Job } from './scheduler.js';

/**
 * The dynamic batcher's preserve_ordering: requests are answered in the order they were dispatched, even when
 * batches finish out of order on different instances. A request's answer waits in its slot until every request
 * dispatched before it is answered. (A sequence batcher's lanes, whose answers may come after the execution,
 * use answer-order.ts.)
 */
export interface FinishSlot {
  readonly job: Job;
  startNs: bigint;
  times: ExecutionTimes | undefined;
}

export class FinishOrder {
  /** Every dispatched request not yet answered, in dispatch order. */
  private readonly order = new RingQueue<FinishSlot>();

  /** A place in the order for each request of a batch, in dispatch order. */
  reserve(jobs: readonly Job[]): FinishSlot[] {
    const slots = new Array<FinishSlot>(jobs.length);
    for (let i = 0; i < jobs.length; i++) {
      const slot: FinishSlot = { job: jobs[i]!, startNs: 0n, times: undefined };
      slots[i] = slot;
      this.order.push(slot);
    }
    return slots;
  }

  /** The batch of these slots ended: their answers may go once the ones ahead of them have. */
  ended(slots: readonly FinishSlot[], start: bigint, times: ExecutionTimes): void {
    for (const s of slots) {
      s.startNs = start;
      s.times = times;
    }
  }

  /** The first slot in dispatch order when its batch has ended, taken off the order; undefined otherwise. */
  next(): FinishSlot | undefined {
    const s = this.order.peek();
    if (!s || s.times === undefined) return undefined;
    this.order.shift();
    return s;
  }
}
