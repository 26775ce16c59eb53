import { NereidError, unavailable, type ErrorCode } from '../../errors.js';
import { NO_RESPONSE, type Parameters } from '../../inference/index.js';
import type { Logger } from '../../observability/logger.js';
import { wireByteLength, type Tensor } from '../../tensor/tensor.js';
import { workerStatus, type BackendInstance, type BackendRequest, type ExecutionTimes, type InstanceMemory, type InstanceStatus, type ModelCalls } from '../backend.js';
import { residentBytes } from './resident-bytes.js';
import { StubCalls } from './calls.js';
import { ExecutionBook, type Batch } from './executions.js';
import type { Interpreter } from './interpreter.js';
import { InputArena, StubRegions, align, unlinkAll, type Mapping } from './shm.js';
import { readOutputs, writeInput } from './shm-tensors.js';
import { BlockReleases } from './block-releases.js';
import { StubProcess } from './stub.js';
import { ERROR_CODE_NAMES, type Block, type FromStub, type StubInit, type WireRequest } from './wire.js';

/** How long finalize() may take at unload before the stub is stopped anyway (Triton's stub timeout). */
const FINALIZE_TIMEOUT_MS = 30_000;
/** After finalize, how long the stub may take to exit by itself. */
const EXIT_WAIT_MS = 5_000;

export interface PythonInstanceOptions {
  readonly interpreter: Interpreter;
  /** The stub's init message, less the shared-memory settings each start fills in. */
  readonly init: Omit<StubInit, 'shm'>;
  readonly instanceName: string;
  readonly logger: Logger;
  readonly calls: ModelCalls | undefined;
  /** Region names start with this (Nereid's prefix, the server's pid, an instance number). */
  readonly shmPrefix: string;
  readonly shmDefaultBytes: number;
  readonly shmGrowthBytes: number;
  /** The model's execute timeout (a Nereid config parameter); undefined: none, as in Triton. */
  readonly executeTimeoutMs: number | undefined;
  /**
   * Executions the scheduler may hand this instance at once: the stub runs them one after another, and the
   * next one waits in the stub rather than in the server, so it starts as soon as the current one ends. Without
   * it the stub idles for a round trip per execution (its answer read and the next request sent: about
   * 0.3-0.5 ms on a loaded two-core machine). A request cancelled while it waits in the stub is skipped there,
   * as the scheduler would have skipped it.
   */
  readonly pipelineDepth: number;
}

/** One start of the stub process, with what belongs to it alone. */
interface Life {
  readonly stub: StubProcess;
  /** Names of the stub's own regions start with this. */
  readonly prefix: string;
  readonly regions: StubRegions;
  timedOut: boolean;
}

/**
 * One instance of a Python model: one stub process running one TritonPythonModel object. Executions go to the
 * stub one at a time; responses come back as the model sends them. A stub that dies (a crash, or a hung
 * execute past the model's timeout, which is then killed) fails the requests it held and is started again,
 * initialize() included; the model object's state starts over.
 */
export class PythonInstance implements BackendInstance {
  readonly pipelineDepth: number;
  private life: Life | undefined;
  private starting: Promise<Life> | undefined;
  private readonly arena: InputArena;
  private readonly book: ExecutionBook;
  private readonly calls: StubCalls;
  private lives = 0;
  private nextRid = 1;
  private nextBatch = 1;
  private closed = false;
  /** A stub being started (not yet initialized), so kill() can stop it too. */
  private startingStub: StubProcess | undefined;
  /** An execution ran past the execute timeout and no stub has been initialized since (see status()). */
  private hungReason: string | undefined;
  /** Why no stub is up, while none is. */
  private downReason: string | undefined;
  private onFinalized: ((error?: string) => void) | undefined;
  private readonly releases = new BlockReleases((blocks) => this.life?.stub.send({ t: 'release', blocks }));

  private constructor(private readonly opts: PythonInstanceOptions) {
    this.pipelineDepth = opts.pipelineDepth;
    this.arena = new InputArena(opts.shmPrefix, opts.shmDefaultBytes, opts.shmGrowthBytes, (name) => this.life?.stub.send({ t: 'drop', r: name }));
    this.book = new ExecutionBook(this.arena, opts.init.modelName);
    this.calls = new StubCalls(opts.calls, (rid) => this.book.open.get(rid)?.request.trace);
  }

