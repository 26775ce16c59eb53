import { Worker } from 'node:worker_threads';
import type * as ort from 'onnxruntime-node';
import { NereidError } from '../../errors.js';
import type { OrtFeeds, OrtResults, OrtSession } from './session.js';

/**
 * Where a session runs. onnxruntime-node's run() is synchronous on the calling thread, so:
 * - inline: on the event loop. Nothing is faster for models that take microseconds, where a hop to another
 *   thread and back (~100 µs here) would cost more than the model;
 * - worker: in a worker thread of its own, so instances really run concurrently and a slow model never
 *   stalls the event loop. Inputs and outputs are copied across once each.
 */
export interface Runner {
  readonly placement: 'inline' | 'worker';
  /** run() answers at once (an inline run on a synchronous session). */
  readonly synchronous: boolean;
  /** Inline runs answer synchronously (see session.ts); worker runs answer with a promise. */
  run(feeds: OrtFeeds, fetches: readonly string[]): OrtResults | Promise<OrtResults>;
  close(): Promise<void>;
}

export class InlineRunner implements Runner {
  readonly placement = 'inline';

  readonly synchronous: boolean;

  constructor(private readonly session: OrtSession) {
    this.synchronous = session.synchronous;
  }

  run(feeds: OrtFeeds, fetches: readonly string[]): OrtResults | Promise<OrtResults> {
    return this.session.run(feeds, fetches);
  }

  close(): Promise<void> {
    return this.session.release();
  }
}

interface WorkerReply {
  id: number;
  error?: string;
  outputs?: OrtResults;
}

export class WorkerRunner implements Runner {
  readonly placement = 'worker';
  readonly synchronous = false;
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (o: OrtResults) => void; reject: (e: Error) => void }>();

  private constructor(private readonly worker: Worker) {
    worker.on('message', (m: WorkerReply) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (m.error !== undefined) p.reject(new Error(m.error));
      else p.resolve(m.outputs!);
    });
    worker.on('error', (e) => this.failAll(e));
    worker.on('exit', () => this.failAll(new Error('onnxruntime worker thread exited')));
  }

  static async start(path: string, options: ort.InferenceSession.SessionOptions): Promise<WorkerRunner> {
    const worker = new Worker(new URL('./session-worker.js', import.meta.url), { workerData: { path, options } });
    await new Promise<void>((resolve, reject) => {
      worker.once('message', (m: { ready?: boolean; error?: string }) => (m.ready ? resolve() : reject(new NereidError('INVALID_ARG', m.error ?? 'worker failed'))));
      worker.once('error', reject);
    });
    return new WorkerRunner(worker);
  }

  run(feeds: OrtFeeds, fetches: readonly string[]): Promise<OrtResults> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, feeds, fetches });
    });
  }

  private failAll(e: Error): void {
    for (const p of this.pending.values()) p.reject(e);
    this.pending.clear();
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}
