#!/usr/bin/env node
// Does one hostile request stall everyone else? A normal closed-loop load on `simple` (binary HTTP, the bodies
// of bench/bodies.mjs) runs while a second client sends one kind of hostile request over and over, at full size;
// the same load without the attacker is measured in the same round. Reported per attack, as medians over
// rounds: the server main thread's event-loop delay (monitorEventLoopDelay, max and p99, read inside the server
// by bench/stall-probe.mjs) and the normal client's p99 and max latency and throughput, with and without the
// attacker. Goals: no event-loop stall over 100 ms, and the normal client's p99 within 2x of its p99 without
// the attacker.
//
//   node bench/stall.mjs [--quick] [--rounds N] [--duration S] [--concurrency C] [--attacks a,b,...]
//                        [--attack-timeout S] [--nereid-args '...'] [--out FILE]

import { mkdtempSync, cpSync, rmSync, mkdirSync, writeFileSync } from 'node:fs';
import { fork } from 'node:child_process';
import { tmpdir, cpus, loadavg } from 'node:os';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { createGzip } from 'node:zlib';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { Worker } from 'node:worker_threads';
import protobuf from 'protobufjs';
import { simpleBodies } from './bodies.mjs';
import { ROOT, BENCH_DIR, HOST, nereidBuilt, commitName, freePort } from './servers.mjs';

const { values: a } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    duration: { type: 'string' },
    concurrency: { type: 'string', default: '4' },
    attacks: { type: 'string' },
    'attack-timeout': { type: 'string' },
    'nereid-args': { type: 'string', default: '' },
    out: { type: 'string' },
  },
});
const quick = a.quick;
const opt = {
  quick,
  rounds: Number(a.rounds ?? (quick ? 2 : 3)),
  duration: Number(a.duration ?? (quick ? 2 : 5)),
  concurrency: Number(a.concurrency),
  attackTimeout: Number(a['attack-timeout'] ?? (quick ? 30 : 120)),
  nereidArgs: a['nereid-args'].split(' ').filter(Boolean),
};
const log = (s) => process.stderr.write(s + '\n');
const median = (xs) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((x, y) => x - y);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

// --- The hostile requests, full size and --quick size ---------------------------------------------------------

const protoRoot = new protobuf.Root().loadSync(join(ROOT, 'proto', 'grpc_service.proto'), { keepCase: true });
const RequestType = protoRoot.lookupType('inference.ModelInferRequest');
const encodeRequest = (o) => Buffer.from(RequestType.encode(RequestType.fromObject(o)).finish());

/** `{"inputs":[{},{},…]}` of about `bytes` bytes. */
function tinyObjectsJson(bytes) {
  const n = Math.floor((bytes - 14) / 3);
  return Buffer.from(`{"inputs":[${'{},'.repeat(n)}{}]}`);
}

/** A ModelInferRequest to `simple` with `n` tiny inputs (15 bytes each on the wire). */
function tinyInputsMessage(n) {
  const one = encodeRequest({ inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1] }] });
  const out = Buffer.alloc(one.length * n);
  for (let i = 0; i < n; i++) one.copy(out, i * one.length);
  return Buffer.concat([encodeRequest({ model_name: 'simple' }), out]);
}

/** gzip of `bytes` zero bytes, compressed a MiB at a time (never holding the inflated size). */
async function gzipBomb(bytes) {
  const gz = createGzip({ level: 9 });
  const parts = [];
  gz.on('data', (c) => parts.push(c));
  const done = new Promise((resolve) => gz.on('end', resolve));
  const chunk = Buffer.alloc(1 << 20);
  for (let left = bytes; left > 0; left -= chunk.length) {
    if (!gz.write(left >= chunk.length ? chunk : chunk.subarray(0, left))) await new Promise((r) => gz.once('drain', r));
  }
  gz.end();
  await done;
  return Buffer.concat(parts);
}

/** BYTES inputs of shape [1, n] with no data, binary HTTP (about 230 bytes). */
function bytesHttpBody(n) {
  const input = (name) => ({ name, datatype: 'BYTES', shape: [1, n], parameters: { binary_data_size: 0 } });
  const json = Buffer.from(JSON.stringify({ inputs: [input('INPUT0'), input('INPUT1')] }));
  return { body: json, headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(json.length) } };
}

function bytesGrpcMessage(n) {
  const input = (name) => ({ name, datatype: 'BYTES', shape: [1, n] });
  return encodeRequest({ model_name: 'simple_string', inputs: [input('INPUT0'), input('INPUT1')], raw_input_contents: [Buffer.alloc(0), Buffer.alloc(0)] });
}

