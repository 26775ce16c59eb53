import { NereidError, isNereidError } from '../errors.js';
import type { ModelConfig } from '../config/types.js';
import type { BackendInstance, ExecutionTimes } from '../backends/backend.js';
import type { Logger } from '../observability/logger.js';
import { DeadlineTimer } from './deadline-heap.js';
import { DelayWake } from './delay-wake.js';
import { batchShapeRule, sameBatchShapes, type BatchShapeRule } from './equal-shapes.js';
import { FinishOrder, type FinishSlot } from './finish-order.js';
import { RingQueue } from './queue.js';
import { logPrefix, stoppedScheduler, type ExecutionListener, type FailureReason, type Job, type Scheduler } from './scheduler.js';
import { TenantQueue } from './tenant-queue.js';
import { PriorityLevels, type Level } from './priority-levels.js';
import { announceHold, schedulerHold } from './test-hooks.js';

/**
 * Where an entry is: waiting in its level's queue, moved to its level's delayed queue, gone, or held back by
 * tenant until the queues have room (see DynamicBatcher).
 */
const QUEUED = 0;
const DELAYED = 1;
const GONE = 2;
const HELD = 3;

/**
 * A request as the batcher holds it. An entry that leaves the queues early (timed out, moved by DELAY,
 * cancelled) is marked and left where it is as a tombstone: batch formation skips it and drops it when it
 * reaches the head, so no removal ever shifts a queue.
 */
class Entry {
  heapIndex = -1;
  where: 0 | 1 | 2 | 3 = QUEUED;
  constructor(readonly job: Job, readonly level: Level<Entry>, readonly arrivedMs: number, readonly deadlineMs: number) {}
}

/** The pending batch: the requests from the front of the queues that the next batch would hold. */
export interface PendingBatch {
  /** Requests and rows in it. */
  count: number;
  rows: number;
  /** Requests up to the best cut found: the largest preferred size reached, or where the next request would pass the largest preferred size. 0: none. */
  markCount: number;
  /** Growing it further is impossible (max_batch_size reached, or the next request's shapes differ). */
  sendNow: boolean;
  /** When its oldest request reached the batcher (performance.now() ms). */
  oldestMs: number;
}

/**
 * Triton's decision over a pending batch (DynamicBatchScheduler::GetDynamicBatch), as a pure function:
 * how many of its requests to send now, 0 when it is empty, or -1 to wait for more (until the oldest has
 * waited `delayMs`). A preferred cut goes at once unless the queue delay has run out, in which case everything
 * pending goes; a batch that cannot grow, or fills the largest preferred size, goes at once; without a queue
 * delay everything pending goes.
 */
export function decideBatch(p: PendingBatch, nowMs: number, delayMs: number, maxPreferred: number): number {
  const delayExceeded = delayMs > 0 && nowMs - p.oldestMs >= delayMs;
  if (p.markCount > 0 && !delayExceeded) return p.markCount;
  if (p.count === 0) return 0;
  if (p.sendNow || p.rows >= maxPreferred || delayMs === 0 || delayExceeded) return p.count;
  return -1;
}

/** The preferred batch sizes within max_batch_size (max_batch_size when none is), as a table by size. */
function preferredSizes(preferred: readonly number[], maxBatch: number): { table: Uint8Array; max: number } {
  const sizes = preferred.filter((n) => n > 0 && n <= maxBatch);
  if (sizes.length === 0) sizes.push(maxBatch);
  const table = new Uint8Array(maxBatch + 1);
  for (const n of sizes) table[n] = 1;
  return { table, max: Math.max(...sizes) };
}

const NO_TIMES: ExecutionTimes = { inputNs: 0, inferNs: 0, outputNs: 0 };

/** Most batches inline instances run back to back before letting the event loop see to I/O again. */
const MAX_BATCHES_PER_TURN = 64;

