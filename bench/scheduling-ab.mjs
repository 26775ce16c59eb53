#!/usr/bin/env node
// The schedulers on the request path, two or more builds side by side: a request through the direct scheduler
// (`simple`), a sequence step through the sequence batcher with implicit state (`sequence_accumulator`: START,
// eight steps, END) and a 3-step ensemble (simple → simple → simple), each over HTTP/JSON at concurrency 1.
// Every build serves the same copied models in a server process of its own; one client sends each request to
// every side in turn (starting at a different side each time), so that a drift of the machine hits all sides
// within the same milliseconds (as bench/side-by-side.mjs does for `simple`). Per side and workload: the median
// over rounds of the client's p50 latency and of the server's CPU time per request (all threads, from /proc),
// and each build's ratios to the first build named (the reference, measured in the same run).
//
//   node bench/scheduling-ab.mjs --nereid DIR,DIR... [--requests N] [--rounds N]
//
// DIR: checkouts of Nereid, each built (`npx tsc -p .`); the first is the reference. Another commit's checkout:
//   git worktree add /tmp/before <commit> && ln -s "$PWD/node_modules" /tmp/before/ && (cd /tmp/before && npx tsc -p .)
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { ROOT, startServer, nereidArgs, freePort, cpuMs, killAll, median, fmt, pad, padEnd, writeChain3 } from './servers.mjs';

const { values: a } = parseArgs({
  options: {
    nereid: { type: 'string' },
    requests: { type: 'string', default: '3000' },
    rounds: { type: 'string', default: '5' },
  },
});
if (!a.nereid) {
  console.error('usage: node bench/scheduling-ab.mjs --nereid DIR,DIR... [--requests N] [--rounds N]');
  process.exit(2);
}
const requests = Number(a.requests);
const rounds = Number(a.rounds);
const checkouts = a.nereid.split(',').map((d) => resolve(d));
for (const d of checkouts) {
  if (!existsSync(join(d, 'dist', 'src', 'cli', 'main.js'))) throw new Error(`${d} is not built: run npx tsc -p . there`);
}

const dir = mkdtempSync(join(tmpdir(), 'nereid-bench-scheduling-'));
process.on('exit', () => {
  killAll();
  rmSync(dir, { recursive: true, force: true });
});
process.on('SIGINT', () => process.exit(130));
const repo = join(dir, 'repo');
for (const m of ['simple', 'sequence_accumulator']) cpSync(join(ROOT, 'examples/model_repository', m), join(repo, m), { recursive: true });
writeChain3(repo);

const json = { 'content-type': 'application/json' };
const sixteen = (v) => Array(16).fill(v);
const simpleBody = JSON.stringify({ inputs: [
  { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: sixteen(3) },
  { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: sixteen(1) }] });
const chainBody = JSON.stringify({ inputs: [
  { name: 'A', datatype: 'INT32', shape: [1, 16], data: sixteen(3) },
  { name: 'B', datatype: 'INT32', shape: [1, 16], data: sixteen(1) }] });
/** Ten steps per sequence, the same correlation ids on every side (each side has its own sequences). */
const sequenceBody = (i) => {
  const k = i % 10;
  return JSON.stringify({
    parameters: { sequence_id: 1 + Math.floor(i / 10), sequence_start: k === 0, sequence_end: k === 9 },
    inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1], data: [1] }],
  });
};
const workloads = [
  { name: 'direct (simple)', path: '/v2/models/simple/infer', body: () => simpleBody },
  { name: 'sequence step', path: '/v2/models/sequence_accumulator/infer', body: sequenceBody },
  { name: 'ensemble, 3 steps', path: '/v2/models/chain3/infer', body: () => chainBody },
];

const servers = [];
for (const d of checkouts) {
  const port = await freePort();
  const args = [join(d, 'bin', 'nereid.js'), ...nereidArgs(repo, port).slice(1), '--log-info=false'];
  servers.push(await startServer(d === ROOT ? 'this checkout' : d, args, port));
}
const pools = servers.map((s) => new Pool(s.origin, { connections: 1, pipelining: 1 }));

async function once(i, w, body) {
  const t0 = performance.now();
  const r = await pools[i].request({ path: w.path, method: 'POST', headers: json, body });
  const text = await r.body.text();
  if (r.statusCode !== 200) throw new Error(`${servers[i].name} answered ${r.statusCode} for ${w.name}: ${text}`);
  return (performance.now() - t0) * 1000;
}

let next = 0;
/** `count` requests per side: each to every side in turn, starting at a different side each time. */
async function round(w, count) {
  const latencies = servers.map(() => []);
  const cpu0 = servers.map((s) => cpuMs(s.pid));
  for (let k = 0; k < count; k++) {
    const body = w.body(next++);
    for (let j = 0; j < servers.length; j++) {
      const i = (j + k) % servers.length;
      latencies[i].push(await once(i, w, body));
    }
  }
  const cpu = servers.map((s, i) => ((cpuMs(s.pid) - cpu0[i]) * 1000) / count);
  return latencies.map((l, i) => ({ p50: median(l), cpu: cpu[i] }));
}

const load0 = loadavg()[0];
const table = [];
for (const w of workloads) {
  next = 0;
  await round(w, Math.min(1000, requests));
  const results = servers.map(() => []);
  for (let r = 0; r < rounds; r++) (await round(w, requests)).forEach((x, i) => results[i].push(x));
  table.push({ w, med: results.map((rs) => ({ p50: median(rs.map((x) => x.p50)), cpu: median(rs.map((x) => x.cpu)) })) });
}
const load1 = loadavg()[0];
for (const p of pools) await p.close();
await Promise.all(servers.map((s) => s.stop()));

console.log(`schedulers, HTTP JSON c=1: ${rounds} rounds of ${requests} requests per side and workload, load average ${load0.toFixed(2)} -> ${load1.toFixed(2)}`);
console.log(`reference: ${servers[0].name}`);
console.log(`${padEnd('workload', 20)} ${padEnd('side', 34)} ${pad('p50 µs', 8)} ${pad('cpu µs', 8)} ${pad('p50 ×', 7)} ${pad('cpu ×', 7)}`);
for (const { w, med } of table) {
  servers.forEach((s, i) => {
    console.log(`${padEnd(w.name, 20)} ${padEnd(s.name.slice(-34), 34)} ${pad(fmt(med[i].p50), 8)} ${pad(fmt(med[i].cpu, 1), 8)} ${pad(fmt(med[i].p50 / med[0].p50, 3), 7)} ${pad(fmt(med[i].cpu / med[0].cpu, 3), 7)}`);
  });
}