  /** Starts the stub and runs initialize(); rejects with initialize's error and traceback. */
  static async create(opts: PythonInstanceOptions): Promise<PythonInstance> {
    const instance = new PythonInstance(opts);
    try {
      await instance.start();
    } catch (e) {
      instance.arena.close();
      unlinkAll(opts.shmPrefix);
      throw e;
    }
    return instance;
  }

  private start(): Promise<Life> {
    const o = this.opts;
    const prefix = `${o.shmPrefix}g${++this.lives}_`;
    const init: StubInit = { ...o.init, shm: { prefix, instancePrefix: o.shmPrefix, defaultBytes: o.shmDefaultBytes, growthBytes: o.shmGrowthBytes } };
    const stub = new StubProcess(o.interpreter, init, o.instanceName, o.logger);
    this.startingStub = stub;
    const life: Life = { stub, prefix, regions: new StubRegions(), timedOut: false };
    const p = new Promise<Life>((resolve, reject) => {
      let ready = false;
      stub.onMessage = (m, tail) => {
        if (ready) return this.onMessage(life, m, tail);
        if (m.t === 'ready') {
          ready = true;
          if (this.startingStub === stub) this.startingStub = undefined;
          if (this.closed) {
            // Killed while it started (see kill()): it never serves.
            stub.kill();
            reject(unavailable('the instance is unloading'));
            return;
          }
          this.life = life;
          this.hungReason = undefined;
          this.downReason = undefined;
          resolve(life);
        } else if (m.t === 'init-error') {
          reject(new NereidError('INTERNAL', `initialize() of model instance '${o.instanceName}' failed: ${m.message}`));
          stub.kill();
        } else {
          this.onMessage(life, m, tail);
        }
      };
      stub.onExit((reason) => {
        life.regions.close();
        unlinkAll(prefix);
        if (this.startingStub === stub) this.startingStub = undefined;
        if (!ready) {
          reject(new NereidError('INTERNAL', `the Python stub of model instance '${o.instanceName}' stopped while loading the model: ${reason}`));
          return;
        }
        this.onExit(life, reason);
      });
    });
    this.starting = p;
    const clear = (): void => {
      if (this.starting === p) this.starting = undefined;
    };
    p.then(clear, clear);
    return p;
  }

  /**
   * Ready while a stub is up and initialized: not while a dead one is being started again (Triton's stub
   * health), nor while an execution runs past the execute timeout (hung, until a new stub is initialized).
   */
  ready(): boolean {
    return this.life !== undefined && this.hungReason === undefined;
  }

  status(): InstanceStatus {
    return workerStatus(this.opts.instanceName, this.ready(), { hungReason: this.hungReason, downReason: this.downReason, closed: this.closed, starting: 'its Python stub is starting' });
  }

  /**
   * The stub process's resident memory: the model's weights and Python's own, outside the server's process.
   * 0 while no stub is up (died, not started again yet, or unloaded).
   */
  memory(): InstanceMemory {
    const stub = this.life?.stub;
    const pid = stub?.alive ? stub.pid : undefined;
    return { bytes: (pid !== undefined ? residentBytes(pid) : undefined) ?? 0, external: true };
  }

  async execute(requests: readonly BackendRequest[]): Promise<ExecutionTimes> {
    const t0 = process.hrtime.bigint();
    let life = this.life;
    if (!life) {
      try {
        if (this.closed) throw unavailable('the instance is unloading');
        life = await (this.starting ?? this.start());
      } catch (e) {
        const why = e instanceof Error ? e.message : String(e);
        if (!this.closed) this.downReason = `its Python stub could not be started again: ${why}`;
        for (const r of requests) r.sender.fail(unavailable(`model instance '${this.opts.instanceName}' is not available: ${why}`));
        return { inputNs: Number(process.hrtime.bigint() - t0), inferNs: 0, outputNs: 0 };
      }
    }
    const batch = this.writeBatch(requests);
    batch.id = this.nextBatch++;
    const inputNs = Number(process.hrtime.bigint() - t0);
    const done = new Promise<number>((resolve, reject) => {
      batch.resolve = resolve;
      batch.withdraw = () => reject(new NereidError('CANCELLED', 'request cancelled'));
    });
    this.book.batches.set(batch.id, batch);
    this.dispatch(life, batch);
    const inferNs = await done;
    const totalNs = Number(process.hrtime.bigint() - t0);
    const waitNs = batch.startedNs > batch.sentNs ? Number(batch.startedNs - batch.sentNs) : 0;
    return { inputNs, inferNs, outputNs: Math.max(0, totalNs - inputNs - inferNs - waitNs), waitNs };
  }

