#!/usr/bin/env node
// Side by side: the reference and one or more builds of Nereid serve `simple` at the same time, pinned to the
// same core, and one client alternates its requests among them. Every side then sees the same moment of the
// machine: on a machine whose speed drifts (shared hosts swing by 2× within minutes), rounds that alternate
// servers (bench/http.mjs) can land one side in a fast minute and the other in a slow one, while here a drift
// hits every side within the same few hundred microseconds. For A/B comparisons of a change on the request
// path: small differences (a few percent of CPU per request) that alternating rounds cannot separate from the
// drift show here round after round. It is not the goal measurement: the servers share a core and
// its caches, which is not how one server runs.
//
//   node bench/side-by-side.mjs [--nereid DIR,DIR...] [--encoding json|binary] [--concurrency N]
//                               [--requests N] [--rounds N]
//
// --nereid: checkouts of Nereid, each built (`npx tsc -p .`); default this one. A checkout of another commit:
//   git worktree add /tmp/before <commit> && ln -s "$PWD/node_modules" /tmp/before/ && (cd /tmp/before && npx tsc -p .)
// Per side it prints the median over rounds of p50 and mean latency (µs, as the client sees it) and of the
// server's CPU time per request (µs, all threads, from /proc), then each Nereid's ratios to the reference.

import { mkdtempSync, cpSync, rmSync, existsSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { simpleBodies } from './bodies.mjs';
import { ROOT, startServer, referenceArgs, nereidArgs, freePort, cpuMs, killAll, median, fmt, pad, padEnd } from './servers.mjs';

const { values: a } = parseArgs({
  options: {
    nereid: { type: 'string', default: ROOT },
    encoding: { type: 'string', default: 'json' },
    concurrency: { type: 'string', default: '1' },
    requests: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '3' },
  },
});
const encoding = a.encoding === 'binary' ? 'binary' : 'json';
const concurrency = Number(a.concurrency);
const requests = Number(a.requests);
const rounds = Number(a.rounds);
const checkouts = a.nereid.split(',').map((d) => resolve(d));
for (const d of checkouts) {
  if (!existsSync(join(d, 'dist', 'src', 'cli', 'main.js'))) throw new Error(`${d} is not built: run npx tsc -p . there`);
}

const dir = mkdtempSync(join(tmpdir(), 'nereid-side-'));
process.on('exit', () => {
  killAll();
  rmSync(dir, { recursive: true, force: true });
});
process.on('SIGINT', () => process.exit(130));
const repo = join(dir, 'repo');
cpSync(join(ROOT, 'examples', 'model_repository', 'simple'), join(repo, 'simple'), { recursive: true });

const sides = [{ name: 'reference', args: (port) => referenceArgs(join(repo, 'simple', '1', 'model.onnx'), port) }];
for (const d of checkouts) {
  sides.push({ name: d === ROOT ? 'nereid' : `nereid ${d}`, args: (port) => [join(d, 'bin', 'nereid.js'), ...nereidArgs(repo, port).slice(1), '--log-info=false'] });
}
const servers = [];
for (const s of sides) {
  const port = await freePort();
  servers.push(await startServer(s.name, s.args(port), port));
}
const pools = servers.map((s) => new Pool(s.origin, { connections: concurrency, pipelining: 1 }));
const body = simpleBodies(encoding)[0];

async function once(i) {
  const t0 = performance.now();
  const r = await pools[i].request({ path: '/v2/models/simple/infer', method: 'POST', headers: body.headers, body: body.body });
  await r.body.arrayBuffer();
  if (r.statusCode !== 200) throw new Error(`${servers[i].name} answered ${r.statusCode}`);
  return (performance.now() - t0) * 1000;
}

/** `count` requests per side: each client in turn sends one to every side, starting at a different side. */
async function round(count) {
  const latencies = servers.map(() => []);
  const cpu0 = servers.map((s) => cpuMs(s.pid));
  let left = count;
  await Promise.all(Array.from({ length: concurrency }, async (_, client) => {
    for (let k = client; left-- > 0; k++) {
      for (let j = 0; j < servers.length; j++) {
        const i = (j + k) % servers.length;
        latencies[i].push(await once(i));
      }
    }
  }));
  const cpu = servers.map((s, i) => ((cpuMs(s.pid) - cpu0[i]) * 1000) / count);
  return latencies.map((l, i) => ({ p50: median(l), mean: l.reduce((x, y) => x + y, 0) / l.length, cpu: cpu[i] }));
}

await round(Math.min(3000, requests));
const load0 = loadavg()[0];
const results = servers.map(() => []);
for (let r = 0; r < rounds; r++) (await round(requests)).forEach((x, i) => results[i].push(x));
const load1 = loadavg()[0];
for (const p of pools) await p.close();
await Promise.all(servers.map((s) => s.stop()));

console.log(`simple ${encoding} c=${concurrency}: ${rounds} rounds of ${requests} requests per side, load average ${load0.toFixed(2)} -> ${load1.toFixed(2)}`);
console.log(`${padEnd('side', 40)} ${pad('p50', 7)} ${pad('mean', 7)} ${pad('cpu', 7)}   rounds (p50 / cpu)`);
const med = results.map((rs) => ({ p50: median(rs.map((x) => x.p50)), mean: median(rs.map((x) => x.mean)), cpu: median(rs.map((x) => x.cpu)) }));
servers.forEach((s, i) => {
  const each = results[i].map((x) => `${fmt(x.p50)}/${fmt(x.cpu)}`).join(' ');
  console.log(`${padEnd(s.name, 40)} ${pad(fmt(med[i].p50), 7)} ${pad(fmt(med[i].mean), 7)} ${pad(fmt(med[i].cpu, 1), 7)}   ${each}`);
});
for (let i = 1; i < servers.length; i++) {
  console.log(`${servers[i].name} / reference: p50 ${fmt(med[i].p50 / med[0].p50, 3)}, mean ${fmt(med[i].mean / med[0].mean, 3)}, cpu per request ${fmt(med[i].cpu / med[0].cpu, 3)}`);
}
