import { NereidError, isNereidError } from '../errors.js';
import type { BackendInstance } from '../backends/backend.js';
import { DeadlineHeap, type HasDeadline } from './deadline-heap.js';
import { stoppedScheduler, type ExecutionListener, type Job, type Scheduler } from './scheduler.js';
import { TenantQueue } from './tenant-queue.js';

/** Most requests one turn of the event loop runs on synchronous instances before letting I/O in again. */
const MAX_RUNS_PER_TURN = 64;

/** Turns in a row that brought one request each, after which requests run as they arrive (see `deferred`). */
const SINGLE_TURNS_TO_RUN_AT_ONCE = 64;

/** While requests run as they arrive, every this many requests the next WATCHED_ARRIVALS are watched. */
const WATCH_EVERY = 64;

/** Arrivals watched at a time: two of them in one turn of the loop turn waiting back on. */
const WATCHED_ARRIVALS = 8;

/** A queued request with a timeout, in the deadline heap. */
class Deadline implements HasDeadline {
  heapIndex = -1;
  constructor(readonly job: Job, readonly deadlineMs: number) {}
}

/**
 * Triton's default scheduler: each request runs alone, in arrival order, on whichever instance is free.
 * Instances are handed out from a stack so a lightly loaded model keeps reusing the same warm instance. An
 * instance with a pipelineDepth above 1 is on the stack that many times and may run that many requests at once
 * (one after another, on its side).
 *
 * Synchronous instances (inline ONNX Runtime sessions) run on the event loop itself, so running a request the
 * moment it is read would interleave every run with the next read and write. Instead their requests wait for
 * the end of the loop turn (setImmediate) and then run back to back: all reads of a turn, then all runs, then
 * the responses, as a node:http server calling onnxruntime-node directly behaves. That keeps the server's
 * cost per request at the plain server's (bench/).
 *
 * A request with a `timeout` (microseconds) that waits for an instance is answered UNAVAILABLE "Request
 * timeout expired" when it passes, as the dynamic batcher's queue policy answers it; Triton's default
 * scheduler ignores the timeout, so such a request could wait forever behind a hung execution. Such a request
 * is never handed to a busy instance (pipelineDepth): it waits here, where its timeout is kept, for a free one.
 *
 * Requests that wait are taken in turns by tenant (their API key ids, see tenant-queue.ts): one tenant's flood
 * delays another tenant's request by at most one of its own. Without keys every request is of one tenant.
 */
export class DirectScheduler implements Scheduler {
  private readonly queue = new TenantQueue<Job>();
  private readonly idle: BackendInstance[];
  /**
   * Requests wait for the end of the loop turn (see the class comment). With instances that run synchronously
   * this adapts: when turn after turn brings a single request (one client at a time), waiting batches nothing
   * and costs a turn of the loop each, so requests then run as they arrive; now and then a few arrivals are
   * watched, and two of them in one turn turn waiting back on. Measured on `simple`, one server core: running at
   * once is 6–12% more throughput at concurrency 1, and waiting 27% more at concurrency 8.
   */
  private deferred: boolean;
  /** Every instance runs synchronously and can run without a promise (executeNow): `deferred` may adapt. */
  private readonly adaptive: boolean;
  private singleTurns = 0;
  private executed = 0;
  private watchIn = WATCH_EVERY;
  /** Arrivals still to watch. */
  private watchLeft = 0;
  /** Turns of the loop while watching, counted by a setImmediate per turn that had an arrival. */
  private turn = 0;
  private turnMarked = false;
  private lastArrivalTurn = -1;
  private flushScheduled = false;
  private readonly listeners = new Map<Job, () => void>();
  private running = 0;
  private queued = 0;
  private stopped = false;
  private drained: (() => void) | undefined;
  /** Some instance takes more than one execution at once. */
  private readonly pipelined: boolean;
  /** Executions running on each instance, kept only when pipelined. */
  private readonly active = new Map<BackendInstance, number>();
  private readonly deadlines = new DeadlineHeap<Deadline>();
  private readonly deadlineOf = new Map<Job, Deadline>();
  private deadlineTimer: NodeJS.Timeout | undefined;
  private deadlineTimerAt = Infinity;

