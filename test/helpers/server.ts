import { spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InferenceServer } from '../../src/server/inference-server.js';
import { startHttpFrontend, type HttpFrontend } from '../../src/frontends/http/server.js';
import type { ServerOptions } from '../../src/server/options.js';
import { createLogger } from '../../src/observability/logger.js';
import { ROOT } from './paths.js';
import { until } from './until.js';

export interface TestServer {
  readonly server: InferenceServer;
  readonly http: HttpFrontend;
  readonly url: string;
  close(): Promise<void>;
}

/** A real server with its HTTP frontend on a free loopback port, in this process. */
export async function startTestServer(options: ServerOptions, maxInputSize = 64 * 1024 * 1024): Promise<TestServer> {
  const logger = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
  const server = await InferenceServer.create(options, { logger });
  const http = await startHttpFrontend(server, { port: 0, address: '127.0.0.1', maxInputSize }, logger);
  return {
    server,
    http,
    url: `http://127.0.0.1:${http.port}`,
    close: async () => {
      await server.close(5);
      await http.close();
    },
  };
}

/** A copy of some model folders in a fresh temporary repository, for tests that change files. */
export async function tempRepository(models: { from: string; name?: string }[]): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'nereid-test-repo-'));
  for (const m of models) {
    const name = m.name ?? m.from.split('/').pop()!;
    await cp(m.from, join(dir, name), { recursive: true });
  }
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

export interface ServerProcess {
  readonly child: ChildProcess;
  readonly url: string;
  readonly output: () => string;
  /** Resolves with the exit code. */
  readonly exited: Promise<number | null>;
}

/** `nereid serve` as its own process, on a free port; resolves once it reports its port. */
export async function spawnServer(args: string[], env: NodeJS.ProcessEnv = {}): Promise<ServerProcess> {
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'nereid.js'), 'serve', '--http-port=0', '--http-address=127.0.0.1', '--allow-grpc=false', '--allow-metrics=false', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const port = await new Promise<number>((resolve, reject) => {
    const onData = (b: Buffer): void => {
      out += b.toString();
      const m = /Started HTTPService at [^:]+:(\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then((code) => reject(new Error(`nereid exited with ${code} before serving:\n${out}`)));
  });
  return { child, url: `http://127.0.0.1:${port}`, output: () => out, exited };
}

/** The exit code and output of a `nereid` run that is expected to end by itself. */
export function runNereid(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, 'bin', 'nereid.js'), ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    child.once('exit', (code) => resolve({ code, out }));
  });
}

/** The URL of a spawned server's OpenAI port (`--openai-port=0`), once its start line names the port. */
export async function openAiUrl(server: ServerProcess): Promise<string> {
  const started = /Started OpenAI-compatible service at [^:]+:(\d+)/;
  await until(() => started.test(server.output()), 'the OpenAI port');
  return `http://127.0.0.1:${started.exec(server.output())![1]}`;
}
