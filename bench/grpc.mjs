#!/usr/bin/env node
// gRPC ModelInfer against HTTP with binary tensors, on the same Nereid process and the same model (`simple`):
// throughput and latency percentiles at each concurrency, rounds alternating gRPC and HTTP so drift hits both
// alike, medians of rounds and the ratio gRPC/HTTP.
//
//   node bench/grpc.mjs [--rounds N] [--duration S] [--warmup S] [--concurrency 1,8] [--out FILE]
//
// The gRPC side is one channel (one HTTP/2 connection) with `concurrency` calls in flight, as a grpc-js client
// is normally used; each request is pre-encoded once, so the client only frames bytes. The HTTP side is
// bench/loadgen.mjs (undici, one connection per in-flight request) with simpleBodies('binary').

import { mkdtempSync, cpSync, rmSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir, cpus } from 'node:os';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { execFileSync } from 'node:child_process';
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { runLoad } from './loadgen.mjs';
import { simpleBodies } from './bodies.mjs';
import { ROOT, HOST, startServer, nereidArgs, nereidBuilt, freePort, killAll } from './servers.mjs';

const { values: a } = parseArgs({
  options: {
    rounds: { type: 'string', default: '4' },
    duration: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '1' },
    concurrency: { type: 'string', default: '1,8' },
    out: { type: 'string' },
  },
});
const opt = { rounds: Number(a.rounds), duration: Number(a.duration), warmup: Number(a.warmup), concurrency: a.concurrency.split(',').map(Number) };
const log = (s) => process.stderr.write(s + '\n');
const median = (xs) => {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];

/** The requests of simpleBodies, as ModelInferRequest bytes with raw_input_contents (what tritonclient.grpc sends). */
function grpcBodies(variants = 8) {
  const root = new protobuf.Root().loadSync(join(ROOT, 'proto', 'grpc_service.proto'), { keepCase: true });
  const T = root.lookupType('inference.ModelInferRequest');
  const out = [];
  for (let v = 0; v < variants; v++) {
    const x = Int32Array.from({ length: 16 }, (_, i) => i + 100 * v);
    const y = Int32Array.from({ length: 16 }, (_, i) => (i % 3) - v);
    out.push(Buffer.from(T.encode(T.fromObject({
      model_name: 'simple',
      inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }],
      outputs: [{ name: 'OUTPUT0' }, { name: 'OUTPUT1' }],
      raw_input_contents: [Buffer.from(x.buffer), Buffer.from(y.buffer)],
    })).finish()));
  }
  return out;
}

/** Closed-loop load over one gRPC channel: `concurrency` calls in flight, latencies of those after the warm-up. */
async function grpcLoad(port, bodies, concurrency) {
  const client = new grpc.Client(`${HOST}:${port}`, grpc.credentials.createInsecure());
  const path = '/inference.GRPCInferenceService/ModelInfer';
  const id = (b) => b;
  const lat = [];
  let errors = 0;
  let next = 0;
  const start = performance.now();
  const measureStart = start + opt.warmup * 1000;
  const end = measureStart + opt.duration * 1000;
  const call = () => new Promise((resolve) => {
    const t0 = performance.now();
    client.makeUnaryRequest(path, id, id, bodies[next++ % bodies.length], (err, res) => {
      const t1 = performance.now();
      if (err || res.byteLength < 128) errors++;
      else if (t0 >= measureStart && t1 <= end) lat.push(t1 - t0);
      resolve();
    });
  });
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < end) await call();
  }));
  client.close();
  lat.sort((x, y) => x - y);
  return { throughput: lat.length / opt.duration, p50: quantile(lat, 0.5), p99: quantile(lat, 0.99), errors };
}

if (!nereidBuilt()) throw new Error('build first: ./node_modules/.bin/tsc -p .');
const repo = mkdtempSync(join(tmpdir(), 'nereid-bench-grpc-'));
cpSync(join(ROOT, 'examples', 'model_repository', 'simple'), join(repo, 'simple'), { recursive: true });
const httpPort = await freePort();
const grpcPort = await freePort();
const args = nereidArgs(repo, httpPort).filter((x) => x !== '--allow-grpc=false');
const server = await startServer('nereid', [...args, '--grpc-port', String(grpcPort), '--grpc-address', HOST, '--log-info=false'], httpPort);
const results = { meta: { date: new Date().toISOString(), node: process.version, cpus: cpus().length, commit: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim(), options: opt }, rows: [] };
try {
  const gBodies = grpcBodies();
  const hBodies = simpleBodies('binary');
  for (const c of opt.concurrency) {
    const runs = { grpc: [], http: [] };
    for (let round = 0; round < opt.rounds; round++) {
      const order = round % 2 === 0 ? ['grpc', 'http'] : ['http', 'grpc'];
      for (const side of order) {
        const r = side === 'grpc'
          ? await grpcLoad(grpcPort, gBodies, c)
          : await runLoad({ url: `${server.origin}/v2/models/simple/infer`, bodies: hBodies, concurrency: c, duration: opt.duration, warmup: opt.warmup });
        runs[side].push(r);
        log(`  c=${c} round ${round + 1}/${opt.rounds} ${side.padEnd(4)} ${r.throughput.toFixed(0).padStart(6)} req/s  p50 ${(r.p50 * 1000).toFixed(0).padStart(5)} µs  p99 ${(r.p99 * 1000).toFixed(0).padStart(6)} µs${r.errors ? `  ERRORS ${r.errors}` : ''}`);
      }
    }
    const sum = (xs) => ({ throughput: median(xs.map((r) => r.throughput)), p50: median(xs.map((r) => r.p50)), p99: median(xs.map((r) => r.p99)), errors: xs.reduce((s, r) => s + r.errors, 0) });
    results.rows.push({ concurrency: c, grpc: sum(runs.grpc), http: sum(runs.http), rounds: runs });
  }
} finally {
  await server.stop();
  killAll();
  rmSync(repo, { recursive: true, force: true });
}

console.log(`\ngRPC ModelInfer vs HTTP binary, simple, ${opt.rounds} alternating rounds of ${opt.duration} s (medians)\n`);
console.log('  c | gRPC req/s | HTTP req/s | ratio | gRPC p50 µs | HTTP p50 µs | gRPC p99 µs | HTTP p99 µs');
for (const r of results.rows) {
  console.log(`${String(r.concurrency).padStart(3)} | ${r.grpc.throughput.toFixed(0).padStart(10)} | ${r.http.throughput.toFixed(0).padStart(10)} | ${(r.grpc.throughput / r.http.throughput).toFixed(2).padStart(5)} | ` +
    `${(r.grpc.p50 * 1000).toFixed(0).padStart(11)} | ${(r.http.p50 * 1000).toFixed(0).padStart(11)} | ${(r.grpc.p99 * 1000).toFixed(0).padStart(11)} | ${(r.http.p99 * 1000).toFixed(0).padStart(11)}`);
}
const dir = join(ROOT, '.bench-results');
mkdirSync(dir, { recursive: true });
const file = a.out ?? join(dir, `grpc-${results.meta.date.replace(/[:.]/g, '-')}.json`);
writeFileSync(file, JSON.stringify(results, null, 2));
log(`\nwrote ${relative(process.cwd(), file)}`);