const F = (full, small) => (quick ? small : full);
const ATTACKS = {
  'http-json-tiny-objects': {
    what: `HTTP JSON body of ${F('60 MB', '6 MB')} of tiny objects ({"inputs":[{},{},…]})`,
    make: async () => ({ kind: 'http', path: '/v2/models/simple/infer', body: tinyObjectsJson(F(60e6, 6e6)), headers: { 'content-type': 'application/json' } }),
  },
  'grpc-tiny-inputs': {
    what: `gRPC ModelInfer with ${F('2,000,000', '200,000')} tiny inputs (${F('30', '3')} MB)`,
    make: async () => ({ kind: 'grpc', message: tinyInputsMessage(F(2_000_000, 200_000)), gzip: false }),
  },
  'grpc-gzip-bomb': {
    what: `gRPC ModelInfer, gzip of ${F('1 GiB', '128 MiB')} of zeros (${F('about 1 MB', 'about 128 KB')})`,
    make: async () => ({ kind: 'grpc', message: await gzipBomb(F(2 ** 30, 2 ** 27)), gzip: true }),
  },
  'http-bytes-no-data': {
    what: `HTTP BYTES [1, ${F('30000000', '3000000')}] with no data`,
    make: async () => ({ kind: 'http', path: '/v2/models/simple_string/infer', ...bytesHttpBody(F(30_000_000, 3_000_000)) }),
  },
  'http-bytes-no-data-x8': {
    what: `the same, eight at once`,
    parallel: 8,
    make: async () => ({ kind: 'http', path: '/v2/models/simple_string/infer', ...bytesHttpBody(F(30_000_000, 3_000_000)) }),
  },
  'grpc-bytes-no-data': {
    what: `gRPC BYTES [1, ${F('30000000', '3000000')}] with no data`,
    make: async () => ({ kind: 'grpc', message: bytesGrpcMessage(F(30_000_000, 3_000_000)), gzip: false }),
  },
  'grpc-bytes-no-data-x8': {
    what: `the same, eight at once`,
    parallel: 8,
    make: async () => ({ kind: 'grpc', message: bytesGrpcMessage(F(30_000_000, 3_000_000)), gzip: false }),
  },
};
const attackNames = a.attacks ? a.attacks.split(',') : Object.keys(ATTACKS);
for (const n of attackNames) if (!ATTACKS[n]) throw new Error(`unknown attack '${n}'; known: ${Object.keys(ATTACKS).join(', ')}`);

// --- The attacker, in its own thread (bench/stall-attacker.mjs) so that its own work (framing 30 MB messages)
// never delays the normal client's event loop -------------------------------------------------------------------

const attackers = new Set();
function startAttacker(request, lanes, ports) {
  const worker = new Worker(new URL('./stall-attacker.mjs', import.meta.url), { workerData: { request, lanes, ports, attackTimeoutS: opt.attackTimeout } });
  worker.on('error', (e) => { throw e; });
  attackers.add(worker);
  worker.once('exit', () => attackers.delete(worker));
  return {
    /** Attacks for `ms` milliseconds; resolves once the last request has been answered (or given up). */
    run: (ms) => new Promise((resolve) => { worker.once('message', resolve); worker.postMessage({ ms }); }),
    stop: () => worker.terminate(),
  };
}

// --- The server, with the probe ---------------------------------------------------------------------------------

