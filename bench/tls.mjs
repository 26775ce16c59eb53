#!/usr/bin/env node
// Server CPU per request over HTTPS (--http-use-ssl) against plain HTTP, on Triton's `simple` with binary
// tensors, in one run: two Nereid servers (one plain, one TLS, the same flags otherwise) pinned to the same
// core, loaded in turn (A B, then B A, …) at each concurrency over keep-alive connections, so that both see
// the same machine. Per round: the server's CPU time (/proc, 10 ms ticks) over the measured seconds divided by
// the requests answered; the connections' handshakes (one per connection) fall in that window and are part of
// the cost. Prints medians of rounds, the ratio TLS/plain, and the load average before and after.
//
//   node bench/tls.mjs [--quick] [--rounds N] [--duration S] [--concurrency 1,8] [--out FILE]
//
// Writes every figure, every round included, to .bench-results/tls-<time>.json.

import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { execFileSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { runLoad } from './loadgen.mjs';
import { simpleBodies } from './bodies.mjs';
import { ROOT, HOST, PIN, cpuMs, freePort, median, fmt, pad, nereidArgs, nereidBuilt, startServer, killAll } from './servers.mjs';

const { values: a } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    duration: { type: 'string' },
    concurrency: { type: 'string', default: '1,8' },
    out: { type: 'string' },
  },
});
const rounds = Number(a.rounds ?? (a.quick ? 3 : 6));
const duration = Number(a.duration ?? (a.quick ? 2 : 4));
const concurrencies = a.concurrency.split(',').map(Number);

if (!nereidBuilt()) {
  console.error('build first: npm run build');
  process.exit(1);
}
process.on('SIGINT', () => {
  killAll();
  process.exit(130);
});

/** A CA and a server certificate for 127.0.0.1, made with openssl. */
function certificates(dir) {
  const ssl = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  ssl('req', '-x509', ...key, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=nereid-bench-ca');
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1\n');
  ssl('req', ...key, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=server');
  ssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '2', '-extfile', 'san.ext');
  return readFileSync(join(dir, 'ca.crt'));
}

/** The TLS server: startServer polls readiness over plain HTTP, so this one is spawned and polled here. */
async function startTlsServer(args, port, ca) {
  const command = [process.execPath, ...args];
  const proc = PIN ? spawn('taskset', ['-c', PIN.server, ...command], { cwd: ROOT, stdio: 'ignore' }) : spawn(command[0], command.slice(1), { cwd: ROOT, stdio: 'ignore' });
  const ready = () => new Promise((resolve) => {
    const req = https.get({ host: HOST, port, path: '/v2/health/ready', ca, agent: false, timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
  });
  for (let i = 0; !(await ready()); i++) {
    if (i > 24_000 || proc.exitCode !== null) throw new Error('the TLS server did not start');
    await sleep(5);
  }
  return {
    pid: proc.pid,
    stop: () => new Promise((resolve) => {
      proc.once('exit', resolve);
      proc.kill('SIGTERM');
    }),
  };
}

async function measure(server, url, connect, concurrency) {
  const bodies = simpleBodies('binary');
  await runLoad({ url, bodies, concurrency, duration: 1, warmup: 0, connect });
  const cpu0 = cpuMs(server.pid);
  const r = await runLoad({ url, bodies, concurrency, duration, warmup: 0, connect });
  const cpu = cpuMs(server.pid) - cpu0;
  if (r.errors.status + r.errors.network + r.errors.decode > 0) throw new Error(`errors: ${r.errors.samples.join('; ')}`);
  return { requests: r.requests, throughput: r.throughput, p50: r.p50, cpuUsPerRequest: (cpu * 1000) / r.requests };
}

const dir = mkdtempSync(join(tmpdir(), 'nereid-bench-tls-'));
const results = { loadBefore: loadavg(), rounds, duration, concurrencies, runs: {} };
try {
  const ca = certificates(dir);
  const repo = join(ROOT, 'examples', 'model_repository');
  const only = ['--model-control-mode=explicit', '--load-model=simple'];
  const [plainPort, tlsPort] = [await freePort(), await freePort()];
  const plain = await startServer('plain', [...nereidArgs(repo, plainPort), ...only], plainPort);
  const secure = await startTlsServer([...nereidArgs(repo, tlsPort), ...only, '--http-use-ssl=true',
    `--http-server-cert=${join(dir, 'server.crt')}`, `--http-server-key=${join(dir, 'server.key')}`], tlsPort, ca);
  const sides = {
    plain: () => ({ server: plain, url: `http://${HOST}:${plainPort}/v2/models/simple/infer`, connect: undefined }),
    tls: () => ({ server: secure, url: `https://${HOST}:${tlsPort}/v2/models/simple/infer`, connect: { ca } }),
  };
  try {
    for (const c of concurrencies) {
      const runs = { plain: [], tls: [] };
      for (let r = 0; r < rounds; r++) {
        for (const name of r % 2 === 0 ? ['plain', 'tls'] : ['tls', 'plain']) {
          const s = sides[name]();
          runs[name].push(await measure(s.server, s.url, s.connect, c));
        }
      }
      results.runs[c] = runs;
    }
  } finally {
    await plain.stop();
    await secure.stop();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
results.loadAfter = loadavg();

console.log(`simple, binary tensors, keep-alive; ${rounds} rounds of ${duration} s per side; medians`);
console.log(`${pad('c', 3)} ${pad('plain µs/req', 13)} ${pad('TLS µs/req', 11)} ${pad('ratio', 6)} ${pad('plain req/s', 12)} ${pad('TLS req/s', 10)}`);
for (const c of concurrencies) {
  const { plain, tls } = results.runs[c];
  const m = (xs, k) => median(xs.map((x) => x[k]));
  const ratio = m(tls, 'cpuUsPerRequest') / m(plain, 'cpuUsPerRequest');
  results.runs[c].ratio = ratio;
  console.log(`${pad(c, 3)} ${pad(fmt(m(plain, 'cpuUsPerRequest'), 1), 13)} ${pad(fmt(m(tls, 'cpuUsPerRequest'), 1), 11)} ${pad(fmt(ratio, 3), 6)} ${pad(fmt(m(plain, 'throughput')), 12)} ${pad(fmt(m(tls, 'throughput')), 10)}`);
}
console.log(`load average (1, 5, 15 min): before ${results.loadBefore.map((x) => x.toFixed(2)).join(' ')}, after ${results.loadAfter.map((x) => x.toFixed(2)).join(' ')}`);
const out = a.out ?? join(ROOT, '.bench-results', `tls-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
mkdirSync(join(out, '..'), { recursive: true });
writeFileSync(out, JSON.stringify(results, null, 1));
console.log(`figures: ${out}`);
