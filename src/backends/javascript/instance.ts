import { NereidError, unavailable, type ErrorCode } from '../../errors.js';
import { NO_RESPONSE } from '../../inference/response.js';
import type { Logger } from '../../observability/logger.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { DataType } from '../../tensor/datatype.js';
import { workerStatus, type BackendInstance, type BackendRequest, type ExecutionTimes, type InstanceStatus } from '../backend.js';
import type { HostWorker, WorkerPool } from './pool.js';
import { ERROR_CODE_NAMES, bytesElements, fixedBytes, pack, type FromWorker, type InstanceInit, type WireRequest, type WireTensor } from './wire.js';

/** How long finalize() may take at unload before the instance is dropped anyway (Triton's stub timeout). */
const FINALIZE_TIMEOUT_MS = 30_000;

/** A request handed to the worker that has not had its final response yet. */
interface OpenRequest {
  readonly request: BackendRequest;
  readonly onAbort: (() => void) | undefined;
}

/** Where the instance runs: a worker of the pool and its id there. */
interface Placement {
  readonly worker: HostWorker;
  readonly iid: number;
}

/** How an instance is placed in the pool (see WorkerPool.place). */
export interface PoolSeat {
  readonly pool: WorkerPool;
  /** The model version's key: instances of one version spread over the workers first. */
  readonly model: string;
  readonly dedicated: boolean;
  readonly maxWorkers: number;
}

/**
 * One instance of a JavaScript model: a model object in a worker thread of the server's pool (see pool.ts).
 * Executions go to the worker one at a time; responses come back as the model sends them. When the worker dies
 * (an uncaught exception, a process.exit in a model, an execution past the execute timeout) the instance fails
 * the requests it held and starts again in a fresh worker, initialized again; the model object's state starts
 * over.
 */
export class JsInstance implements BackendInstance {
  private placed: Placement | undefined;
  private starting: Promise<Placement> | undefined;
  private readonly open = new Map<number, OpenRequest>();
  private readonly batches = new Map<number, (inferNs: number) => void>();
  private nextRid = 1;
  private nextBatch = 1;
  private closed = false;
  private onFinalized: ((error?: string) => void) | undefined;
  /** Where the instance is being started (not yet initialized), so kill() can stop it too. */
  private startingAt: Placement | undefined;
  /** Fails the start in progress (kill() leaves a shared worker without hearing from it again). */
  private failStart: ((e: NereidError) => void) | undefined;
  /** The worker stopped because an execution of this instance ran past the execute timeout (see status()). */
  private timedOut: HostWorker | undefined;
  /** After its execution hung once, the instance runs in a worker of its own. */
  private quarantined = false;
  private hungReason: string | undefined;
  private downReason: string | undefined;

  private constructor(
    private readonly init: InstanceInit,
    private readonly seat: PoolSeat,
    private readonly instanceName: string,
    private readonly logger: Logger,
    /** The model's execute timeout (nereid_execute_timeout_ms); undefined: none. */
    private readonly executeTimeoutMs: number | undefined,
  ) {}

  /** Places the instance in a worker and runs initialize(); rejects with initialize's error. */
  static async create(init: InstanceInit, seat: PoolSeat, instanceName: string, logger: Logger, executeTimeoutMs?: number): Promise<JsInstance> {
    const instance = new JsInstance(init, seat, instanceName, logger, executeTimeoutMs);
    await instance.start();
    return instance;
  }

  /** Ready while it is initialized in a live worker, and none of its executions is past the execute timeout. */
  ready(): boolean {
    return this.placed !== undefined && this.hungReason === undefined;
  }

  status(): InstanceStatus {
    return workerStatus(this.instanceName, this.ready(), { hungReason: this.hungReason, downReason: this.downReason, closed: this.closed, starting: 'its worker is starting' });
  }

  private start(): Promise<Placement> {
    const at = this.seat.pool.place(this.seat.model, this.seat.dedicated || this.quarantined, this.seat.maxWorkers);
    const p = new Promise<Placement>((resolve, reject) => {
      let ready = false;
      this.startingAt = at;
      this.failStart = (e) => {
        if (!ready) reject(e);
      };
      at.worker.attach(at.iid, this.seat.model, {
        onMessage: (m) => {
          if (m.t === 'log') return this.log(m.level, m.message);
          if (ready) return this.onMessage(m);
          if (m.t === 'ready') {
            ready = true;
            if (this.startingAt === at) this.startingAt = undefined;
            if (this.closed) {
              at.worker.leave(at.iid);
              reject(unavailable('the instance is unloading'));
              return;
            }
            this.placed = at;
            this.hungReason = undefined;
            this.downReason = undefined;
            resolve(at);
          } else if (m.t === 'init-error') {
            if (this.startingAt === at) this.startingAt = undefined;
            at.worker.leave(at.iid);
            reject(new NereidError('INTERNAL', `initialize() of model instance '${this.instanceName}' failed: ${m.message}`));
          }
        },
        onExit: (reason) => {
          if (this.startingAt === at) this.startingAt = undefined;
          if (!ready) {
            reject(new NereidError('INTERNAL', `the worker of model instance '${this.instanceName}' stopped while loading the model: ${reason}`));
            return;
          }
          this.onExit(at, reason);
        },
      }, this.init);
    });
    this.starting = p;
    const clear = (): void => {
      if (this.starting === p) {
        this.starting = undefined;
        this.failStart = undefined;
      }
    };
    p.then(clear, clear);
    return p;
  }