  /** Sends an execution to the stub: the first one the stub holds runs at once, the others wait there in turn. */
  private dispatch(life: Life, batch: Batch): void {
    const release = this.releases.take();
    life.stub.send({ t: 'exec', batch: batch.id, requests: batch.wire, ...(release ? { release } : {}) });
    const now = process.hrtime.bigint();
    if (batch.sentNs === 0n) batch.sentNs = now;
    batch.startedNs = now;
    this.book.inStub.push(batch);
    if (this.book.inStub.length === 1) this.started(life, batch);
  }

  /** Writes the execution's inputs into one block of the arena and describes its requests for the stub. */
  private writeBatch(requests: readonly BackendRequest[]): Batch {
    let total = 0;
    for (const r of requests) for (const t of r.inputs) total += align(wireByteLength(t));
    // Tensors with no bytes still name a block, so every input descriptor has a region.
    const block = requests.some((r) => r.inputs.length > 0) ? this.arena.alloc(Math.max(total, align(1))) : undefined;
    const batch: Batch = {
      block, open: requests.length, executing: true, resolve: undefined, withdraw: undefined, timer: undefined, id: 0, wire: [], sentNs: 0n, startedNs: 0n,
    };
    let at = block?.offset ?? 0;
    batch.wire = requests.map((r): WireRequest => {
      const rid = this.nextRid++;
      const inputs = r.inputs.map((t) => {
        const d = writeInput(block!, at, t);
        at += align(d.b);
        return d;
      });
      const cancelled = this.watch(rid, r, batch);
      const w: WireRequest = {
        rid, id: r.id ?? '', corr: r.sequenceId ?? 0, flags: (r.sequenceStart ? 1 : 0) | (r.sequenceEnd ? 2 : 0), timeout: r.timeoutUs ?? 0,
        params: r.parameters ? JSON.stringify(r.parameters, bigintAsNumber) : '{}', outputs: r.outputs, inputs,
        ...(cancelled ? { cancelled } : {}),
      };
      return r.trace === undefined ? w : { ...w, tr: r.trace.traceparent() };
    });
    return batch;
  }

  /** Opens the request; a cancellation reaches the stub as it happens. True when it was cancelled already. */
  private watch(rid: number, r: BackendRequest, batch: Batch): boolean {
    let onAbort: (() => void) | undefined;
    const cancelled = r.signal?.aborted ?? false;
    if (r.signal && !cancelled) {
      onAbort = (): void => {
        this.life?.stub.send({ t: 'cancel', rid });
        // Still waiting in the stub behind another execution: answered now, as a scheduler answers a request
        // cancelled in its queue; the stub skips the execution when all of its requests are cancelled.
        const o = this.book.open.get(rid);
        if (o && this.book.inStub.indexOf(batch) > 0) {
          this.book.forget(rid, o);
          if (batch.open > 0 || !batch.resolve) {
            r.sender.fail(new NereidError('CANCELLED', 'request cancelled'));
            return;
          }
          // Nothing of it is left to run: the execution goes back to the scheduler unrun, which answers the
          // request as cancelled in its queue. The stub skips it in turn; its 'done' then resolves nothing.
          batch.resolve = undefined;
          batch.withdraw?.();
        }
      };
      r.signal.addEventListener('abort', onAbort, { once: true });
    }
    this.book.open.set(rid, { request: r, batch, onAbort });
    return cancelled;
  }

  /** The stub runs the batch now: the execute timeout, if any, counts from here, not from the wait behind another. */
  private started(life: Life, batch: Batch): void {
    const timeoutMs = this.opts.executeTimeoutMs;
    if (timeoutMs !== undefined) batch.timer = setTimeout(() => this.hung(life, timeoutMs), timeoutMs);
  }

  private hung(life: Life, timeoutMs: number): void {
    if (life !== this.life || life.timedOut) return;
    life.timedOut = true;
    this.hungReason = `execute() did not finish within ${timeoutMs} ms; its Python stub is stopped and started again`;
    this.opts.logger.error(`execute() of model instance '${this.opts.instanceName}' did not finish within ${timeoutMs} ms; stopping its Python stub`);
    life.stub.kill();
  }

