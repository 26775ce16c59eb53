// Starting, watching and stopping the servers a benchmark compares, each as its own child process.

import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { readFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

export const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
export const ROOT = join(BENCH_DIR, '..');
export const HOST = '127.0.0.1';

/**
 * Where the processes run. On a machine of few cores the scheduler may put a server and the load generator on
 * one core in one run and on two in the next, and at concurrency 1 that alone moves throughput by half. So each
 * server runs on the last core and this process (the load generator, and any client it spawns) on the others,
 * the same for every side: `taskset`, when the machine has it and two cores or more. NEREID_BENCH_PIN=0 turns
 * it off.
 */
export const PIN = pinning();

function pinning() {
  const cores = os.availableParallelism();
  if (process.env.NEREID_BENCH_PIN === '0' || process.platform !== 'linux' || cores < 2) return undefined;
  try {
    execFileSync('taskset', ['-p', '-c', `0-${cores - 2}`, String(process.pid)], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  return { server: String(cores - 1), client: `0-${cores - 2}` };
}

/** A free TCP port on the loopback address (bound then released; the server takes it right after). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, HOST, () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function getStatus(port, path) {
  return new Promise((resolve) => {
    const req = http.get({ host: HOST, port, path, agent: false, timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on('error', () => resolve(0));
    req.on('timeout', () => req.destroy());
  });
}

/** Resident set size of a process in KiB (Linux /proc), or NaN. */
export function rssKiB(pid) {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : NaN;
  } catch {
    return NaN;
  }
}

/** User + system CPU time of a process (all its threads) in ms (Linux /proc, 100 ticks per second), or NaN. */
export function cpuMs(pid, at = 11) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime, stime are fields 14 and 15 of the line (cutime, cstime 16 and 17, for childrenCpuMs)
    return (Number(fields[at]) + Number(fields[at + 1])) * 10;
  } catch {
    return NaN;
  }
}

/**
 * CPU time, in ms, of this process's children that have ended and been waited for (cutime + cstime of
 * /proc/self/stat): the delta around a child's run is that child's CPU time, or NaN.
 */
export function childrenCpuMs() {
  return cpuMs('self', 13);
}

const live = new Set();
/** Kills every server still running (for Ctrl-C and failures). */
export function killAll() {
  for (const s of live) s.proc.kill('SIGKILL');
}

/**
 * Spawns `node <args>` and waits until GET /v2/health/ready answers 200.
 * Resolves to { name, pid, port, origin, readyMs, proc, log(), stop() }; readyMs runs from just before the spawn
 * to the first 200, polled every 5 ms. `prefix` runs node under another program that execs it in the same
 * process (valgrind, for bench/instructions.mjs), so `pid` is still the server's.
 */
export async function startServer(name, nodeArgs, port, { timeoutMs = 120_000, prefix = [] } = {}) {
  let tail = '';
  const keep = (chunk) => {
    tail = (tail + chunk.toString()).slice(-16_384);
  };
  const t0 = performance.now();
  const command = [...prefix, process.execPath, ...nodeArgs];
  const proc = PIN
    ? spawn('taskset', ['-c', PIN.server, ...command], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(command[0], command.slice(1), { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout.on('data', keep);
  proc.stderr.on('data', keep);
  let exited = null;
  const exit = new Promise((resolve) => proc.on('exit', (code, signal) => {
    exited = { code, signal };
    live.delete(server);
    resolve(exited);
  }));
  const server = {
    name,
    pid: proc.pid,
    port,
    origin: `http://${HOST}:${port}`,
    proc,
    readyMs: NaN,
    log: () => tail,
    async stop() {
      if (exited) return exited;
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 15_000);
      const r = await exit;
      clearTimeout(timer);
      return r;
    },
  };
  live.add(server);
  for (;;) {
    if (exited) throw new Error(`${name} exited (${exited.code ?? exited.signal}) before it was ready:\n${tail}`);
    if ((await getStatus(port, '/v2/health/ready')) === 200) break;
    if (performance.now() - t0 > timeoutMs) {
      await server.stop();
      throw new Error(`${name} was not ready after ${timeoutMs / 1000} s:\n${tail}`);
    }
    await sleep(5);
  }
  server.readyMs = performance.now() - t0;
  return server;
}

export function referenceArgs(modelPath, port) {
  return [join(BENCH_DIR, 'reference-server.mjs'), '--model', modelPath, '--port', String(port), '--host', HOST];
}

export function nereidArgs(repository, port) {
  return [
    join(ROOT, 'bin', 'nereid.js'), 'serve',
    '--model-repository', repository,
    '--http-port', String(port),
    '--http-address', HOST,
    '--allow-grpc=false',
    '--allow-metrics=false',
  ];
}

/** Whether bin/nereid.js can run: it imports the compiled dist/ (`npx tsc -p .`). */
export function nereidBuilt() {
  return existsSync(join(ROOT, 'dist', 'src', 'cli', 'main.js'));
}

/** The commit benchmarked, saying so when src/ or bin/ had uncommitted changes. */
export function commitName() {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'bin'], { cwd: ROOT, encoding: 'utf8' }).trim() !== '';
    return dirty ? `${commit} (src/ has uncommitted changes)` : commit;
  } catch {
    return 'unknown';
  }
}

/** A throwaway redis-server on `port` (no persistence), once it answers PING. */
export async function startRedis(port) {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    if (spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' }).stdout?.includes('PONG')) return child;
    await sleep(50);
  }
  child.kill();
  throw new Error('redis-server did not start');
}

/** The median of the finite values (NaN when there are none). */
export function median(xs) {
  const s = xs.filter((x) => Number.isFinite(x)).sort((x, y) => x - y);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export const fmt = (x, digits = 0) => (Number.isFinite(x) ? x.toFixed(digits) : '-');
export const pad = (s, n) => String(s).padStart(n);
export const padEnd = (s, n) => String(s).padEnd(n);

/**
 * Writes `chain3` into `repo`: an ensemble of three `simple` steps (simple → simple → simple) over two [16]
 * INT32 inputs A and B, answering X = 4·A and Y = 4·B. `simple` must be copied into `repo` beside it.
 */
export function writeChain3(repo) {
  const step = (x, y, o0, o1) => `{ model_name: "simple" model_version: -1
    input_map { key: "INPUT0" value: "${x}" } input_map { key: "INPUT1" value: "${y}" }
    output_map { key: "OUTPUT0" value: "${o0}" } output_map { key: "OUTPUT1" value: "${o1}" } }`;
  mkdirSync(join(repo, 'chain3', '1'), { recursive: true });
  writeFileSync(join(repo, 'chain3', 'config.pbtxt'), `name: "chain3"
platform: "ensemble"
max_batch_size: 8
input [ { name: "A" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "B" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "X" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "Y" data_type: TYPE_INT32 dims: [ 16 ] } ]
ensemble_scheduling { step [ ${step('A', 'B', 's1', 'd1')}, ${step('s1', 'd1', 's2', 'd2')}, ${step('s2', 'd2', 'X', 'Y')} ] }
`);
}
