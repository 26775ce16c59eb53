#!/usr/bin/env node
// gRPC ModelInfer on `simple`: Nereid against the reference (bench/grpc-reference-server.mjs, a minimal
// hand-written grpc-js + onnxruntime-node server), and Nereid's binary HTTP for context. Throughput, p50/p99 and
// the server's CPU time per request at each concurrency; rounds alternate the sides (the order rotates every
// round) so that drift on the machine hits all alike; medians of rounds and the ratios Nereid/reference.
//
//   node bench/grpc.mjs [--rounds N] [--duration S] [--warmup S] [--concurrency 1,8,32]
//                       [--sides reference,nereid,http] [--out FILE]
//
// The gRPC load is one channel (one HTTP/2 connection) with `concurrency` calls in flight, as a grpc-js client
// is normally used, the same client code for both servers. Requests are encoded once before timing
// (raw_input_contents, as tritonclient.grpc sends them), so the client only frames bytes; every warm-up
// response and every 8th measured one is decoded and its outputs checked. The HTTP load is bench/loadgen.mjs
// (undici, one connection per in-flight request) with simpleBodies('binary').

import { mkdtempSync, cpSync, rmSync, mkdirSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir, cpus, loadavg } from 'node:os';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { runLoad } from './loadgen.mjs';
import { simpleBodies } from './bodies.mjs';
import { ROOT, BENCH_DIR, HOST, startServer, nereidArgs, nereidBuilt, commitName, freePort, cpuMs, killAll } from './servers.mjs';

const { values: a } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '1' },
    concurrency: { type: 'string', default: '1,8,32' },
    sides: { type: 'string', default: 'reference,nereid,http' },
    out: { type: 'string' },
  },
});
const opt = {
  rounds: Number(a.rounds), duration: Number(a.duration), warmup: Number(a.warmup),
  concurrency: a.concurrency.split(',').map(Number), sides: a.sides.split(','),
};
const log = (s) => process.stderr.write(s + '\n');
const median = (xs) => {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];

const SIMPLE = join(ROOT, 'examples', 'model_repository', 'simple');
const protoRoot = new protobuf.Root().loadSync(join(ROOT, 'proto', 'grpc_service.proto'), { keepCase: true });
const RequestType = protoRoot.lookupType('inference.ModelInferRequest');
const ResponseType = protoRoot.lookupType('inference.ModelInferResponse');

/** The requests, as ModelInferRequest bytes with raw_input_contents, and the outputs each must produce. */
function grpcBodies(variants = 8) {
  const out = [];
  for (let v = 0; v < variants; v++) {
    const x = Int32Array.from({ length: 16 }, (_, i) => i + 100 * v);
    const y = Int32Array.from({ length: 16 }, (_, i) => (i % 3) - v);
    out.push({
      body: Buffer.from(RequestType.encode(RequestType.fromObject({
        model_name: 'simple',
        inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }],
        outputs: [{ name: 'OUTPUT0' }, { name: 'OUTPUT1' }],
        raw_input_contents: [Buffer.from(x.buffer), Buffer.from(y.buffer)],
      })).finish()),
      sum: Buffer.from(Int32Array.from(x, (e, i) => e + y[i]).buffer),
      diff: Buffer.from(Int32Array.from(x, (e, i) => e - y[i]).buffer),
    });
  }
  return out;
}

/** Null when a response holds the expected outputs, else what is wrong. */
function check(bytes, b) {
  const r = ResponseType.decode(bytes);
  const raw = r.raw_output_contents;
  if (r.outputs.length !== 2 || raw.length !== 2) return `${r.outputs.length} outputs, ${raw.length} raw contents`;
  if (!Buffer.from(raw[0]).equals(b.sum) || !Buffer.from(raw[1]).equals(b.diff)) return 'wrong output values';
  return null;
}

/**
 * Closed-loop load over one gRPC channel: `concurrency` calls in flight, each finished call sending the next
 * pre-encoded body at once; latencies of the calls started after the warm-up and ended before the end.
 */
