import { NereidError, isNereidError } from '../errors.js';

/** After a load on demand failed, further requests get its error without a new load for this long. */
const FAILED_BACKOFF_MS = 5000;

/** What a request's wait for its model's load is bounded by. */
export interface LoadWait {
  /** The request's own timeout, in microseconds (0 or undefined: none). */
  readonly timeoutUs?: number | undefined;
  /** The client went away (a closed connection, a cancelled call). */
  readonly signal?: AbortSignal | undefined;
}

/**
 * --model-load-on-demand: loads of models that requests name, shared (two requests for one model start one
 * load), and each request's wait for one, bounded by its own timeout and by --model-load-wait-secs, after
 * which it is answered UNAVAILABLE with a Retry-After. A load that failed is not tried again for a few
 * seconds: requests in between get its error, so a broken model cannot make every request load it anew.
 */
export class OnDemandLoads {
  private readonly running = new Map<string, Promise<void>>();
  private readonly failed = new Map<string, { atMs: number; error: unknown }>();
  /** Loads started on demand, by model name (nereid_model_load_on_demand_count). */
  readonly counts = new Map<string, number>();

  constructor(private readonly load: (name: string) => Promise<void>, private readonly waitMs: number) {}

  /** Resolves once `name` has loaded (starting its load unless one runs); rejects with the load's error. */
  wait(name: string, bounds: LoadWait = {}): Promise<void> {
    const load = this.start(name);
    const limitMs = Math.min(this.waitMs, bounds.timeoutUs ? bounds.timeoutUs / 1000 : Infinity);
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        done();
        reject(new NereidError('UNAVAILABLE', `model '${name}' is loading and was not ready within ${Math.round(limitMs)} ms`, { retryAfterSecs: 1 }));
      }, limitMs);
      const onAbort = (): void => {
        done();
        reject(new NereidError('CANCELLED', 'request cancelled'));
      };
      const done = (): void => {
        clearTimeout(timer);
        bounds.signal?.removeEventListener('abort', onAbort);
      };
      if (bounds.signal?.aborted) return onAbort();
      bounds.signal?.addEventListener('abort', onAbort, { once: true });
      load.then(() => {
        done();
        resolve();
      }, (e: unknown) => {
        done();
        reject(e);
      });
    });
  }

  private start(name: string): Promise<void> {
    const running = this.running.get(name);
    if (running !== undefined) return running;
    const failed = this.failed.get(name);
    if (failed !== undefined && Date.now() - failed.atMs < FAILED_BACKOFF_MS) return Promise.reject(failed.error);
    this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
    const load = this.load(name).then(() => {
      this.failed.delete(name);
    }, (e: unknown) => {
      this.failed.set(name, { atMs: Date.now(), error: isNereidError(e) ? e : new NereidError('INTERNAL', String(e)) });
      throw e;
    }).finally(() => this.running.delete(name));
    this.running.set(name, load);
    // A load nobody waits for any more (every waiter timed out) must not be an unhandled rejection.
    load.catch(() => undefined);
    return load;
  }
}
