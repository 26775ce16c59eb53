import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { invalidArg } from '../../errors.js';
import type { FromWorker, InstanceInit, ToWorker } from './wire.js';

const WORKER_URL = new URL('./model-worker.js', import.meta.url);

/**
 * A worker keeps every module it imported (ES modules cannot be unloaded), one per instance it ever hosted. Past
 * this many it takes no new instances, and it ends with the last of those it holds, so models loaded and
 * unloaded again and again do not grow one worker for ever.
 */
const MAX_IMPORTS_PER_WORKER = 64;

/** A worker started ahead that no instance has come to ends after this long (a model that failed to load). */
const PRESTART_IDLE_MS = 10_000;

/** What an instance hosted in a worker hears from it. */
export interface Guest {
  onMessage(m: FromWorker): void;
  /** The worker stopped: crashed, or was stopped (an execution past its timeout, a kill). */
  onExit(reason: string): void;
}

/**
 * One worker thread and the instances it hosts. Each instance has an id (`iid`) unique in the pool; the worker's
 * messages go to the instance they name. The worker ends when its last instance leaves.
 */
export class HostWorker {
  private readonly worker: Worker;
  private readonly guests = new Map<number, { guest: Guest; model: string }>();
  private imports = 0;
  private exited = false;
  private stopReason: string | undefined;

  constructor(private readonly pool: WorkerPool, readonly dedicated: boolean) {
    this.worker = new Worker(WORKER_URL);
    let lastError: Error | undefined;
    this.worker.on('message', (m: FromWorker) => this.guests.get(m.iid)?.guest.onMessage(m));
    this.worker.on('error', (e) => {
      lastError = e;
    });
    this.worker.on('exit', (code) => {
      this.exited = true;
      this.pool.forget(this);
      const reason = this.stopReason ?? (lastError ? String(lastError) : `exit code ${code}`);
      const guests = [...this.guests.values()];
      this.guests.clear();
      for (const { guest } of guests) guest.onExit(reason);
    });
  }

  /** Whether it may take one more instance. */
  get open(): boolean {
    return !this.exited && !this.dedicated && this.imports < MAX_IMPORTS_PER_WORKER && this.stopReason === undefined;
  }

  get size(): number {
    return this.guests.size;
  }

  hosts(model: string): number {
    let n = 0;
    for (const g of this.guests.values()) if (g.model === model) n++;
    return n;
  }

  /**
   * Started ahead of its first instance: it registers the module hooks now if asked, does not keep the process
   * alive, and ends if no instance comes.
   */
  idle(hooks: boolean): void {
    if (hooks) this.post({ t: 'hooks' });
    this.worker.unref();
    setTimeout(() => {
      if (this.guests.size === 0) void this.stop('no instance came to it');
    }, PRESTART_IDLE_MS).unref();
  }

  /** Loads an instance (or runs an autoComplete) in this worker; its messages go to `guest` until it leaves. */
  attach(iid: number, model: string, guest: Guest, init: InstanceInit): void {
    if (this.guests.size === 0) this.worker.ref();
    this.guests.set(iid, { guest, model });
    this.imports++;
    this.post({ t: 'load', iid, init });
  }

  /** The instance leaves; the worker ends when it was the last. */
  leave(iid: number): void {
    if (!this.guests.delete(iid)) return;
    if (this.guests.size === 0) void this.stop('it hosts no instance any more');
    else this.post({ t: 'drop', iid });
  }

  /** Whether the instance is the only one here. */
  alone(iid: number): boolean {
    return this.guests.size === 1 && this.guests.has(iid);
  }

  post(m: ToWorker, transfer?: ArrayBuffer[]): void {
    if (!this.exited) this.worker.postMessage(m, transfer);
  }

  /** Stops the worker; every instance still in it hears `reason` through onExit. */
  stop(reason: string): Promise<number> {
    this.stopReason ??= reason;
    this.pool.forget(this);
    return this.worker.terminate();
  }
}

/**
 * The worker threads a server's JavaScript instances share. A worker costs about 17 MiB and tens of milliseconds
 * to start, which one thread per instance paid for every instance. The pool grows only as far as instances of the
 * same model need threads of their own to run at once, and never past `maxWorkers` (by default one less than the
 * cores, leaving one to the event loop). An instance of a model with the parameter `nereid_dedicated_worker`
 * "true" runs alone in a worker, as does an instance started again after its execution ran past the execute
 * timeout, so that a model that hangs does not stop other models' instances twice.
 *
 * Instances in one worker share its thread and its fate: an uncaught exception or an execution stopped at its
 * timeout stops the worker, and every instance in it fails its requests in flight and starts again.
 */
export class WorkerPool {
  private readonly workers = new Set<HostWorker>();
  private nextIid = 1;

  /** A worker for a new instance of `model` (a model version's key) and the instance's id. */
  place(model: string, dedicated: boolean, maxWorkers: number): { worker: HostWorker; iid: number } {
    const iid = this.nextIid++;
    if (dedicated) return { worker: new HostWorker(this, true), iid };
    let best: HostWorker | undefined;
    let shared = 0;
    for (const w of this.workers) {
      if (!w.dedicated) shared++;
      if (!w.open) continue;
      if (!best || w.hosts(model) < best.hosts(model) || (w.hosts(model) === best.hosts(model) && w.size < best.size)) best = w;
    }
    if (!best || (best.hosts(model) > 0 && shared < maxWorkers)) {
      best = new HostWorker(this, false);
      this.workers.add(best);
    }
    return { worker: best, iid };
  }

  /** Starts a shared worker ahead of the first instance, unless one is there. */
  prestart(hooks: boolean): void {
    for (const w of this.workers) if (w.open) return;
    const w = new HostWorker(this, false);
    this.workers.add(w);
    w.idle(hooks);
  }

  forget(w: HostWorker): void {
    this.workers.delete(w);
  }
}

/** The backend config `worker-threads` (--backend-config=javascript,worker-threads=N): the pool's bound. */
export function maxWorkers(backendConfig: Readonly<Record<string, string>>): number {
  const v = backendConfig['worker-threads'];
  if (v === undefined || v === '') return Math.max(1, availableParallelism() - 1);
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw invalidArg(`backend config worker-threads of backend javascript must be a positive integer, got '${v}'`);
  return n;
}

/**
 * Whether `nereid/backend-utils` already resolves, from a file in `dir`, to this server's utils module: a
 * repository inside the package (the bundled examples; a package may import itself by name) or below a
 * node_modules holding this very copy. Otherwise a worker registers module hooks for it (loader-hooks.ts), which
 * in Node 20 run on a thread of their own: tens of milliseconds and several MiB more at startup.
 */
export function resolvesToOwnUtils(dir: string): boolean {
  try {
    return createRequire(join(dir, 'model.js')).resolve('nereid/backend-utils') === fileURLToPath(new URL('./utils.js', import.meta.url));
  } catch {
    return false;
  }
}
