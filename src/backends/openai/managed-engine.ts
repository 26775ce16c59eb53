import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { NereidError, invalidArg, unavailable } from '../../errors.js';
import type { Logger } from '../../observability/logger.js';
import { commandLine, ENGINE_HOST, type EngineCommand } from './engine-command.js';
import { Engine, type EngineSettings } from './engine.js';
import { EngineOutput } from './engine-output.js';

/** First wait before a restart; it doubles on each death in a row, up to RESTART_MAX_MS. */
const RESTART_MIN_MS = 1000;
const RESTART_MAX_MS = 60_000;
/** An engine that served this long before it died starts again after RESTART_MIN_MS: its death was no loop. */
const STABLE_MS = 60_000;
const HEALTH_POLL_MS = 250;
const HEALTH_INTERVAL_MS = 5000;
/** SIGTERM's grace before SIGKILL on unload; shutdown past --exit-timeout-secs kills at once (kill()). */
const STOP_GRACE_MS = 10_000;

/**
 * Process groups of engines still running, killed if Nereid's process exits before it could stop them; the
 * exit hook is there only while the set is not empty.
 */
const groups = new Set<number>();
function killGroups(): void {
  for (const g of groups) signalGroup(g, 'SIGKILL');
}
function watchGroup(pgid: number): void {
  if (groups.size === 0) process.on('exit', killGroups);
  groups.add(pgid);
}
function forgetGroup(pgid: number): void {
  if (groups.delete(pgid) && groups.size === 0) process.off('exit', killGroups);
}

/**
 * An engine (llama-server, vLLM, SGLang, TGI, any command) that Nereid runs for one model: started on a free
 * loopback port in a process group of its own with a clean environment, ready once its health endpoint
 * answers, its output in Nereid's log under the model's name, started again with exponential backoff when it
 * dies, and stopped with its whole group (SIGTERM, then SIGKILL) when the model unloads.
 */
export class ManagedEngine {
  readonly engine: Engine;
  /** Counts the engine's deaths: a request that began under one generation and failed under another lost its engine. */
  generation = 0;
  private child: ChildProcess | undefined;
  private state: 'starting' | 'ready' | 'down' | 'stopped' = 'starting';
  private why = 'the engine is starting';
  private backoffMs = RESTART_MIN_MS;
  private readyAt = 0;
  private waiters = new Set<() => void>();
  private deaths = new Set<() => void>();
  private restartTimer: NodeJS.Timeout | undefined;
  private readonly healthTimer: NodeJS.Timeout;
  private checking = false;
  private launching = false;
  private freshPort = false;

  private constructor(private readonly command: EngineCommand, settings: EngineSettings, private port: number, private readonly name: string, private readonly logger: Logger) {
    this.engine = new Engine({ ...settings, baseUrl: `http://${ENGINE_HOST}:${port}` }, command.healthPath);
    this.healthTimer = setInterval(() => void this.check(), HEALTH_INTERVAL_MS).unref();
  }

  /**
   * Starts the engine and resolves once it answers its health check; rejects (and leaves no process) when it
   * cannot start, exits first, or is not healthy within the startup timeout, with what it last printed.
   */
  static async start(command: EngineCommand, settings: EngineSettings, name: string, logger: Logger): Promise<ManagedEngine> {
    const m = new ManagedEngine(command, settings, await freePort(), name, logger);
    try {
      await m.launch();
    } catch (e) {
      await m.stop();
      throw e;
    }
    return m;
  }

  /** Serving: started, healthy at the last check, not stopped. */
  ready(): boolean {
    return this.state === 'ready';
  }

  /** Why it is not ready ('' when it is). */
  reason(): string {
    return this.state === 'ready' ? '' : this.why;
  }