async function grpcLoad(port, bodies, concurrency, pid) {
  const client = new grpc.Client(`${HOST}:${port}`, grpc.credentials.createInsecure());
  const path = '/inference.GRPCInferenceService/ModelInfer';
  const id = (b) => b;
  const lat = [];
  const errors = [];
  let next = 0;
  let done = 0;
  const start = performance.now();
  const measureStart = start + opt.warmup * 1000;
  const end = measureStart + opt.duration * 1000;
  let cpu0 = NaN;
  const cpuTimer = setTimeout(() => { cpu0 = cpuMs(pid); }, opt.warmup * 1000);
  const call = () => new Promise((resolve) => {
    const b = bodies[next++ % bodies.length];
    const t0 = performance.now();
    client.makeUnaryRequest(path, id, id, b.body, (err, res) => {
      const t1 = performance.now();
      if (err) errors.push(err.message);
      else if (t0 < measureStart || ++done % 8 === 0) {
        const bad = check(res, b);
        if (bad) errors.push(bad);
      }
      if (t0 >= measureStart && t1 <= end) lat.push(t1 - t0);
      resolve();
    });
  });
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < end) await call();
  }));
  const cpu1 = cpuMs(pid);
  clearTimeout(cpuTimer);
  client.close();
  lat.sort((x, y) => x - y);
  return {
    requests: lat.length, throughput: lat.length / opt.duration, p50: quantile(lat, 0.5), p99: quantile(lat, 0.99),
    serverCpuUsPerRequest: ((cpu1 - cpu0) * 1000) / lat.length, errors: errors.length, errorSamples: errors.slice(0, 3),
  };
}

/** HTTP with binary tensors through bench/loadgen.mjs, with the server's CPU per request over the same span. */
async function httpLoad(server, concurrency) {
  let cpu0 = NaN;
  const cpuTimer = setTimeout(() => { cpu0 = cpuMs(server.pid); }, opt.warmup * 1000);
  const r = await runLoad({ url: `${server.origin}/v2/models/simple/infer`, bodies: simpleBodies('binary'), concurrency, duration: opt.duration, warmup: opt.warmup });
  clearTimeout(cpuTimer);
  r.serverCpuUsPerRequest = ((cpuMs(server.pid) - cpu0) * 1000) / r.requests;
  return r;
}

