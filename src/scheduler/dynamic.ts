import { NereidError, isNereidError, unavailable } from '../errors.js';
import type { ModelConfig, ModelQueuePolicy } from '../config/types.js';
import type { BackendInstance } from '../backends/backend.js';
import { RingQueue } from './queue.js';
import type { ExecutionListener, Job, Scheduler } from './scheduler.js';

/** A job as the batcher holds it: when it expires, and whether it has been moved behind the others (DELAY). */
interface Entry {
  readonly job: Job;
  /** Order of arrival, for preserve_ordering. */
  readonly seq: number;
  timer: NodeJS.Timeout | undefined;
  onAbort: (() => void) | undefined;
}

/** One priority level's queues and policy. */
interface Level {
  readonly policy: ModelQueuePolicy;
  readonly queue: RingQueue<Entry>;
  /** Requests whose timeout expired under timeout_action DELAY: served after every level's own queue. */
  readonly delayed: RingQueue<Entry>;
  size: number;
}

interface Candidate {
  readonly entry: Entry;
  readonly level: Level;
  readonly from: RingQueue<Entry>;
}

const NO_POLICY: ModelQueuePolicy = { timeout_action: 'REJECT', default_timeout_microseconds: 0, allow_timeout_override: false, max_queue_size: 0 };

/**
 * Triton's dynamic batcher. Requests wait in one queue per priority level (1 = highest); whenever an instance
 * is free a batch is formed from the front of the queues, highest level first, as large as max_batch_size
 * allows, stopping at the first request whose shapes cannot join it (ragged inputs excepted). With
 * max_queue_delay_microseconds set, a batch smaller than a preferred size waits for more requests until the
 * oldest has waited that long. Queue policies: max_queue_size (a full queue refuses at once), request
 * timeouts fired by timers while requests wait (REJECT answers; DELAY moves the request behind the others),
 * allow_timeout_override for the request's own timeout. preserve_ordering answers requests in arrival order
 * even when batches finish out of order on different instances.
 *
 * Inline instances (synchronous) form their batches at the end of the loop turn, so the requests read in one
 * turn run as one batch at no extra latency.
 */
export class DynamicBatcher implements Scheduler {
  private readonly idle: BackendInstance[];
  private readonly levels: Level[];
  private readonly defaultLevel: number;
  private readonly maxBatch: number;
  private readonly preferred: readonly number[];
  private readonly delayNs: bigint;
  private readonly preserveOrdering: boolean;
  private readonly ragged: ReadonlySet<string>;
  private readonly synchronous: boolean;
  private queued = 0;
  private running = 0;
  private nextSeq = 0;
  private stopped = false;
  private drained: (() => void) | undefined;
  private dispatchScheduled = false;
  private delayTimer: NodeJS.Timeout | undefined;
  /** preserve_ordering: finished jobs waiting for earlier ones, by arrival number. */
  private readonly finished = new Map<number, () => void>();
  private nextToAnswer = 0;

  constructor(
    private readonly name: string,
    config: ModelConfig,
    instances: readonly BackendInstance[],
    private readonly onExecution: ExecutionListener,
  ) {
    const db = config.dynamic_batching!;
    this.idle = [...instances].reverse();
    this.synchronous = instances.length > 0 && instances.every((i) => i.synchronous === true);
    this.maxBatch = Math.max(1, config.max_batch_size);
    this.preferred = [...db.preferred_batch_size].filter((n) => n > 0 && n <= this.maxBatch).sort((a, b) => b - a);
    this.delayNs = BigInt(db.max_queue_delay_microseconds) * 1000n;
    this.preserveOrdering = db.preserve_ordering;
    // Ragged inputs may only share a batch when the backend can take them flattened with batch_input
    // tensors telling the pieces apart; the ONNX Runtime backend cannot yet, so without batch_input requests
    // with different shapes run in different batches.
    this.ragged = config.batch_input.length > 0 ? new Set(config.input.filter((i) => i.allow_ragged_batch).map((i) => i.name)) : new Set();
    const count = Math.max(1, db.priority_levels);
    this.defaultLevel = db.priority_levels > 0 ? db.default_priority_level : 1;
    this.levels = Array.from({ length: count }, (_, i) => ({
      policy: db.priority_queue_policy[String(i + 1)] ?? db.default_queue_policy ?? NO_POLICY,
      queue: new RingQueue<Entry>(),
      delayed: new RingQueue<Entry>(),
      size: 0,
    }));
  }