  private onMessage(life: Life, m: FromStub, tail: Buffer | undefined): void {
    switch (m.t) {
      case 'resp':
        return this.onResponse(life, m);
      case 'done': {
        const batch = this.book.batches.get(m.batch);
        if (!batch) return;
        this.book.failUnanswered(m.unanswered, m.error, m.cancelled === true);
        for (const rid of m.later ?? []) this.book.answerLater(rid);
        if (batch.timer) clearTimeout(batch.timer);
        batch.timer = undefined;
        batch.executing = m.running === true;
        if (this.book.inStub[0] === batch) {
          this.book.inStub.shift();
          const next = this.book.inStub[0];
          if (next) {
            next.startedNs = process.hrtime.bigint();
            this.started(life, next);
          }
        }
        const resolve = batch.resolve;
        batch.resolve = undefined;
        this.book.settle(m.batch, batch);
        resolve?.(m.inferNs);
        return;
      }
      case 'ended': {
        const batch = this.book.batches.get(m.batch);
        if (!batch) return;
        this.book.failUnanswered(m.unanswered, m.error);
        batch.executing = false;
        this.book.settle(m.batch, batch);
        return;
      }
      case 'log':
        return stubLog(this.opts.logger, this.opts.instanceName, m.level, m.message);
      case 'finalized':
        this.onFinalized?.(m.error);
        return;
      case 'bls':
      case 'bls-cancel':
      case 'model':
      case 'metric':
        return this.calls.handle(m, tail, (h, t) => life.stub.send(h, t));
      default:
        return;
    }
  }

  private onResponse(life: Life, m: Extract<FromStub, { t: 'resp' }>): void {
    if (m.drop) for (const name of m.drop) life.regions.drop(name);
    const o = this.book.open.get(m.rid);
    let outputs: readonly Tensor[] = NO_RESPONSE;
    let lent: Mapping[] | undefined;
    let failure: NereidError | undefined;
    if (o && m.outputs && !m.error) {
      try {
        lent = o.request.borrowOutputs ? [] : undefined;
        outputs = readOutputs(this.arena, life.regions, life.prefix, m.outputs, lent);
      } catch (e) {
        failure = new NereidError('INTERNAL', `unable to read the outputs of model '${this.opts.init.modelName}': ${(e as Error).message}`);
      }
    }
    const giveBack = lent && lent.length > 0 ? this.lender(life, lent, m.k) : undefined;
    if (m.k && !giveBack) this.releases.add(m.k);
    if (!o || m.error || failure) giveBack?.();
    if (!o) return;
    if (m.final || m.error || failure) this.book.forget(m.rid, o);
    if (m.error) return o.request.sender.fail(new NereidError(errorCode(m.error.code), m.error.message));
    if (failure) return o.request.sender.fail(failure);
    const params = m.params ? (JSON.parse(m.params) as Parameters) : undefined;
    o.request.sender.send(outputs, m.final, params, giveBack);
  }

