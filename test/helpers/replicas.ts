import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ROOT } from './paths.js';
import { until } from './until.js';

// Real components on loopback for the multi-replica tests: redis-server, HAProxy, Prometheus (Debian packages)
// and `nereid serve` processes on fixed ports, so that a replica restarts where the load balancer expects it.

/** Why the tests cannot run here ('' when every program is installed). */
export function missingPrograms(programs: readonly string[]): string {
  const missing = programs.filter((p) => spawnSync('sh', ['-c', `command -v ${p}`], { encoding: 'utf8' }).stdout.trim() === '');
  return missing.length === 0 ? '' : `${missing.join(', ')} not installed (Debian packages of the same names)`;
}

/** A port free right now on the loopback interface. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export async function tempDir(prefix: string): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

export interface Service {
  readonly port: number;
  stop(): Promise<void>;
}

function ended(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()));
}

export async function startRedis(): Promise<Service & { cli(...args: string[]): string }> {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const cli = (...args: string[]): string => spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8' }).stdout ?? '';
  await until(() => cli('ping').includes('PONG'), 'redis-server to answer PING');
  return { port, cli, stop: async () => { child.kill(); await ended(child); } };
}

/** One `nereid serve` process; start() may be called again after it has exited (a restart on the same ports). */
export class Replica {
  child: ChildProcess | undefined;
  output = '';
  exited: Promise<number | null> = Promise.resolve(null);

  constructor(readonly name: string, readonly port: number, readonly metricsPort: number, private readonly args: readonly string[]) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.output = '';
    const child = spawn(process.execPath, [join(ROOT, 'bin', 'nereid.js'), 'serve', `--http-port=${this.port}`, '--http-address=127.0.0.1',
      '--allow-grpc=false', `--metrics-port=${this.metricsPort}`, '--metrics-address=127.0.0.1', ...this.args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    child.stdout!.on('data', (b: Buffer) => (this.output += b.toString()));
    child.stderr!.on('data', (b: Buffer) => (this.output += b.toString()));
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    let gone = false;
    void this.exited.then(() => (gone = true));
    await until(async () => {
      if (gone) throw new Error(`${this.name} exited before it was ready:\n${this.output}`);
      const r = await fetch(`${this.url}/v2/health/ready`).catch(() => undefined);
      return r?.status === 200;
    }, `${this.name} to be ready`);
  }

  signal(sig: NodeJS.Signals): void {
    this.child?.kill(sig);
  }
}

export interface Haproxy extends Service {
  /** Each server's state as HAProxy's health checks see it (UP, DOWN, …), by server name. */
  states(): Promise<Record<string, string>>;
  output(): string;
}

/**
 * HAProxy in front of the replicas: round robin, health checks on /v2/health/ready every 100 ms (one not-ready
 * takes a server out, one success puts it back), a connection refused by a dead server retried on another, and
 * the name of the server that answered in the X-Replica response header.
 */
export async function startHaproxy(dir: string, replicas: readonly Replica[]): Promise<Haproxy> {
  const port = await freePort();
  const statsPort = await freePort();
  const config = [
    'global',
    '  maxconn 512',
    'defaults',
    '  mode http',
    '  timeout connect 2s',
    '  timeout client 30s',
    '  timeout server 30s',
    '  retries 3',
    '  option redispatch',
    'frontend replicas',
    `  bind 127.0.0.1:${port}`,
    '  default_backend nereid',
    'backend nereid',
    '  balance roundrobin',
    '  option httpchk GET /v2/health/ready',
    '  http-check expect status 200',
    '  http-response set-header X-Replica %s',
    // A check answers within 'timeout check', not within 'inter' (HAProxy's default): a busy machine must not
    // take a healthy replica out.
    '  timeout check 5s',
    '  default-server inter 100ms fall 1 rise 1',
    ...replicas.map((r) => `  server ${r.name} 127.0.0.1:${r.port} check`),
    'listen stats',
    `  bind 127.0.0.1:${statsPort}`,
    '  stats enable',
    '  stats uri /stats',
    '',
  ].join('\n');
  const file = join(dir, 'haproxy.cfg');
  await writeFile(file, config);
  const child = spawn('haproxy', ['-db', '-f', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout!.on('data', (b: Buffer) => (log += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (log += b.toString()));
  const states = async (): Promise<Record<string, string>> => {
    const r = await fetch(`http://127.0.0.1:${statsPort}/stats;csv`).catch(() => undefined);
    if (!r || r.status !== 200) return {};
    const rows = (await r.text()).split('\n').map((l) => l.split(','));
    const head = rows[0]!;
    const name = head.indexOf('svname');
    const status = head.indexOf('status');
    const out: Record<string, string> = {};
    for (const row of rows.slice(1)) if (row[0] === 'nereid' && row[name] !== 'BACKEND') out[row[name]!] = row[status]!;
    return out;
  };
  await until(async () => {
    if (child.exitCode !== null) throw new Error(`haproxy exited:\n${log}`);
    const s = await states();
    return replicas.every((r) => s[r.name] === 'UP');
  }, 'HAProxy to see every replica up');
  return { port, states, output: () => log, stop: async () => { child.kill(); await ended(child); } };
}

export interface Prometheus extends Service {
  /** Raw samples of a range-vector selector, per series: [unix seconds, value]. */
  samples(selector: string): Promise<{ metric: Record<string, string>; values: [number, string][] }[]>;
}

/** A real Prometheus scraping every target's metrics port every second. */
export async function startPrometheus(dir: string, targets: readonly number[]): Promise<Prometheus> {
  const port = await freePort();
  await writeFile(join(dir, 'prometheus.yml'), [
    'global:',
    '  scrape_interval: 1s',
    'scrape_configs:',
    '  - job_name: nereid',
    '    static_configs:',
    `      - targets: [${targets.map((t) => `'127.0.0.1:${t}'`).join(', ')}]`,
    '',
  ].join('\n'));
  const child = spawn('prometheus', [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`], { stdio: 'ignore' });
  const samples = async (selector: string): Promise<{ metric: Record<string, string>; values: [number, string][] }[]> => {
    const r = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(selector)}`).catch(() => undefined);
    if (!r || r.status !== 200) return [];
    const body = (await r.json()) as { status: string; data: { result: { metric: Record<string, string>; values: [number, string][] }[] } };
    return body.status === 'success' ? body.data.result : [];
  };
  await until(async () => (await fetch(`http://127.0.0.1:${port}/-/ready`).catch(() => undefined))?.status === 200, 'Prometheus to be ready');
  return { port, samples, stop: async () => { child.kill(); await ended(child); } };
}

/** Resolves after `ms`; for pacing a load, never for a measurement. */
export const pause = (ms: number): Promise<void> => sleep(ms);
