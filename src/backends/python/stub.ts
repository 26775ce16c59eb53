import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Readable, Writable } from 'node:stream';
import type { Logger } from '../../observability/logger.js';
import { FrameReader, encodeFrame, headerJson } from './frames.js';
import type { Interpreter } from './interpreter.js';
import type { FromStub, StubInit } from './wire.js';

/** python/nereid_stub.py at the package root, from dist/src/backends/python/ (this file's compiled place). */
export const STUB_SCRIPT = fileURLToPath(new URL('../../../../python/nereid_stub.py', import.meta.url));

/** Stub processes still running, killed when the server's process exits (see onProcessExit). */
const running = new Set<ChildProcess>();

/**
 * No stub outlives the server: one still running when the process exits (past --exit-timeout-secs, say, while
 * a model was still loading and its initialize() hung) is killed then. A stub's reader thread notices its
 * server's death by itself within about a second, but not while the model holds the interpreter's lock in
 * native code.
 */
function onProcessExit(): void {
  for (const child of running) child.kill('SIGKILL');
}

/**
 * One Python stub process: spawned with two extra pipes for the protocol (fd 3 in, fd 4 out), its stdout and
 * stderr forwarded to the server log line by line. Reports every message and, once, its exit.
 */
export class StubProcess {
  private readonly child: ChildProcess;
  private readonly toStub: Writable;
  private exited = false;
  private exitReason = '';
  onMessage: (m: FromStub, tail: Buffer | undefined) => void = () => undefined;
  private onExitHandlers: ((reason: string) => void)[] = [];

  constructor(interpreter: Interpreter, init: StubInit, private readonly tag: string, private readonly logger: Logger) {
    this.child = spawn(interpreter.command, [STUB_SCRIPT], {
      stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'],
      env: { ...process.env, ...interpreter.env, PYTHONUNBUFFERED: '1', PYTHONDONTWRITEBYTECODE: '1' },
    });
    if (running.size === 0) process.once('exit', onProcessExit);
    running.add(this.child);
    this.toStub = this.child.stdio[3] as Writable;
    // A write to a stub that just died fails with EPIPE; its exit is reported by the 'exit' handler instead.
    this.toStub.on('error', () => undefined);
    const fromStub = this.child.stdio[4] as Readable;
    fromStub.on('error', () => undefined);
    let drained = false;
    const whenDrained: (() => void)[] = [];
    fromStub.on('close', () => {
      drained = true;
      for (const f of whenDrained.splice(0)) f();
    });
    const reader = new FrameReader((h, tail) => this.onMessage(h as FromStub, tail));
    fromStub.on('data', (chunk: Buffer) => {
      try {
        reader.push(chunk);
      } catch (e) {
        this.logger.error(`${tag}: unreadable message from the Python stub (${(e as Error).message}); stopping it`);
        this.kill();
      }
    });
    forwardLines(this.child.stdout!, (line) => this.logger.info(`${tag}: ${line}`));
    forwardLines(this.child.stderr!, (line) => this.logger.warn(`${tag}: ${line}`));
    this.child.on('error', (e) => {
      running.delete(this.child);
      this.exit(`could not run the Python interpreter '${interpreter.command}': ${e.message}`);
    });
    // Messages written just before the exit are still in the pipe: report the exit after them, or after a short
    // wait when something else (a process the model started) holds the pipe open.
    this.child.on('exit', (code, signal) => {
      running.delete(this.child);
      if (running.size === 0) process.removeListener('exit', onProcessExit);
      const reason = signal ? `killed by ${signal}` : `exit code ${code}`;
      if (drained) return this.exit(reason);
      const timer = setTimeout(() => this.exit(reason), 200);
      whenDrained.push(() => {
        clearTimeout(timer);
        this.exit(reason);
      });
    });
    this.send(init);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get alive(): boolean {
    return !this.exited;
  }

  /** Sends one message; `tail` follows the header without being copied into it. */
  send(header: object, tail?: Uint8Array): void {
    if (this.exited) return;
    const frame = encodeFrame(headerJson(header), tail?.byteLength ?? 0);
    if (!tail || tail.byteLength === 0) {
      this.toStub.write(frame);
      return;
    }
    this.toStub.cork();
    this.toStub.write(frame);
    this.toStub.write(tail);
    this.toStub.uncork();
  }

  onExit(handler: (reason: string) => void): void {
    if (this.exited) handler(this.exitReason);
    else this.onExitHandlers.push(handler);
  }

  /** Resolves once the process has exited. */
  exitedPromise(): Promise<void> {
    return new Promise((resolve) => this.onExit(() => resolve()));
  }

  kill(): void {
    if (!this.exited) this.child.kill('SIGKILL');
  }

  /** Closes the stub's input: a stub reading EOF cleans up and exits. */
  endInput(): void {
    this.toStub.end();
  }

  private exit(reason: string): void {
    if (this.exited) return;
    this.exited = true;
    this.exitReason = reason;
    for (const h of this.onExitHandlers.splice(0)) h(reason);
  }
}

function forwardLines(stream: Readable, line: (text: string) => void): void {
  let rest = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const parts = (rest + chunk).split('\n');
    rest = parts.pop()!;
    for (const p of parts) line(p);
  });
  stream.on('end', () => {
    if (rest) line(rest);
  });
}