  /** Gives lent views back, once: their mappings, then the block to the stub that wrote it (if it still runs). */
  private lender(life: Life, lent: readonly Mapping[], k: Block | undefined): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      for (const mapping of lent) life.regions.giveBack(mapping);
      if (k && life === this.life) this.releases.add(k);
    };
  }

  /** Fails every request the stub held, frees their blocks and the executions waiting on it. */
  private failAll(error: NereidError): void {
    this.book.failAll(error);
    this.releases.clear();
    this.calls.close();
  }

  private onExit(life: Life, reason: string): void {
    this.onFinalized?.(`the stub stopped: ${reason}`);
    if (life !== this.life) return;
    this.life = undefined;
    const name = this.opts.instanceName;
    const why = life.timedOut
      ? `execute() did not finish within ${this.opts.executeTimeoutMs} ms; its Python stub was stopped`
      : `its Python stub stopped (${reason})`;
    if (!this.closed) {
      this.opts.logger.error(`Python model instance '${name}' stopped (${life.timedOut ? 'execute timeout' : reason}); starting it again`);
      this.downReason = `its Python stub stopped (${reason}) and is starting again`;
    }
    // Executions waiting in the stub behind the one that was running never ran: they go to the next stub, as
    // they would have had they waited in the scheduler. Every 'done' the stub wrote was read before its exit
    // is reported, so the first execution still held is the one that was running.
    // One given back to the scheduler already (withdrawn: its requests were cancelled) is not sent again.
    const waiting = this.closed ? [] : this.book.inStub.slice(1).filter((b) => b.resolve !== undefined).map((b) => this.book.detach(b));
    this.failAll(new NereidError('INTERNAL', `Stub process '${name}' is not healthy. The requests it held failed: ${why}`));
    if (this.closed) return;
    this.start().then(
      (next) => {
        for (const w of waiting) {
          this.book.batches.set(w.batch.id, w.batch);
          for (const [rid, o] of w.requests) this.book.open.set(rid, o);
          // A cancellation that came while no stub was up is carried by the request itself.
          w.batch.wire = w.batch.wire.map((r) => (!r.cancelled && this.book.open.get(r.rid)?.request.signal?.aborted ? { ...r, cancelled: true } : r));
          this.dispatch(next, w.batch);
        }
      },
      (e: unknown) => {
        const message = e instanceof Error ? e.message : String(e);
        if (!this.closed) {
          this.downReason = `its Python stub could not be started again: ${message}`;
          this.opts.logger.error(`Python model instance '${name}' could not be started again: ${message}`);
        }
        for (const w of waiting) {
          for (const [, o] of w.requests) {
            if (o.onAbort) o.request.signal!.removeEventListener('abort', o.onAbort);
            o.request.sender.fail(unavailable(`model instance '${name}' is not available: ${message}`));
          }
          if (!this.closed) this.book.freeBatch(w.batch); // kill() has closed the arena
          w.batch.resolve?.(0);
        }
      },
    );
  }

  /**
   * Stops the stub at once (SIGKILL), and one being started; answers every request it holds with `error` and
   * settles every execution. Nothing is started again; close() then has nothing left to wait for.
   */
  kill(error: NereidError): void {
    if (this.closed) {
      // close() may be waiting on finalize() in a stub that does not answer: it ends with the stub.
      this.life?.stub.kill();
      this.startingStub?.kill();
      return;
    }
    this.closed = true;
    const life = this.life;
    this.life = undefined;
    life?.stub.kill();
    this.startingStub?.kill();
    this.failAll(error);
    this.arena.close();
    unlinkAll(this.opts.shmPrefix);
  }

  /** Runs finalize() in the stub (at most FINALIZE_TIMEOUT_MS), lets it exit, then removes its regions. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const life = this.life ?? (await this.starting?.catch(() => undefined));
    if (life && life.stub.alive) await finalizeStub(life.stub, this.opts.instanceName, this.opts.logger, (hook) => (this.onFinalized = hook));
    this.life = undefined;
    this.failAll(unavailable(`model instance '${this.opts.instanceName}' was unloaded before the request finished`));
    this.arena.close();
    unlinkAll(this.opts.shmPrefix);
  }
}

/**
 * Runs finalize() in the stub (at most FINALIZE_TIMEOUT_MS), then lets it exit by itself (at most EXIT_WAIT_MS).
 * `onFinalized` sets the hook the stub's 'finalized' message, or its exit, calls.
 */
async function finalizeStub(stub: StubProcess, name: string, logger: Logger, onFinalized: (hook: ((error?: string) => void) | undefined) => void): Promise<void> {
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      logger.error(`finalize() of model instance '${name}' did not return within ${FINALIZE_TIMEOUT_MS / 1000} s; stopping it`);
      resolve();
    }, FINALIZE_TIMEOUT_MS);
    onFinalized((error) => {
      clearTimeout(timer);
      if (error) logger.error(`finalize() of model instance '${name}' failed: ${error}`);
      resolve();
    });
    stub.send({ t: 'finalize' });
  });
  onFinalized(undefined);
  stub.endInput();
  const exited = stub.exitedPromise();
  const timer = setTimeout(() => stub.kill(), EXIT_WAIT_MS);
  await exited;
  clearTimeout(timer);
}

/** A log record of the model's pb_utils.Logger, at its level, named for the instance. */
function stubLog(logger: Logger, instanceName: string, level: number, message: string): void {
  const text = `${instanceName}: ${message}`;
  if (level === 1) logger.warn(text);
  else if (level === 2) logger.error(text);
  else if (level === 3) logger.verbose(1, text);
  else logger.info(text);
}

function bigintAsNumber(_k: string, v: unknown): unknown {
  return typeof v === 'bigint' ? Number(v) : v;
}

function errorCode(code: number): ErrorCode {
  return ERROR_CODE_NAMES[code] ?? 'INTERNAL';
}