  constructor(instances: readonly BackendInstance[], private readonly onExecution: ExecutionListener) {
    // One entry per execution an instance may hold at once (pipelineDepth): every instance's first entry is on
    // top, so a second execution goes to a busy instance only when none is idle.
    this.idle = [];
    const depth = Math.max(1, ...instances.map((i) => i.pipelineDepth ?? 1));
    for (let level = depth - 1; level >= 0; level--) {
      for (const i of [...instances].reverse()) if ((i.pipelineDepth ?? 1) > level) this.idle.push(i);
    }
    this.deferred = instances.length > 0 && instances.every((i) => i.synchronous === true);
    this.adaptive = this.deferred && instances.every((i) => i.executeNow !== undefined);
    this.pipelined = depth > 1;
  }

  enqueue(job: Job): void {
    if (this.stopped) {
      job.reject(stoppedScheduler(job), 'REJECTED');
      return;
    }
    if (this.adaptive && !this.deferred) this.watch();
    // Requests already waiting go first.
    if (!this.deferred && this.queued === 0) {
      const instance = this.idle.pop();
      if (instance) {
        if (!this.mustWait(instance, job)) {
          void this.run(instance, job, Infinity);
          return;
        }
        this.idle.push(instance);
      }
    }
    this.queued++;
    this.queue.push(job, job.tenant);
    if (job.timeoutUs) this.addDeadline(job);
    // A deferred job waits at most until the end of this loop turn: its signal is checked when it is reached.
    // One that waits for an instance is cancelled as soon as its signal fires, and stops listening once it
    // leaves the queue (signals may be shared, e.g. by all requests of one HTTP connection).
    if (job.signal && !this.deferred) {
      const onAbort = (): void => this.cancelQueued(job);
      job.signal.addEventListener('abort', onAbort, { once: true });
      this.listeners.set(job, onAbort);
    }
    if (this.deferred && !this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
  }

  private readonly flush = (): void => {
    this.flushScheduled = false;
    const instance = this.idle.pop();
    if (!instance) return; // a run loop is still going and will take the queue
    const first = this.next();
    if (!first) {
      this.idle.push(instance);
      return;
    }
    const before = this.executed;
    void this.run(instance, first, MAX_RUNS_PER_TURN);
    // With executeNow the run loop is over when run() returns, so `executed` counts this turn's requests.
    if (this.adaptive) this.countTurn(this.executed - before);
  };

  private countTurn(requests: number): void {
    this.singleTurns = requests === 1 ? this.singleTurns + 1 : 0;
    if (this.singleTurns < SINGLE_TURNS_TO_RUN_AT_ONCE) return;
    this.deferred = false;
    this.singleTurns = 0;
    this.watchIn = WATCH_EVERY;
  }

  /** Running requests as they arrive: now and then, whether a turn brings more than one (then wait again). */
  private watch(): void {
    if (this.watchLeft === 0) {
      if (--this.watchIn > 0) return;
      this.watchIn = WATCH_EVERY;
      this.watchLeft = WATCHED_ARRIVALS;
      this.lastArrivalTurn = -1;
    }
    this.watchLeft--;
    if (this.turnMarked && this.lastArrivalTurn === this.turn) {
      this.deferred = true;
      this.watchLeft = 0;
      return;
    }
    this.lastArrivalTurn = this.turn;
    if (!this.turnMarked) {
      this.turnMarked = true;
      setImmediate(this.nextTurn);
    }
  }

  private readonly nextTurn = (): void => {
    this.turnMarked = false;
    this.turn++;
  };

  waiting(): number {
    return this.queued;
  }

  inflight(): number {
    return this.running + this.queued;
  }

  drain(): Promise<void> {
    this.stopped = true;
    if (this.inflight() === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.drained = resolve;
    });
  }

  rejectQueued(error: NereidError): void {
    for (let j = this.next(); j; j = this.next()) {
      j.state = 'done';
      j.reject(error, 'REJECTED');
    }
    this.checkDrained();
  }

  /** A request with a timeout is not handed to an instance that is running something already. */
  private mustWait(instance: BackendInstance, job: Job): boolean {
    return this.pipelined && job.timeoutUs !== undefined && job.timeoutUs > 0 && (this.active.get(instance) ?? 0) > 0;
  }

  private cancelQueued(job: Job): void {
    // Only a job still waiting is cancelled; one already running finishes. A cancelled job stays in the ring
    // and is skipped when reached, but is answered now.
    if (job.state !== 'queued') return;
    this.listeners.delete(job);
    this.dropDeadline(job);
    job.state = 'done';
    this.queued--;
    job.reject(new NereidError('CANCELLED', 'request cancelled'), 'CANCELED');
    this.checkDrained();
  }