/** The reference as a child process; ready when it prints the port it serves on. */
function startReference() {
  const proc = spawn(process.execPath, [join(BENCH_DIR, 'grpc-reference-server.mjs'), '--model', join(SIMPLE, '1', 'model.onnx'), '--host', HOST, '--port', '0'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  return new Promise((resolve, reject) => {
    let tail = '';
    const onData = (chunk) => {
      tail += chunk.toString();
      const m = / on [^ ]+:(\d+)\n/.exec(tail);
      if (m) {
        proc.stderr.off('data', onData);
        proc.stderr.resume();
        resolve({ pid: proc.pid, port: Number(m[1]), stop: () => new Promise((r) => { proc.once('exit', r); proc.kill('SIGTERM'); }) });
      }
    };
    proc.stderr.on('data', onData);
    proc.once('exit', (code) => reject(new Error(`the gRPC reference exited (${code}) before it was ready:\n${tail}`)));
  });
}

if (!nereidBuilt()) throw new Error('build first: ./node_modules/.bin/tsc -p .');
const repo = mkdtempSync(join(tmpdir(), 'nereid-bench-grpc-'));
cpSync(SIMPLE, join(repo, 'simple'), { recursive: true });
const results = {
  meta: { date: new Date().toISOString(), node: process.version, cpus: cpus().length, commit: commitName(), loadBefore: loadavg()[0], options: opt },
  rows: [],
};
log(`${results.meta.cpus} CPUs, node ${process.version}, commit ${results.meta.commit}, load average ${loadavg()[0].toFixed(2)}`);
log(`${opt.rounds} rounds × ${opt.duration} s (+${opt.warmup} s warm-up) per side; concurrency ${opt.concurrency.join(',')}; sides ${opt.sides.join(',')}`);

let reference;
let nereid;
try {
  const httpPort = await freePort();
  const grpcPort = await freePort();
  const args = nereidArgs(repo, httpPort).filter((x) => x !== '--allow-grpc=false');
  nereid = await startServer('nereid', [...args, '--grpc-port', String(grpcPort), '--grpc-address', HOST, '--log-info=false'], httpPort);
  reference = await startReference();
  const bodies = grpcBodies();
  const run = {
    reference: (c) => grpcLoad(reference.port, bodies, c, reference.pid),
    nereid: (c) => grpcLoad(grpcPort, bodies, c, nereid.pid),
    http: (c) => httpLoad(nereid, c),
  };
  for (const c of opt.concurrency) {
    const runs = Object.fromEntries(opt.sides.map((s) => [s, []]));
    for (let round = 0; round < opt.rounds; round++) {
      const k = round % opt.sides.length;
      const order = [...opt.sides.slice(k), ...opt.sides.slice(0, k)];
      for (const side of order) {
        const r = await run[side](c);
        runs[side].push(r);
        log(`  c=${c} round ${round + 1}/${opt.rounds} ${side.padEnd(9)} ${r.throughput.toFixed(0).padStart(6)} req/s  p50 ${(r.p50 * 1000).toFixed(0).padStart(5)} µs  p99 ${(r.p99 * 1000).toFixed(0).padStart(6)} µs  cpu ${r.serverCpuUsPerRequest.toFixed(0).padStart(4)} µs/req${r.errors ? `  ERRORS ${r.errors} ${JSON.stringify(r.errorSamples ?? r.errorDetail)}` : ''}`);
      }
    }
    const sum = (xs) => ({
      throughput: median(xs.map((r) => r.throughput)), p50: median(xs.map((r) => r.p50)), p99: median(xs.map((r) => r.p99)),
      cpuUs: median(xs.map((r) => r.serverCpuUsPerRequest)), errors: xs.reduce((s, r) => s + r.errors, 0),
    });
    const row = { concurrency: c, rounds: runs };
    for (const s of opt.sides) row[s] = sum(runs[s]);
    results.rows.push(row);
  }
} finally {
  await nereid?.stop();
  await reference?.stop();
  killAll();
  rmSync(repo, { recursive: true, force: true });
}
results.meta.loadAfter = loadavg()[0];

const us = (ms) => (ms * 1000).toFixed(0);
console.log(`\ngRPC ModelInfer on simple, ${opt.rounds} rounds of ${opt.duration} s, sides alternating (medians; µs; cpu = server CPU µs per request)\n`);
const cols = opt.sides.map((s) => `${s} req/s | p50 | p99 | cpu`).join(' | ');
const both = opt.sides.includes('reference') && opt.sides.includes('nereid');
console.log(`  c | ${cols}${both ? ' | nereid/ref req/s | nereid/ref p50' : ''}`);
let failed = false;
for (const r of results.rows) {
  let line = String(r.concurrency).padStart(3);
  for (const s of opt.sides) line += ` | ${r[s].throughput.toFixed(0)} | ${us(r[s].p50)} | ${us(r[s].p99)} | ${r[s].cpuUs.toFixed(0)}`;
  if (both) {
    r.throughputRatio = r.nereid.throughput / r.reference.throughput;
    r.p50Ratio = r.nereid.p50 / r.reference.p50;
    line += ` | ${r.throughputRatio.toFixed(2)} | ${r.p50Ratio.toFixed(2)}`;
  }
  console.log(line);
  for (const s of opt.sides) if (r[s].errors) { failed = true; console.log(`    ${s}: ${r[s].errors} errors`); }
}
if (both) {
  console.log('\ngoals:');
  for (const r of results.rows) {
    console.log(`  throughput ≥ 0.9× the reference at c=${r.concurrency}: ${r.throughputRatio.toFixed(2)} ${r.throughputRatio >= 0.9 ? 'pass' : 'FAIL'}`);
  }
  const c1 = results.rows.find((r) => r.concurrency === 1);
  if (c1) console.log(`  p50 at c=1 ≤ 1.1× the reference's: ${c1.p50Ratio.toFixed(2)} ${c1.p50Ratio <= 1.1 ? 'pass' : 'FAIL'}`);
}
const dir = join(ROOT, '.bench-results');
mkdirSync(dir, { recursive: true });
const file = a.out ?? join(dir, `grpc-${results.meta.date.replace(/[:.]/g, '-')}.json`);
writeFileSync(file, JSON.stringify(results, null, 2));
log(`\nwrote ${relative(process.cwd(), file)}; load average ${results.meta.loadBefore.toFixed(2)} before, ${results.meta.loadAfter.toFixed(2)} after`);
if (failed) process.exitCode = 1;