  /** Resolves once the engine is ready; rejects UNAVAILABLE after `ms`, when `signal` aborts, or when it stops. */
  whenReady(ms: number, signal: AbortSignal | undefined): Promise<void> {
    if (this.state === 'ready') return Promise.resolve();
    if (this.stopped()) return Promise.reject(this.stoppedError());
    return new Promise((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.waiters.delete(done);
        if (this.state === 'ready') resolve();
        else reject(this.stoppedError());
      };
      const onAbort = (): void => {
        this.waiters.delete(done);
        clearTimeout(timer);
        reject(new NereidError('CANCELLED', 'request cancelled'));
      };
      const timer = setTimeout(() => {
        this.waiters.delete(done);
        signal?.removeEventListener('abort', onAbort);
        reject(unavailable(`${this.name}: the engine did not become ready within ${ms} ms (${this.why})`));
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.add(done);
    });
  }

  /**
   * Whether the engine died after `generation` was read, waiting up to `ms` for the exit to show: a broken
   * connection is seen a moment before the process's exit is.
   */
  async diedSince(generation: number, ms: number): Promise<boolean> {
    if (this.generation !== generation || this.stopped()) return true;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      const deaths = this.deaths;
      function done(): void {
        clearTimeout(timer);
        deaths.delete(done);
        resolve();
      }
      deaths.add(done);
    });
    return this.generation !== generation || this.stopped();
  }

  /** Stops the engine and every process of its group: SIGTERM, then SIGKILL after the grace. Idempotent. */
  async stop(graceMs = STOP_GRACE_MS): Promise<void> {
    this.state = 'stopped';
    this.why = 'unloaded';
    clearInterval(this.healthTimer);
    clearTimeout(this.restartTimer);
    this.wake();
    const child = this.child;
    if (child?.pid !== undefined) {
      signalGroup(child.pid, 'SIGTERM');
      await groupGone(child.pid, graceMs);
      signalGroup(child.pid, 'SIGKILL');
      await groupGone(child.pid, 2000);
      forgetGroup(child.pid);
    }
    await this.engine.close();
  }

  /** Kills the engine's group at once (shutdown past --exit-timeout-secs). */
  kill(): void {
    this.state = 'stopped';
    clearInterval(this.healthTimer);
    clearTimeout(this.restartTimer);
    this.wake();
    const pid = this.child?.pid;
    if (pid !== undefined) signalGroup(pid, 'SIGKILL');
  }

  /** One start: spawn, then poll the health endpoint until it answers, the process exits, or time runs out. */
  private async launch(): Promise<void> {
    this.launching = true;
    try {
      await this.spawnAndWait();
    } finally {
      this.launching = false;
    }
  }

  private async spawnAndWait(): Promise<void> {
    const argv = commandLine(this.command, this.port);
    const output = new EngineOutput(this.logger, `model '${this.name}' engine`);
    let child: ChildProcess;
    try {
      child = spawn(argv[0]!, argv.slice(1), { detached: true, env: this.command.env, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (e) {
      throw invalidArg(`model '${this.name}': the engine command '${argv[0]}' could not start: ${(e as Error).message}`);
    }
    this.child = child;
    let exit: string | undefined;
    const exited = new Promise<void>((resolve) => {
      child.once('error', (e) => {
        exit ??= `could not start: ${e.message}`;
        resolve();
      });
      child.once('exit', (code, signal) => {
        exit ??= signal ? `was killed by ${signal}` : `exited with code ${code}`;
        resolve();
      });
    });
    if (child.pid !== undefined) watchGroup(child.pid);
    child.stdout!.on('data', (b: Buffer) => output.push(b));
    child.stderr!.on('data', (b: Buffer) => output.push(b));
    void exited.then(() => this.exited(child, exit!, output));
    const deadline = Date.now() + this.command.startupTimeoutMs;
    this.logger.info(`model '${this.name}': started the engine (pid ${child.pid ?? '-'}) on ${ENGINE_HOST}:${this.port}: ${argv.join(' ')}`);
    while (exit === undefined && !this.stopped()) {
      if (await this.engine.healthy()) {
        if (exit !== undefined || this.stopped()) break;
        this.becameReady();
        return;
      }
      if (Date.now() > deadline) {
        throw invalidArg(`model '${this.name}': the engine '${argv[0]}' did not answer ${this.command.healthPath} within ${this.command.startupTimeoutMs / 1000} s${output.tail()}`);
      }
      await Promise.race([exited, sleep(HEALTH_POLL_MS)]);
    }
    if (this.stopped()) throw unavailable(`model '${this.name}': unloaded while its engine was starting`);
    throw invalidArg(`model '${this.name}': the engine command '${argv[0]}' ${exit} before it answered ${this.command.healthPath}${output.tail()}`);
  }

  private becameReady(): void {
    this.state = 'ready';
    this.why = '';
    this.readyAt = Date.now();
    this.logger.info(`model '${this.name}': the engine answers ${this.command.healthPath} on port ${this.port}`);
    this.wake();
  }

  /** The process ended: unless it was stopped, the model is not ready until a new one answers. */
  private exited(child: ChildProcess, how: string, output: EngineOutput): void {
    output.flush();
    if (child.pid !== undefined) {
      // What it left in its group goes with it: no orphans hold the port or the GPU.
      signalGroup(child.pid, 'SIGKILL');
      forgetGroup(child.pid);
    }
    if (this.child !== child || this.stopped()) return;
    this.generation++;
    for (const f of [...this.deaths]) f();
    if (this.state === 'ready' && Date.now() - this.readyAt >= STABLE_MS) this.backoffMs = RESTART_MIN_MS;
    this.state = 'down';
    this.why = `the engine ${how}; starting it again`;
    // A start that failed: launch() reports it, and restart() tries again (or the load fails).
    if (this.launching || this.restartTimer !== undefined) return;
    this.logger.error(`model '${this.name}': the engine ${how}; starting it again in ${this.backoffMs / 1000} s`);
    this.scheduleRestart();
  }

  private scheduleRestart(): void {
    const wait = this.backoffMs;
    this.backoffMs = Math.min(RESTART_MAX_MS, this.backoffMs * 2);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      void this.restart();
    }, wait);
  }

  /**
   * Starts the engine again; a start that fails tries again after a longer wait, on a fresh port (the old one
   * may be what failed). `launching` covers the whole attempt, so that the failed process's exit schedules
   * nothing more.
   */
  private async restart(): Promise<void> {
    if (this.stopped()) return;
    this.launching = true;
    try {
      if (this.freshPort) {
        this.port = await freePort();
        this.engine.retarget(`http://${ENGINE_HOST}:${this.port}`);
        this.freshPort = false;
      }
      await this.spawnAndWait();
    } catch (e) {
      if (this.stopped()) return;
      this.why = `the engine could not start again: ${(e as Error).message}`;
      this.logger.error(`model '${this.name}': ${this.why}; trying again in ${this.backoffMs / 1000} s`);
      this.freshPort = true;
      const pid = this.child?.pid;
      if (pid !== undefined) signalGroup(pid, 'SIGKILL');
      this.scheduleRestart();
    } finally {
      this.launching = false;
    }
  }

  /** The periodic health check of a running engine: one that stops answering is not ready meanwhile. */
  private async check(): Promise<void> {
    const child = this.child;
    if (this.checking || this.launching || (this.state !== 'ready' && this.state !== 'down')) return;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    this.checking = true;
    try {
      const ok = await this.engine.healthy();
      if (this.child !== child || this.launching) return;
      if (this.state === 'ready' && !ok) {
        this.state = 'down';
        this.why = `the engine does not answer ${this.command.healthPath}`;
        this.logger.warn(`model '${this.name}': ${this.why}`);
      } else if (this.state === 'down' && ok) {
        this.becameReady();
      }
    } finally {
      this.checking = false;
    }
  }

  /** A method rather than a comparison: the state changes across the awaits of the callers. */
  private stopped(): boolean {
    return this.state === 'stopped';
  }

  private wake(): void {
    for (const f of [...this.waiters]) f();
  }

  private stoppedError(): NereidError {
    return unavailable(`${this.name}: ${this.why}`);
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is gone already
  }
}

/** Resolves once no process is left in the group, or after `ms`. */
async function groupGone(pgid: number, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    try {
      process.kill(-pgid, 0);
    } catch {
      return;
    }
    await sleep(50);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A free loopback port, for the engine to listen on. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, ENGINE_HOST, () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}