  enqueue(job: Job): void {
    if (this.stopped) return job.reject(unavailable('model is unloading; request refused'));
    // Priority 0 (or none) is the default level; a number past the last level is the lowest priority.
    const p = job.priority ?? 0;
    const levelNo = p === 0 ? this.defaultLevel : Math.min(p, this.levels.length);
    const level = this.levels[levelNo - 1]!;
    const max = level.policy.max_queue_size;
    if (max > 0 && level.size >= max) {
      return job.reject(new NereidError('UNAVAILABLE', 'Exceeds maximum queue size'));
    }
    const entry: Entry = { job, seq: this.nextSeq++, timer: undefined, onAbort: undefined };
    const timeoutUs = level.policy.allow_timeout_override && job.timeoutUs ? job.timeoutUs : level.policy.default_timeout_microseconds;
    if (timeoutUs > 0) entry.timer = setTimeout(() => this.expire(entry, level), timeoutUs / 1000);
    if (job.signal) {
      const onAbort = (): void => this.cancel(entry, level);
      job.signal.addEventListener('abort', onAbort, { once: true });
      entry.onAbort = onAbort;
    }
    level.queue.push(entry);
    level.size++;
    this.queued++;
    this.schedule();
  }

  inflight(): number {
    return this.queued + this.running;
  }