/**
 * Triton's dynamic batcher.
 *
 * Requests wait in one queue per priority level (1 = highest). A request's `priority` picks its level; 0, or a
 * number past the last level, means default_priority_level. Batch order is level 1's queue, then the level 1
 * requests its DELAY policy moved aside, then level 2's queue, and so on. Whenever an instance is free the
 * batcher forms a batch from the front of that order: it stops at max_batch_size or at the first request whose
 * shapes differ from the first one's (inputs with variable dims must match past the batch dimension unless they
 * allow ragged batches; with optional inputs the same inputs must be present), remembers the largest preferred
 * size it passed, and lets decideBatch() choose. The pending batch is a cursor over the queues, so requests
 * arriving while it waits for max_queue_delay_microseconds extend it rather than rescan it.
 *
 * Queue policies, per level: max_queue_size refuses a request at once (UNAVAILABLE "Exceeds maximum queue
 * size"); default_timeout_microseconds (shortened by the request's own `timeout` when allow_timeout_override
 * is set, never lengthened) is enforced by one timer for the earliest deadline, so a request times out while it
 * waits, not when the running batch ends: REJECT answers it (UNAVAILABLE "Request timeout expired"), DELAY
 * moves it behind every request of its level that has not timed out. A cancelled request is answered when batch
 * formation reaches it, as Triton does, so no listener is attached per request.
 *
 * preserve_ordering answers requests in the order they were dispatched even when batches finish out of order
 * on different instances. Inline instances (synchronous ONNX Runtime sessions, see direct.ts) form their
 * batches at the end of the loop turn, so the requests read in one turn share a batch at no extra latency.
 *
 * Timer precision: queue delays of a millisecond or more use a timer (Node's millisecond resolution, never
 * early); shorter ones re-check on each turn of the event loop, which keeps the loop busy for at most the delay.
 *
 * Tenants (requests' API key ids): once the queues hold `window` requests (two full batches per instance), a
 * request of a tenant waits in a TenantQueue instead, and those requests enter the queues in turns by tenant
 * as room opens. So a tenant that floods the model delays another tenant's request by about `window` requests
 * at most, not by its whole flood. Held requests count toward max_queue_size and keep their deadlines; their
 * priority applies once they enter the queues. Requests of no tenant (no API keys in use) never wait there.
 */
export class DynamicBatcher implements Scheduler {
  private readonly idle: BackendInstance[];
  private readonly levels: PriorityLevels<Entry>;
  private readonly maxBatch: number;
  private readonly maxPreferred: number;
  /** preferred[n] === 1 when n is a preferred batch size. */
  private readonly preferred: Uint8Array;
  private readonly delayMs: number;
  /** Which requests may share a batch; undefined when any may. */
  private readonly shapeRule: BatchShapeRule | undefined;
  private readonly synchronous: boolean;
  /** Requests the queues take before requests of a tenant are held (see the class comment). */
  private readonly window: number;
  private readonly held = new TenantQueue<Entry>();
  /** Live entries in `held` (cancelled or expired ones stay there as tombstones until reached). */
  private heldLive = 0;

  /** Live entries in the levels' queues. */
  private queued = 0;
  private running = 0;
  private stopped = false;
  private drained: (() => void) | undefined;
  private dispatchScheduled = false;
  /** Inline instances: batches run since the loop last saw to I/O (see run()). */
  private batchesThisTurn = 0;

  /** The pending batch and the cursor after it: level, which of its two queues, index in that queue. */
  private readonly pending: PendingBatch = { count: 0, rows: 0, markCount: 0, sendNow: false, oldestMs: Infinity };
  private pendingFirst: Job | undefined;
  private cursorValid = false;
  private curLevel = 0;
  private curDelayed = false;
  private curIndex = 0;

  /** Looks at the pending batch again when its oldest request has waited the queue delay. */
  private readonly delayWake = new DelayWake(() => this.dispatch());
  private readonly deadlines = new DeadlineTimer<Entry>(() => this.onDeadline());
  /** preserve_ordering: the order answers go in. */
  private readonly order: FinishOrder | undefined;
  /** Test hook TRITONSERVER_DELAY_SCHEDULER (see test-hooks.ts): no batch until this many wait; 0 once reached. */
  private hold = schedulerHold()?.queued ?? 0;

  constructor(
    config: ModelConfig,
    instances: readonly BackendInstance[],
    private readonly onExecution: ExecutionListener,
    logger?: Logger,
  ) {
    announceHold(logger, [`batcher thread for ${config.name}`], false);
    const db = config.dynamic_batching!;
    this.idle = [...instances].reverse();
    this.synchronous = instances.length > 0 && instances.every((i) => i.synchronous === true);
    this.maxBatch = Math.max(1, config.max_batch_size);
    ({ table: this.preferred, max: this.maxPreferred } = preferredSizes(db.preferred_batch_size, this.maxBatch));
    this.delayMs = db.max_queue_delay_microseconds / 1000;
    this.order = db.preserve_ordering ? new FinishOrder() : undefined;
    this.levels = new PriorityLevels(db);
    this.shapeRule = batchShapeRule(config);
    this.window = 2 * this.maxBatch * Math.max(1, instances.length);
  }

