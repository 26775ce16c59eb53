import { Worker } from 'node:worker_threads';
import { NereidError, invalidArg, type ErrorCode } from '../../errors.js';

/**
 * JSON request headers: parsed inline when small, in a worker thread when large, so one client's big JSON
 * body never stalls everyone else's requests. The threshold is where parsing starts to cost more than the
 * hop to the worker and back.
 */
export const OFF_THREAD_BYTES = 256 * 1024;

export function parseJsonInline(body: Buffer, length: number): unknown {
  try {
    return JSON.parse(body.toString('utf8', 0, length));
  } catch (e) {
    throw invalidArg(`failed to parse the request JSON buffer: ${(e as Error).message}`);
  }
}

type Pending = { resolve: (v: unknown) => void; reject: (e: unknown) => void };

export class JsonParser {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;

  parse(body: Buffer, length: number): Promise<unknown> {
    if (length < OFF_THREAD_BYTES) {
      try {
        return Promise.resolve(parseJsonInline(body, length));
      } catch (e) {
        return Promise.reject(e);
      }
    }
    const w = this.ensureWorker();
    const id = this.nextId++;
    // A copy: the body's binary part must stay here, and the JSON part is transferred away.
    const text = new Uint8Array(body.subarray(0, length));
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      w.postMessage({ id, text }, [text.buffer]);
    });
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(new URL('./json-worker.js', import.meta.url));
    w.unref();
    w.on('message', (m: { id: number; json?: unknown; error?: { code: string; message: string } }) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (m.error) {
        p.reject(m.error.code === 'PARSE'
          ? invalidArg(`failed to parse the request JSON buffer: ${m.error.message}`)
          : new NereidError(m.error.code as ErrorCode, m.error.message));
      } else p.resolve(m.json);
    });
    w.on('error', (e) => this.failAll(e));
    w.on('exit', () => {
      this.worker = undefined;
      this.failAll(new Error('JSON worker exited'));
    });
    this.worker = w;
    return w;
  }

  private failAll(e: Error): void {
    for (const p of this.pending.values()) p.reject(new NereidError('INTERNAL', e.message));
    this.pending.clear();
  }

  async close(): Promise<void> {
    await this.worker?.terminate();
  }
}
