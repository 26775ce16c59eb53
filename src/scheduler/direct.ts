import { NereidError, isNereidError, unavailable } from '../errors.js';
import type { BackendInstance } from '../backends/backend.js';
import { RingQueue } from './queue.js';
import type { ExecutionListener, Job, Scheduler } from './scheduler.js';

/**
 * Triton's default scheduler: each request runs alone, in arrival order, on whichever instance is free.
 * Instances are handed out from a stack so a lightly loaded model keeps reusing the same warm instance.
 */
export class DirectScheduler implements Scheduler {
  private readonly queue = new RingQueue<Job>();
  private readonly idle: BackendInstance[];
  private running = 0;
  private queued = 0;
  private stopped = false;
  private drained: (() => void) | undefined;

  constructor(instances: readonly BackendInstance[], private readonly onExecution: ExecutionListener) {
    this.idle = [...instances].reverse();
  }

  enqueue(job: Job): void {
    if (this.stopped) {
      job.reject(unavailable('model is unloading; request refused'));
      return;
    }
    const instance = this.idle.pop();
    if (instance) {
      void this.run(instance, job);
      return;
    }
    this.queued++;
    this.queue.push(job);
    if (job.signal) {
      job.signal.addEventListener('abort', () => this.cancelQueued(job), { once: true });
    }
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

  private cancelQueued(job: Job): void {
    // Only a job still waiting is cancelled; one already running finishes. A cancelled job stays in the ring
    // and is skipped when reached, but is answered now.
    if (job.state !== 'queued') return;
    job.state = 'done';
    this.queued--;
    job.reject(new NereidError('CANCELLED', 'request cancelled'));
    this.checkDrained();
  }

  private async run(instance: BackendInstance, job: Job): Promise<void> {
    this.running++;
    for (let next: Job | undefined = job; next; next = this.next()) {
      next.state = 'running';
      const start = process.hrtime.bigint();
      try {
        const times = await instance.execute([next]);
        this.onExecution(next.rows, times);
        next.finish(start, times);
      } catch (e) {
        next.reject(isNereidError(e) ? e : new NereidError('INTERNAL', (e as Error).message));
      }
    }
    this.running--;
    this.idle.push(instance);
    this.checkDrained();
  }

  private next(): Job | undefined {
    for (;;) {
      const j = this.queue.shift();
      if (!j) return undefined;
      if (j.state !== 'queued') continue;
      this.queued--;
      return j;
    }
  }

  private checkDrained(): void {
    if (this.drained && this.inflight() === 0) {
      this.drained();
      this.drained = undefined;
    }
  }
}