  enqueue(job: Job): void {
    if (this.stopped) return job.reject(stoppedScheduler(job), 'REJECTED');
    const level = this.levels.of(job.priority ?? 0, this.levelInserted);
    if (level.maxQueueSize > 0 && level.size >= level.maxQueueSize) {
      return job.reject(new NereidError('UNAVAILABLE', `${logPrefix(job)}Exceeds maximum queue size`), 'REJECTED');
    }
    let timeoutUs = level.timeoutUs;
    if (level.allowOverride && job.timeoutUs && job.timeoutUs < timeoutUs) timeoutUs = job.timeoutUs;
    const now = performance.now();
    const e = new Entry(job, level, now, timeoutUs > 0 ? now + timeoutUs / 1000 : 0);
    level.size++;
    if (e.deadlineMs > 0) this.deadlines.add(e);
    if (job.tenant !== undefined && (this.heldLive > 0 || this.queued >= this.window)) {
      e.where = HELD;
      this.held.push(e, job.tenant);
      this.heldLive++;
      // Held behind others while the queues have room (those queued were cancelled): let them in now.
      if (this.queued < this.window) {
        this.admitHeld();
        this.schedule();
      }
      return;
    }
    this.place(e);
    this.schedule();
  }

  /** Puts an entry at the end of its level's queue (or, held past its deadline under DELAY, its delayed queue). */
  private place(e: Entry): void {
    const level = e.level;
    if (e.where === HELD && e.heapIndex < 0 && e.deadlineMs !== 0) {
      e.where = DELAYED;
      level.delayed.push(e);
    } else {
      e.where = QUEUED;
      level.queue.push(e);
    }
    this.queued++;
    // A request placed before the cursor (a higher level, or this level while the cursor is already among its
    // delayed requests) belongs in the pending batch: form it again.
    if (this.cursorValid && this.beforeCursor(level, true)) this.cursorValid = false;
  }

  /** Moves held requests into the queues, tenants taking turns, while the queues are under `window`. */
  private admitHeld(): void {
    while (this.heldLive > 0 && this.queued < this.window) {
      const e = this.held.shift()!;
      if (e.where !== HELD) continue;
      this.heldLive--;
      this.place(e);
    }
  }

  /** The cursor is an index into the levels: one inserted at or before it (or a prune, -1) moves it. */
  private readonly levelInserted = (index: number): void => {
    if (index <= this.curLevel) this.cursorValid = false;
  };

  /**
   * Whether a request of `level` belongs before the cursor: a higher level, or the cursor's own level (when
   * `sameLevelIfDelayed`, only once the cursor is among that level's delayed requests).
   */
  private beforeCursor(level: Level<Entry>, sameLevelIfDelayed: boolean): boolean {
    const cur = this.levels.list[this.curLevel];
    if (!cur) return true;
    return level.priority < cur.priority || (level.priority === cur.priority && (!sameLevelIfDelayed || this.curDelayed));
  }

  /** Removes the emptied levels that are not kept; the cursor's indices change, so it is dropped. */
  private prune(): void {
    if (this.levels.prune()) this.cursorValid = false;
  }

  waiting(): number {
    return this.queued + this.heldLive;
  }

  inflight(): number {
    return this.queued + this.heldLive + this.running;
  }

  drain(): Promise<void> {
    this.stopped = true;
    // Nothing more can arrive, so nothing waits for a fuller batch any more.
    this.schedule();
    if (this.inflight() === 0) return this.stop();
    return new Promise((resolve) => {
      this.drained = resolve;
    });
  }

  rejectQueued(error: NereidError): void {
    for (const level of this.levels.list) {
      for (const q of [level.queue, level.delayed]) {
        for (let e = q.shift(); e; e = q.shift()) {
          if (e.where === (q === level.queue ? QUEUED : DELAYED)) this.drop(e, error, 'REJECTED');
        }
      }
    }
    for (let e = this.held.shift(); e; e = this.held.shift()) if (e.where === HELD) this.drop(e, error, 'REJECTED');
    this.prune();
    this.cursorValid = false;
    this.checkDrained();
  }