async function startNereid(repo) {
  const httpPort = await freePort();
  const grpcPort = await freePort();
  const args = [
    'serve', '--model-repository', repo, '--http-port', String(httpPort), '--http-address', HOST,
    '--grpc-port', String(grpcPort), '--grpc-address', HOST, '--allow-metrics=false', '--log-info=false', ...opt.nereidArgs,
  ];
  const proc = fork(join(ROOT, 'bin', 'nereid.js'), args, { cwd: ROOT, execArgv: ['--import', join(BENCH_DIR, 'stall-probe.mjs')], stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  let tail = '';
  const keep = (c) => { tail = (tail + c.toString()).slice(-16_384); };
  proc.stdout.on('data', keep);
  proc.stderr.on('data', keep);
  let exited = false;
  proc.once('exit', () => { exited = true; });
  const waiting = new Map();
  let nextId = 0;
  proc.on('message', (m) => { waiting.get(m.id)?.(m); waiting.delete(m.id); });
  const t0 = performance.now();
  for (;;) {
    if (exited) throw new Error(`nereid exited before it was ready:\n${tail}`);
    try {
      const res = await fetch(`http://${HOST}:${httpPort}/v2/health/ready`);
      if (res.status === 200) break;
    } catch {}
    if (performance.now() - t0 > 120_000) throw new Error(`nereid not ready after 120 s:\n${tail}`);
    await sleep(20);
  }
  return {
    pid: proc.pid,
    ports: { http: httpPort, grpc: grpcPort },
    /** The event-loop delay since the last read (ms), once the loop answers. */
    readLoop: () => new Promise((resolve) => { const id = nextId++; waiting.set(id, resolve); proc.send({ op: 'read', id }); }),
    log: () => tail,
    stop: async () => {
      if (exited) return;
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 15_000);
      await new Promise((r) => proc.once('exit', r));
      clearTimeout(t);
    },
  };
}

// --- One window: the normal load, with or without the attacker ---------------------------------------------------

/**
 * The normal client: `concurrency` requests in flight on as many keep-alive connections, each answer sending the
 * next request, until stop() is called; latencies of the requests sent after start() (every answer checked).
 */
function normalLoad(origin, bodies) {
  const pool = new Pool(origin, { connections: opt.concurrency, pipelining: 1, headersTimeout: 0, bodyTimeout: 0 });
  const lat = [];
  let errors = 0;
  const samples = [];
  let recording = false;
  let stopped = false;
  let next = 0;
  const lane = async () => {
    while (!stopped) {
      const b = bodies[next++ % bodies.length];
      const t0 = performance.now();
      const record = recording;
      try {
        const res = await pool.request({ path: '/v2/models/simple/infer', method: 'POST', headers: b.headers, body: b.body });
        const buf = Buffer.from(await res.body.arrayBuffer());
        const bad = res.statusCode !== 200 ? `${res.statusCode} ${buf.toString('utf8', 0, 200)}` : b.verify(buf, res.headers);
        if (bad) { errors++; if (samples.length < 3) samples.push(bad); }
      } catch (e) {
        errors++;
        if (samples.length < 3) samples.push(e.code ?? e.message);
      }
      if (record) lat.push(performance.now() - t0);
    }
  };
  const lanes = Promise.all(Array.from({ length: opt.concurrency }, lane));
  let t0 = 0;
  return {
    start() { recording = true; t0 = performance.now(); },
    async stop() {
      recording = false;
      stopped = true;
      const seconds = (performance.now() - t0) / 1000;
      await lanes;
      await pool.close();
      lat.sort((x, y) => x - y);
      const q = (p) => lat[Math.min(lat.length - 1, Math.max(0, Math.ceil(p * lat.length) - 1))];
      return { requests: lat.length, throughput: lat.length / seconds, p50: q(0.5), p99: q(0.99), max: lat.at(-1), errors, samples };
    },
  };
}

const WARMUP_S = 0.3;

/**
 * One window: the normal load for --duration seconds; with an attack, the attacker sends its requests during
 * those seconds and the normal load goes on until the last of them is answered (so a stall that outlasts the
 * window still falls on the normal client). The server's loop delay covers the same span.
 */
async function window(nereid, bodies, attacker) {
  const load = normalLoad(`http://${HOST}:${nereid.ports.http}`, bodies);
  await sleep(WARMUP_S * 1000);
  await nereid.readLoop(); // starts the window's histogram
  load.start();
  const until = performance.now() + opt.duration * 1000;
  const attacked = attacker ? await attacker.run(opt.duration * 1000) : null;
  const rest = until - performance.now();
  if (rest > 0) await sleep(rest);
  const loop = await nereid.readLoop();
  const r = await load.stop();
  // Let the server settle (the attack's garbage collected) before the next window.
  await sleep(attacker ? 1000 : 200);
  await nereid.readLoop();
  return {
    loopMaxMs: loop.maxMs, loopP99Ms: loop.p99Ms, p99Ms: r.p99, maxMs: r.max, throughput: r.throughput, requests: r.requests,
    errors: r.errors, errorSamples: r.samples, attacker: attacked,
  };
}

if (!nereidBuilt()) throw new Error('build first: ./node_modules/.bin/tsc -p .');
const repo = mkdtempSync(join(tmpdir(), 'nereid-bench-stall-'));
for (const m of ['simple', 'simple_string']) cpSync(join(ROOT, 'examples', 'model_repository', m), join(repo, m), { recursive: true });
const results = {
  meta: { date: new Date().toISOString(), node: process.version, cpus: cpus().length, commit: commitName(), loadBefore: loadavg(), options: opt },
  attacks: [],
};
log(`${results.meta.cpus} CPUs, node ${process.version}, commit ${results.meta.commit}, load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
log(`${opt.rounds} rounds × ${opt.duration} s per window; normal load: binary HTTP on simple, ${opt.concurrency} in flight${quick ? '; --quick sizes' : ''}`);

let nereid;
let failed = false;
try {
  nereid = await startNereid(repo);
  const bodies = simpleBodies('binary');
  for (const name of attackNames) {
    const spec = ATTACKS[name];
    const attacker = startAttacker(await spec.make(), spec.parallel ?? 1, nereid.ports);
    const rounds = { baseline: [], attacked: [] };
    log(`${name}: ${spec.what}`);
    for (let round = 0; round < opt.rounds; round++) {
      const order = round % 2 === 0 ? ['baseline', 'attacked'] : ['attacked', 'baseline'];
      for (const side of order) {
        const w = await window(nereid, bodies, side === 'attacked' ? attacker : null);
        rounds[side].push(w);
        if (w.errors) failed = true;
        log(`  round ${round + 1}/${opt.rounds} ${side.padEnd(8)} loop max ${w.loopMaxMs.toFixed(0).padStart(6)} ms  p99 ${w.loopP99Ms.toFixed(1).padStart(6)} ms | client p99 ${w.p99Ms.toFixed(1).padStart(7)} ms  max ${w.maxMs.toFixed(0).padStart(6)} ms  ${w.throughput.toFixed(0).padStart(5)} req/s`
          + (w.attacker ? `  | attacker sent ${w.attacker.sent}: ${Object.entries(w.attacker.replies).map(([k, v]) => `${v}× ${k}`).join('; ')}` : '')
          + (w.errors ? `  ERRORS ${w.errors} ${JSON.stringify(w.errorSamples)}` : ''));
      }
    }
    const sum = (ws) => ({
      loopMaxMs: median(ws.map((w) => w.loopMaxMs)), loopP99Ms: median(ws.map((w) => w.loopP99Ms)), p99Ms: median(ws.map((w) => w.p99Ms)),
      maxMs: median(ws.map((w) => w.maxMs)), throughput: median(ws.map((w) => w.throughput)),
    });
    await attacker.stop();
    results.attacks.push({ name, what: spec.what, baseline: sum(rounds.baseline), attacked: sum(rounds.attacked), rounds });
  }
} finally {
  for (const w of attackers) await w.terminate();
  await nereid?.stop();
  rmSync(repo, { recursive: true, force: true });
}
results.meta.loadAfter = loadavg();

console.log(`\nEvent-loop stall under hostile requests (medians of ${opt.rounds} rounds of ${opt.duration} s; normal load: binary HTTP on simple, ${opt.concurrency} in flight${quick ? '; --quick sizes' : ''})\n`);
console.log('attack | loop max ms (without) | loop p99 ms (without) | client p99 ms (without) | client max ms (without) | req/s (without) | p99 ratio');
console.log('--- | ---: | ---: | ---: | ---: | ---: | ---:');
const f = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : '-');
for (const r of results.attacks) {
  const b = r.baseline;
  const t = r.attacked;
  r.p99Ratio = t.p99Ms / b.p99Ms;
  console.log(`${r.name} | ${f(t.loopMaxMs)} (${f(b.loopMaxMs)}) | ${f(t.loopP99Ms, 1)} (${f(b.loopP99Ms, 1)}) | ${f(t.p99Ms, 1)} (${f(b.p99Ms, 1)}) | ${f(t.maxMs)} (${f(b.maxMs)}) | ${f(t.throughput)} (${f(b.throughput)}) | ${f(r.p99Ratio, 2)}`);
}
console.log('\ngoals:');
for (const r of results.attacks) {
  const stall = r.attacked.loopMaxMs <= 100;
  const p99 = r.p99Ratio <= 2;
  console.log(`  ${r.name}: loop max ≤ 100 ms ${f(r.attacked.loopMaxMs)} ${stall ? 'pass' : 'FAIL'}; client p99 ≤ 2× ${f(r.p99Ratio, 2)} ${p99 ? 'pass' : 'FAIL'}`);
}
const dir = join(ROOT, '.bench-results');
mkdirSync(dir, { recursive: true });
const file = a.out ?? join(dir, `stall-${results.meta.date.replace(/[:.]/g, '-')}.json`);
writeFileSync(file, JSON.stringify(results, null, 2));
log(`\nwrote ${relative(process.cwd(), file)}; load average ${results.meta.loadBefore.map((x) => x.toFixed(2)).join(' ')} before, ${results.meta.loadAfter.map((x) => x.toFixed(2)).join(' ')} after`);
if (failed) process.exitCode = 1;