  private addDeadline(job: Job): void {
    const d = new Deadline(job, performance.now() + job.timeoutUs! / 1000);
    this.deadlineOf.set(job, d);
    this.deadlines.push(d);
    if (d.deadlineMs < this.deadlineTimerAt) this.armDeadline();
  }

  private dropDeadline(job: Job): void {
    const d = this.deadlineOf.get(job);
    if (!d) return;
    this.deadlineOf.delete(job);
    this.deadlines.remove(d);
  }

  /** One timer, for the earliest deadline (see dynamic.ts). */
  private armDeadline(): void {
    const next = this.deadlines.peek();
    if (this.deadlineTimer) {
      if (next && this.deadlineTimerAt <= next.deadlineMs) return;
      clearTimeout(this.deadlineTimer);
      this.deadlineTimer = undefined;
      this.deadlineTimerAt = Infinity;
    }
    if (!next) return;
    this.deadlineTimerAt = next.deadlineMs;
    this.deadlineTimer = setTimeout(this.onDeadline, Math.max(0, next.deadlineMs - performance.now()));
  }

  private readonly onDeadline = (): void => {
    this.deadlineTimer = undefined;
    this.deadlineTimerAt = Infinity;
    const now = performance.now();
    for (let d = this.deadlines.peek(); d && d.deadlineMs <= now; d = this.deadlines.peek()) {
      this.deadlines.pop();
      const job = d.job;
      this.deadlineOf.delete(job);
      if (job.state !== 'queued') continue;
      // Left in the ring as a tombstone, as a cancelled job is.
      const onAbort = this.listeners.get(job);
      if (onAbort) {
        this.listeners.delete(job);
        job.signal!.removeEventListener('abort', onAbort);
      }
      job.state = 'done';
      this.queued--;
      job.reject(new NereidError('UNAVAILABLE', `${job.id ? `[request id: ${job.id}] ` : ''}Request timeout expired`), 'REJECTED');
    }
    this.armDeadline();
    this.checkDrained();
  };

  private async run(instance: BackendInstance, job: Job, budget: number): Promise<void> {
    this.running++;
    for (let next: Job | undefined = job; next; next = --budget > 0 ? this.next(instance) : undefined) {
      next.state = 'running';
      this.executed++;
      const start = process.hrtime.bigint();
      if (this.pipelined) this.active.set(instance, (this.active.get(instance) ?? 0) + 1);
      try {
        // A synchronous instance runs the turn's requests back to back, without a promise for each.
        const times = instance.executeNow ? instance.executeNow([next]) : await instance.execute([next]);
        this.onExecution(next.rows, times, instance);
        next.finish(times.waitNs ? start + BigInt(Math.round(times.waitNs)) : start, times);
      } catch (e) {
        // An instance that gives an execution back unrun with CANCELLED (its request was cancelled while it
        // waited inside the instance) has it counted as a request cancelled in the queue.
        if (isNereidError(e)) next.reject(e, e.code === 'CANCELLED' ? 'CANCELED' : undefined);
        else next.reject(new NereidError('INTERNAL', (e as Error).message));
      }
      if (this.pipelined) this.active.set(instance, this.active.get(instance)! - 1);
    }
    this.running--;
    this.idle.push(instance);
    // Out of budget with requests still waiting: they run next turn, after the loop has seen to I/O.
    if (this.deferred && this.queued > 0 && !this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
    this.checkDrained();
  }

  /** The next job waiting, for `instance` when given (see mustWait: a timed job may have to wait for a free one). */
  private next(instance?: BackendInstance): Job | undefined {
    for (;;) {
      const j = this.queue.peek();
      if (!j) return undefined;
      if (j.state !== 'queued') {
        this.queue.shift();
        continue;
      }
      if (instance && this.mustWait(instance, j)) return undefined;
      this.queue.shift();
      if (this.deadlines.size > 0) this.dropDeadline(j);
      const onAbort = this.listeners.get(j);
      if (onAbort) {
        this.listeners.delete(j);
        j.signal!.removeEventListener('abort', onAbort);
      }
      if (j.signal?.aborted) {
        this.cancelQueued(j);
        continue;
      }
      this.queued--;
      return j;
    }
  }

  private checkDrained(): void {
    if (this.drained && this.inflight() === 0) {
      if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
      this.deadlineTimer = undefined;
      this.drained();
      this.drained = undefined;
    }
  }
}