  /** Forms batches now, or at the end of the loop turn for inline instances. */
  private schedule(): void {
    if (this.idle.length === 0) return; // the next instance to finish dispatches
    if (!this.synchronous) return this.dispatch();
    if (this.dispatchScheduled) return;
    this.dispatchScheduled = true;
    setImmediate(this.onImmediate);
  }

  private readonly onImmediate = (): void => {
    this.dispatchScheduled = false;
    this.batchesThisTurn = 0;
    this.dispatch();
  };

  private dispatch(): void {
    if (this.hold > 0) {
      if (this.waiting() < this.hold && !this.stopped) return;
      this.hold = 0;
    }
    for (;;) {
      // Cancelled requests dropped while a batch formed leave room too.
      if (this.heldLive > 0) this.admitHeld();
      if (this.idle.length === 0 || this.queued === 0) return;
      const now = performance.now();
      this.scan(now);
      const n = decideBatch(this.pending, now, this.stopped ? 0 : this.delayMs, this.maxPreferred);
      if (n < 0) return this.delayWake.at(this.pending.oldestMs + this.delayMs, now);
      if (n === 0) {
        if (this.queued === 0 && this.heldLive > 0) continue;
        return;
      }
      const jobs = this.take(n);
      if (jobs.length > 0) void this.run(this.idle.pop()!, jobs, this.order ? this.order.reserve(jobs) : undefined);
    }
  }

  /** Extends the pending batch from the cursor as far as it can grow (see the class comment). */
  private scan(now: number): void {
    const p = this.pending;
    if (!this.cursorValid) {
      this.cursorValid = true;
      this.curLevel = 0;
      this.curDelayed = false;
      this.curIndex = 0;
      p.count = 0;
      p.rows = 0;
      p.markCount = 0;
      p.sendNow = false;
      p.oldestMs = Infinity;
      this.pendingFirst = undefined;
    }
    if (p.sendNow) return;
    while (this.curLevel < this.levels.list.length) {
      const level = this.levels.list[this.curLevel]!;
      const q = this.curDelayed ? level.delayed : level.queue;
      const e = q.at(this.curIndex);
      if (!e) {
        // Everything waiting is in the pending batch: stay at the end of this queue, so a request appended to
        // it later extends the batch rather than invalidating the cursor (see enqueue).
        if (this.queued <= p.count) return;
        if (this.curDelayed) this.curLevel++;
        this.curDelayed = !this.curDelayed;
        this.curIndex = 0;
        continue;
      }
      if (e.where !== (this.curDelayed ? DELAYED : QUEUED)) {
        this.curIndex++;
        continue;
      }
      // Policies apply as the cursor reaches a request: cancelled ones are answered, expired ones whose timer
      // has not fired yet in this turn are rejected or moved (behind the cursor's level: no rescan needed).
      if (e.job.signal?.aborted) {
        this.drop(e, new NereidError('CANCELLED', 'request cancelled'), 'CANCELED');
        this.curIndex++;
        continue;
      }
      if (e.deadlineMs !== 0 && e.deadlineMs <= now && !this.curDelayed) {
        this.expire(e);
        this.curIndex++;
        continue;
      }
      const rows = e.job.rows;
      if (p.count > 0) {
        if (p.markCount === 0 && p.rows + rows > this.maxPreferred) p.markCount = p.count;
        if (p.rows + rows > this.maxBatch || (this.shapeRule ? !sameBatchShapes(this.shapeRule, this.pendingFirst!.inputs, e.job.inputs) : false)) {
          p.sendNow = true;
          return;
        }
      } else {
        this.pendingFirst = e.job;
      }
      p.count++;
      p.rows += rows;
      if (e.arrivedMs < p.oldestMs) p.oldestMs = e.arrivedMs;
      this.curIndex++;
      if (p.rows <= this.maxBatch && this.preferred[p.rows] === 1) p.markCount = p.count;
    }
  }