  async execute(requests: readonly BackendRequest[]): Promise<ExecutionTimes> {
    const t0 = process.hrtime.bigint();
    let at = this.placed;
    if (!at) {
      try {
        if (this.closed) throw unavailable('the instance is unloading');
        at = await (this.starting ?? this.start());
      } catch (e) {
        const why = e instanceof Error ? e.message : String(e);
        if (!this.closed) this.downReason = `its worker could not be started again: ${why}`;
        for (const r of requests) r.sender.fail(unavailable(`model instance '${this.instanceName}' is not available: ${why}`));
        return { inputNs: Number(process.hrtime.bigint() - t0), inferNs: 0, outputNs: 0 };
      }
    }
    const place = at;
    const batch = this.nextBatch++;
    const packed = pack(requests.map((r) => r.inputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape, data: t.data }))));
    const aborted: number[] = [];
    const wire = requests.map((r, i): WireRequest => {
      const rid = this.nextRid++;
      let onAbort: (() => void) | undefined;
      if (r.signal) {
        if (r.signal.aborted) aborted.push(rid);
        else {
          onAbort = (): void => place.worker.post({ t: 'cancel', iid: place.iid, rid });
          r.signal.addEventListener('abort', onAbort, { once: true });
        }
      }
      this.open.set(rid, { request: r, onAbort });
      return {
        rid, id: r.id ?? '', inputs: packed.groups[i]!, outputs: r.outputs, parameters: r.parameters,
        correlationId: r.sequenceId ?? 0, flags: (r.sequenceStart ? 1 : 0) | (r.sequenceEnd ? 2 : 0), timeoutUs: r.timeoutUs ?? 0,
      };
    });
    const inputNs = Number(process.hrtime.bigint() - t0);
    const done = new Promise<number>((resolve) => this.batches.set(batch, resolve));
    const { worker, iid } = place;
    worker.post({ t: 'exec', iid, batch, buffer: packed.buffer, requests: wire }, [packed.buffer]);
    for (const rid of aborted) worker.post({ t: 'cancel', iid, rid });
    const timeoutMs = this.executeTimeoutMs;
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => this.hung(place, timeoutMs), timeoutMs);
    const inferNs = await done;
    if (timer) clearTimeout(timer);
    const totalNs = Number(process.hrtime.bigint() - t0);
    return { inputNs, inferNs, outputNs: Math.max(0, totalNs - inputNs - inferNs) };
  }

  /**
   * An execution ran past the execute timeout: the worker is stopped (its exit fails the requests of every
   * instance in it, and they start again), as a thread cannot be interrupted otherwise. This instance starts
   * again in a worker of its own.
   */
  private hung(at: Placement, timeoutMs: number): void {
    if (at !== this.placed || this.timedOut === at.worker) return;
    this.timedOut = at.worker;
    this.quarantined = true;
    this.hungReason = `execute() did not finish within ${timeoutMs} ms; its worker is stopped and started again`;
    this.logger.error(`execute() of model instance '${this.instanceName}' did not finish within ${timeoutMs} ms; stopping its worker`);
    void at.worker.stop(`execute() of model instance '${this.instanceName}' did not finish within ${timeoutMs} ms`);
  }

  private onMessage(m: FromWorker): void {
    switch (m.t) {
      case 'resp': {
        const o = this.open.get(m.rid);
        if (!o) return;
        if (m.final || m.error) this.forget(m.rid, o);
        if (m.error) {
          o.request.sender.fail(new NereidError(errorCode(m.error.code), m.error.message));
          return;
        }
        const outputs = m.outputs ? unpack(m.buffer!, m.outputs) : NO_RESPONSE;
        o.request.sender.send(outputs, m.final, m.parameters);
        return;
      }
      case 'done': {
        for (const rid of m.unanswered ?? []) {
          const o = this.open.get(rid);
          if (!o) continue;
          this.forget(rid, o);
          o.request.sender.fail(new NereidError('INTERNAL', m.error ?? `model '${this.init.modelName}' sent no response for a request`));
        }
        const resolve = this.batches.get(m.batch);
        this.batches.delete(m.batch);
        resolve?.(m.inferNs);
        return;
      }
      case 'finalized':
        this.onFinalized?.(m.error);
        return;
      default:
        return;
    }
  }

  private forget(rid: number, o: OpenRequest): void {
    this.open.delete(rid);
    if (o.onAbort) o.request.signal!.removeEventListener('abort', o.onAbort);
  }

  /** Fails every request the worker held and frees the executions waiting on it. */
  private failAll(error: NereidError): void {
    const open = [...this.open];
    for (const [rid, o] of open) {
      this.forget(rid, o);
      o.request.sender.fail(error);
    }
    const waiting = [...this.batches.values()];
    this.batches.clear();
    for (const resolve of waiting) resolve(0);
  }

  private onExit(at: Placement, reason: string): void {
    this.onFinalized?.(`the worker stopped: ${reason}`);
    if (at !== this.placed) return;
    this.placed = undefined;
    const w = at.worker;
    const why = this.timedOut === w
      ? `execute() did not finish within ${this.executeTimeoutMs} ms; its worker thread was stopped`
      : `its worker thread stopped (${reason})`;
    if (!this.closed) {
      this.logger.error(`JavaScript model instance '${this.instanceName}' stopped (${this.timedOut === w ? 'execute timeout' : reason}); starting it again`);
      this.downReason = `its worker stopped (${reason}) and is starting again`;
    }
    this.failAll(new NereidError('INTERNAL', `Failed to process the request(s) for model instance '${this.instanceName}', message: ${why}`));
    if (this.closed) return;
    this.start().catch((e: unknown) => {
      const message = e instanceof Error ? e.message : String(e);
      if (this.closed) return;
      this.downReason = `its worker could not be started again: ${message}`;
      this.logger.error(`JavaScript model instance '${this.instanceName}' could not be started again: ${message}`);
    });
  }

  /**
   * Stops the worker at once, and one being started; answers every request it holds with `error` and settles
   * every execution. Nothing is started again; close() then has nothing left to wait for.
   */
  kill(error: NereidError): void {
    for (const at of [this.placed, this.startingAt]) if (at) this.abandon(at);
    this.startingAt = undefined;
    this.failStart?.(error);
    if (this.closed) {
      this.onFinalized?.('the instance was killed');
      return;
    }
    this.closed = true;
    this.placed = undefined;
    this.failAll(error);
  }

  /**
   * Leaves the worker without waiting on anything the instance runs there: a worker of its own is stopped; in a
   * shared one the instance is dropped, and what it still runs ends with the worker.
   */
  private abandon(at: Placement): void {
    if (at.worker.alone(at.iid)) void at.worker.stop(`model instance '${this.instanceName}' was killed`);
    else at.worker.leave(at.iid);
  }

  private log(level: number, message: string): void {
    const text = `${this.instanceName}: ${message}`;
    if (level === 1) this.logger.warn(text);
    else if (level === 2) this.logger.error(text);
    else if (level === 3) this.logger.verbose(1, text);
    else this.logger.info(text);
  }

  /** Runs finalize() in the worker (at most FINALIZE_TIMEOUT_MS), then leaves it. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const at = this.placed ?? (await this.starting?.catch(() => undefined));
    if (at) {
      let finished = false;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.logger.error(`finalize() of model instance '${this.instanceName}' did not return within ${FINALIZE_TIMEOUT_MS / 1000} s; stopping it`);
          resolve();
        }, FINALIZE_TIMEOUT_MS);
        this.onFinalized = (error) => {
          clearTimeout(timer);
          finished = true;
          if (error) this.logger.error(`finalize() of model instance '${this.instanceName}' failed: ${error}`);
          resolve();
        };
        at.worker.post({ t: 'finalize', iid: at.iid });
      });
      this.onFinalized = undefined;
      this.placed = undefined;
      if (finished) at.worker.leave(at.iid);
      else this.abandon(at);
    }
    this.failAll(unavailable(`model instance '${this.instanceName}' was unloaded before the request finished`));
  }
}

function errorCode(code: number): ErrorCode {
  return ERROR_CODE_NAMES[code] ?? 'INTERNAL';
}

function unpack(buffer: ArrayBuffer, wire: readonly WireTensor[]): Tensor[] {
  return wire.map((w): Tensor =>
    w.datatype === 'BYTES'
      ? { name: w.name, datatype: 'BYTES', shape: w.shape, data: bytesElements(buffer, w) }
      : { name: w.name, datatype: w.datatype as Exclude<DataType, 'BYTES'>, shape: w.shape, data: fixedBytes(buffer, w) },
  );
}