  drain(): Promise<void> {
    this.stopped = true;
    if (this.inflight() === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.drained = resolve;
    });
  }

  rejectQueued(error: NereidError): void {
    for (const level of this.levels) {
      for (const q of [level.queue, level.delayed]) {
        for (let e = q.shift(); e; e = q.shift()) {
          if (e.job.state !== 'queued') continue;
          this.leave(e, level);
          e.job.state = 'done';
          this.skip(e.seq);
          e.job.reject(error);
        }
      }
    }
    this.checkDrained();
  }

  /** Forms batches now, or at the end of the loop turn for inline instances. */
  private schedule(): void {
    if (!this.synchronous) return this.dispatch();
    if (this.dispatchScheduled) return;
    this.dispatchScheduled = true;
    setImmediate(() => {
      this.dispatchScheduled = false;
      this.dispatch();
    });
  }

  private dispatch(): void {
    while (this.idle.length > 0 && this.queued > 0) {
      const batch = this.formBatch();
      if (!batch) return;
      void this.run(this.idle.pop()!, batch);
    }
  }

  /**
   * The next batch, or undefined when it should wait for more requests (a queue delay is set, the batch is
   * below every preferred size and below max_batch_size, and its oldest request has not waited long enough).
   */
  private formBatch(): Entry[] | undefined {
    const candidates: Candidate[] = [];
    let rows = 0;
    let first: Entry | undefined;
    const take = (level: Level, q: RingQueue<Entry>): boolean => {
      for (;;) {
        const e = q.peek();
        if (!e) return true;
        if (e.job.state !== 'queued' || e.job.signal?.aborted) {
          q.shift();
          if (e.job.state === 'queued') this.cancel(e, level);
          continue;
        }
        if (rows + e.job.rows > this.maxBatch && candidates.length > 0) return false;
        if (first && !this.compatible(first.job, e.job)) return false;
        candidates.push({ entry: e, level, from: q });
        first ??= e;
        rows += e.job.rows;
        q.shift();
        if (rows >= this.maxBatch) return false;
      }
    };
    let open = true;
    for (const level of this.levels) if (open) open = take(level, level.queue);
    for (const level of this.levels) if (open) open = take(level, level.delayed);
    if (candidates.length === 0) return undefined;
    // The largest preferred size the waiting rows can fill, if any.
    const fit = this.preferred.find((n) => n <= rows);
    if (open && this.delayNs > 0n && rows < this.maxBatch && fit === undefined) {
      const waited = process.hrtime.bigint() - first!.job.enqueuedNs;
      if (waited < this.delayNs) {
        // Not yet: put them back in front, in order, and look again when the oldest has waited long enough.
        this.putBack(candidates);
        this.armDelay(this.delayNs - waited);
        return undefined;
      }
    }
    // With preferred sizes and more rows than the largest preferred one that fits, Triton sends that size.
    // More rows than the largest preferred size they fill: send that size, the rest waits for the next batch.
    if (fit !== undefined && rows > fit) {
      let keep = 0;
      let n = 0;
      while (n < candidates.length && keep + candidates[n]!.entry.job.rows <= fit) keep += candidates[n++]!.entry.job.rows;
      if (keep === fit) this.putBack(candidates.splice(n));
    }
    for (const { entry, level } of candidates) {
      this.leave(entry, level);
      entry.job.state = 'running';
    }
    return candidates.map((c) => c.entry);
  }

  /** Returns taken entries to the front of the queues they came from, keeping their order. */
  private putBack(items: Candidate[]): void {
    const byQueue = new Map<RingQueue<Entry>, Entry[]>();
    for (const { entry, from } of items) {
      const list = byQueue.get(from);
      if (list) list.push(entry);
      else byQueue.set(from, [entry]);
    }
    for (const [q, entries] of byQueue) q.unshiftAll(entries);
  }

  private armDelay(ns: bigint): void {
    if (this.delayTimer) return;
    this.delayTimer = setTimeout(() => {
      this.delayTimer = undefined;
      this.dispatch();
    }, Math.max(0, Number(ns) / 1e6));
  }

  /** Same shapes past the batch dimension, except for inputs that allow ragged batches. */
  private compatible(a: Job, b: Job): boolean {
    if (a.inputs.length !== b.inputs.length) return false;
    for (const ta of a.inputs) {
      if (this.ragged.has(ta.name)) continue;
      const tb = b.inputs.find((t) => t.name === ta.name);
      if (!tb || tb.datatype !== ta.datatype || tb.shape.length !== ta.shape.length) return false;
      for (let i = 1; i < ta.shape.length; i++) if (ta.shape[i] !== tb.shape[i]) return false;
    }
    return true;
  }

  private async run(instance: BackendInstance, batch: Entry[]): Promise<void> {
    this.running += batch.length;
    const jobs = batch.map((e) => e.job);
    const start = process.hrtime.bigint();
    let times = { inputNs: 0, inferNs: 0, outputNs: 0 };
    try {
      times = await instance.execute(jobs);
      let rows = 0;
      for (const j of jobs) rows += j.rows;
      this.onExecution(rows, times);
    } catch (e) {
      const err = isNereidError(e) ? e : new NereidError('INTERNAL', (e as Error).message);
      for (const j of jobs) j.sender.fail(err);
    }
    for (const e of batch) this.answer(e, () => e.job.finish(start, times));
    this.running -= batch.length;
    this.idle.push(instance);
    if (this.queued > 0) this.schedule();
    this.checkDrained();
  }

  /** Answers at once, or in arrival order with preserve_ordering. */
  private answer(e: Entry, finish: () => void): void {
    if (!this.preserveOrdering) return finish();
    this.finished.set(e.seq, finish);
    this.releaseInOrder();
  }

  private releaseInOrder(): void {
    for (let f = this.finished.get(this.nextToAnswer); f; f = this.finished.get(this.nextToAnswer)) {
      this.finished.delete(this.nextToAnswer++);
      f();
    }
  }

  /** A request's queue timeout fired while it waited. */
  private expire(e: Entry, level: Level): void {
    e.timer = undefined;
    if (e.job.state !== 'queued') return;
    if (level.policy.timeout_action === 'DELAY') {
      // Behind everything that has not timed out, at every level.
      if (level.queue.remove(e)) level.delayed.push(e);
      return;
    }
    if (!level.queue.remove(e)) level.delayed.remove(e);
    this.leave(e, level);
    e.job.state = 'done';
    this.skip(e.seq);
    e.job.reject(new NereidError('UNAVAILABLE', 'Request timeout expired'));
    this.checkDrained();
  }

  private cancel(e: Entry, level: Level): void {
    if (e.job.state !== 'queued') return;
    if (!level.queue.remove(e)) level.delayed.remove(e);
    this.leave(e, level);
    e.job.state = 'done';
    this.skip(e.seq);
    e.job.reject(new NereidError('CANCELLED', 'request cancelled'));
    this.checkDrained();
  }

  /** A request that will never be answered by a batch must not hold back the ones after it. */
  private skip(seq: number): void {
    if (!this.preserveOrdering) return;
    this.finished.set(seq, () => undefined);
    this.releaseInOrder();
  }

  /** Bookkeeping when a job leaves the queues for any reason. */
  private leave(e: Entry, level: Level): void {
    if (e.timer) clearTimeout(e.timer);
    e.timer = undefined;
    if (e.onAbort) e.job.signal!.removeEventListener('abort', e.onAbort);
    e.onAbort = undefined;
    level.size--;
    this.queued--;
  }

  private checkDrained(): void {
    if (this.drained && this.inflight() === 0) {
      if (this.delayTimer) clearTimeout(this.delayTimer);
      this.drained();
      this.drained = undefined;
    }
  }
}