  /**
   * Takes the first `n` live requests in batch order off the queues, dropping tombstones on the way. A request
   * cancelled while the pending batch waited is answered instead of run.
   */
  private take(n: number): Job[] {
    const jobs: Job[] = [];
    let k = 0;
    for (let li = 0; k < n && li < this.levels.list.length; li++) {
      const level = this.levels.list[li]!;
      k = this.takeFrom(level, level.queue, QUEUED, jobs, k, n);
      k = this.takeFrom(level, level.delayed, DELAYED, jobs, k, n);
    }
    this.cursorValid = false;
    this.prune();
    if (this.heldLive > 0) this.admitHeld();
    return jobs;
  }

  private takeFrom(level: Level<Entry>, q: RingQueue<Entry>, where: number, jobs: Job[], k: number, n: number): number {
    while (k < n) {
      const e = q.shift();
      if (!e) break;
      if (e.where !== where) continue;
      k++;
      if (e.job.signal?.aborted) {
        this.drop(e, new NereidError('CANCELLED', 'request cancelled'), 'CANCELED');
        continue;
      }
      e.where = GONE;
      this.levels.left(level);
      this.queued--;
      this.deadlines.remove(e);
      jobs.push(e.job);
    }
    return k;
  }

  private async run(instance: BackendInstance, jobs: Job[], slots: FinishSlot[] | undefined): Promise<void> {
    this.running += jobs.length;
    let rows = 0;
    for (const j of jobs) {
      j.state = 'running';
      rows += j.rows;
    }
    const start = process.hrtime.bigint();
    let times = NO_TIMES;
    try {
      times = await instance.execute(jobs);
      this.onExecution(rows, times, instance);
    } catch (e) {
      const err = isNereidError(e) ? e : new NereidError('INTERNAL', (e as Error).message);
      for (const j of jobs) j.sender.fail(err);
    }
    if (slots) {
      this.answerInOrder(slots, start, times);
    } else {
      for (const j of jobs) j.finish(start, times);
      this.running -= jobs.length;
    }
    this.idle.push(instance);
    if (this.queued + this.heldLive > 0) {
      // Requests left over from this turn (more than a batch's worth) run at once on an inline instance, as
      // direct.ts does, up to a budget; then the loop sees to I/O first.
      if (this.synchronous && ++this.batchesThisTurn < MAX_BATCHES_PER_TURN) this.dispatch();
      else this.schedule();
    }
    this.checkDrained();
  }

  /** preserve_ordering: answers this batch's requests once every request dispatched earlier is answered. */
  private answerInOrder(slots: readonly FinishSlot[], start: bigint, times: ExecutionTimes): void {
    const order = this.order!;
    order.ended(slots, start, times);
    for (let s = order.next(); s; s = order.next()) {
      this.running--;
      s.job.finish(s.startNs, s.times!);
    }
  }

  /**
   * A request's deadline passed while it waited: DELAY moves it behind its level (a held one goes there when it
   * enters the queues: see place()), REJECT answers it.
   */
  private expire(e: Entry): void {
    const level = e.level;
    this.deadlines.remove(e);
    if (level.delayOnTimeout) {
      if (e.where === HELD) return;
      e.where = DELAYED;
      level.delayed.push(e);
    } else {
      this.drop(e, new NereidError('UNAVAILABLE', `${logPrefix(e.job)}Request timeout expired`), 'REJECTED');
    }
  }

  private onDeadline(): void {
    const now = performance.now();
    for (let e = this.deadlines.heap.peek(); e && e.deadlineMs <= now; e = this.deadlines.heap.peek()) {
      // The request may be in the pending batch, or move into the delayed part the cursor has passed.
      if (this.cursorValid && this.beforeCursor(e.level, false)) this.cursorValid = false;
      this.expire(e);
    }
    this.prune();
    this.deadlines.arm();
    if (this.queued + this.heldLive > 0) this.schedule();
    this.checkDrained();
  }

  /** Answers a request that leaves the queues without running. */
  private drop(e: Entry, error: NereidError, reason: FailureReason): void {
    if (e.where === HELD) this.heldLive--;
    else this.queued--;
    e.where = GONE;
    this.levels.left(e.level);
    this.deadlines.remove(e);
    e.job.state = 'done';
    e.job.reject(error, reason);
  }

  private checkDrained(): void {
    if (this.drained && this.inflight() === 0) {
      void this.stop();
      this.drained();
      this.drained = undefined;
    }
  }

  private stop(): Promise<void> {
    this.delayWake.clear();
    this.deadlines.clear();
    return Promise.resolve();
  }
}

