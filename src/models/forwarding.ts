import { NereidError, isNereidError, unavailable } from '../errors.js';
import type { ExecutionTimes } from '../backends/backend.js';
import type { Job, Scheduler } from '../scheduler/scheduler.js';

/**
 * What a scheduler that hands each request on to other models' schedulers (an ensemble's steps, a router's
 * targets) keeps for itself: nothing waits in it, so it only counts the requests it is running, refuses new
 * ones once draining, and drains when the count reaches zero. The composing models' own schedulers do the
 * queueing, batching and limits.
 */
export abstract class ForwardingScheduler implements Scheduler {
  private running = 0;
  private stopped = false;
  private drained: (() => void) | undefined;

  abstract enqueue(job: Job): void;

  /** True, after answering the job, when the scheduler is draining and takes no new work. */
  protected refuseWhenStopped(job: Job, message: string): boolean {
    if (this.stopped) job.reject(unavailable(message));
    return this.stopped;
  }

  /**
   * Runs the job's forwarding: the job counts as running until `work` settles, then finishes with the time it
   * took. A failure of `work` is the job's answer; on success `work` has answered it.
   */
  protected forward(job: Job, work: () => Promise<void>): void {
    this.running++;
    job.state = 'running';
    const start = process.hrtime.bigint();
    let running: Promise<void>;
    try {
      running = work();
    } catch (e) {
      // A throw before the work's promise exists still ends the job, or drain would wait for it forever.
      running = Promise.reject(e);
    }
    let succeeded = false;
    running.then(() => {
      succeeded = true;
    }, (e: unknown) => job.sender.fail(isNereidError(e) ? e : new NereidError('INTERNAL', (e as Error).message))).finally(() => {
      const now = process.hrtime.bigint();
      const times = { inputNs: 0, inferNs: Number(now - start), outputNs: 0 };
      job.finish(start, times);
      if (succeeded) this.succeeded(job, times);
      else this.failed(job, Number(now - job.enqueuedNs));
      this.running--;
      if (this.drained && this.running === 0) {
        this.drained();
        this.drained = undefined;
      }
    });
  }

  /** A forwarded request that succeeded, with the time its forwarding took. */
  protected succeeded(_job: Job, _times: ExecutionTimes): void {}

  /** A forwarded request that failed, with the time since it was enqueued. */
  protected failed(_job: Job, _durationNs: number): void {}

  inflight(): number {
    return this.running;
  }

  /** Nothing waits here: the requests wait in the composing models' schedulers. */
  waiting(): number {
    return 0;
  }

  drain(): Promise<void> {
    this.stopped = true;
    if (this.running === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.drained = resolve;
    });
  }

  /** Nothing is queued here to reject. */
  rejectQueued(): void {}
}
