#!/usr/bin/env node
// Dynamic batching benchmarks, each side by side in one run, medians of alternating rounds:
//  1. gain: an MLP 784-512-512-10 at concurrency 64 through the in-process API, dynamic batching vs none,
//     beside raw onnxruntime's own per-sample gain from batch 1 to batch 64 on the same model and session
//     options, measured in the same rounds; then the same comparison over HTTP (each server its own process);
//  2. overhead: `simple` at concurrency 1 with max_queue_delay 0, the dynamic batcher vs the direct scheduler,
//     in short alternating blocks.
// Usage: npx tsc -p . && node bench/batching.mjs [--quick]
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { InferenceServer } from '../dist/src/index.js';
import { NOOP_LOGGER } from '../dist/src/observability/logger.js';
import { openSession } from '../dist/src/backends/onnxruntime/session.js';
import { runLoad } from './loadgen.mjs';
import { freePort, killAll, nereidArgs, startServer } from './servers.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const quick = process.argv.includes('--quick');
const ROUNDS = quick ? 3 : 7;
const SECONDS = quick ? 1 : 2;
const OVERHEAD_PAIRS = quick ? 10 : 40;
const OVERHEAD_BLOCK_S = 0.25;
const CONCURRENCY = 64;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const log = (s) => process.stdout.write(`${s}\n`);
process.on('SIGINT', () => {
  killAll();
  process.exit(130);
});

const work = mkdtempSync(join(tmpdir(), 'nereid-bench-batching-'));
execFileSync('/usr/bin/python3', [join(ROOT, 'scripts/models/make_bench_models.py'), '--out', work], { stdio: 'ignore' });
const mlpFile = join(work, 'mlp.onnx');

function mlpRepo(name, batching) {
  const dir = join(work, name);
  mkdirSync(join(dir, 'mlp', '1'), { recursive: true });
  cpSync(mlpFile, join(dir, 'mlp', '1', 'model.onnx'));
  writeFileSync(join(dir, 'mlp', 'config.pbtxt'), `name: "mlp"
backend: "onnxruntime"
max_batch_size: 64
input [ { name: "INPUT" data_type: TYPE_FP32 dims: [ 784 ] } ]
output [ { name: "PROBABILITIES" data_type: TYPE_FP32 dims: [ 10 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
parameters { key: "intra_op_thread_count" value { string_value: "1" } }
${batching}
`);
  return dir;
}

function simpleRepo(name, batching) {
  const dir = join(work, name);
  cpSync(join(ROOT, 'examples/model_repository/simple'), join(dir, 'simple'), { recursive: true });
  const p = join(dir, 'simple', 'config.pbtxt');
  if (batching) writeFileSync(p, `${readFileSync(p, 'utf8')}\n${batching}\n`);
  return dir;
}

/** A logger that keeps what the backends say about where each instance runs (inline or worker thread). */
function placementLogger(notes) {
  const logger = { ...NOOP_LOGGER, isVerbose: () => true, verbose: (_level, msg) => { if (/runs (on the event loop|in a worker)/.test(msg)) notes.push(msg); } };
  logger.child = () => logger;
  return logger;
}

async function create(repo, notes) {
  return InferenceServer.create({ modelRepositories: [repo] }, { logger: placementLogger(notes) });
}

/** Closed loop: `c` callers, each sending its next request when the last one answers, for `seconds`. */
async function load(server, request, c, seconds) {
  const lat = [];
  let n = 0;
  const end = performance.now() + seconds * 1000;
  await Promise.all(Array.from({ length: c }, async () => {
    while (performance.now() < end) {
      const t = performance.now();
      await server.infer(request);
      lat.push(performance.now() - t);
      n++;
    }
  }));
  lat.sort((a, b) => a - b);
  return { throughput: n / seconds, p50: lat[Math.floor(lat.length / 2)] * 1000 };
}

const mlpInput = (rows) => ({ name: 'INPUT', datatype: 'FP32', shape: [rows, 784], data: new Uint8Array(new Float32Array(rows * 784).fill(0.01).buffer) });

// Raw onnxruntime: per-sample throughput at batch 1 and at batch 64, same session options as the servers, through
// the synchronous native run (src/backends/onnxruntime/session.ts) so no JavaScript scheduling cost is counted
// on either side of the ratio.
const session = await openSession(mlpFile, { intraOpNumThreads: 1, executionProviders: ['cpu'] });
async function rawPerSample(rows, seconds) {
  const feeds = { INPUT: new ort.Tensor('float32', new Float32Array(rows * 784).fill(0.01), [rows, 784]) };
  const fetches = ['PROBABILITIES'];
  let n = 0;
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    await session.run(feeds, fetches);
    n++;
  }
  return (n * rows) / seconds;
}

// ---- 1. gain, in process ----
const notes = [];
const batched = await create(mlpRepo('mlp_batched', 'dynamic_batching { }'), notes);
const direct = await create(mlpRepo('mlp_direct', ''), notes);
const req = { model: 'mlp', inputs: [mlpInput(1)] };
const rows = [];
for (let r = 0; r < ROUNDS; r++) {
  const one = await rawPerSample(1, SECONDS / 2);
  const many = await rawPerSample(64, SECONDS / 2);
  // Alternate which scheduler goes first, so a drift in the machine's speed does not favour one.
  let d;
  let b;
  if (r % 2 === 0) {
    d = await load(direct, req, CONCURRENCY, SECONDS);
    b = await load(batched, req, CONCURRENCY, SECONDS);
  } else {
    b = await load(batched, req, CONCURRENCY, SECONDS);
    d = await load(direct, req, CONCURRENCY, SECONDS);
  }
  const row = { raw1: one, raw64: many, rawGain: many / one, direct: d.throughput, batched: b.throughput, gain: b.throughput / d.throughput };
  row.ratio = row.gain / row.rawGain;
  rows.push(row);
  log(`round ${r + 1}: raw onnxruntime ${one.toFixed(0)} → ${many.toFixed(0)} samples/s (${row.rawGain.toFixed(2)}x); ` +
    `in-process c=${CONCURRENCY}: direct ${d.throughput.toFixed(0)}, batched ${b.throughput.toFixed(0)} req/s (${row.gain.toFixed(2)}x); ratio ${row.ratio.toFixed(2)}`);
}
const mlpStats = batched.statistics('mlp').model_stats[0];
await batched.close();
await direct.close();
await session.release();

// ---- 1b. gain over HTTP: each server in its own process, the load generator here, binary tensors ----
const header = Buffer.from(JSON.stringify({ inputs: [{ name: 'INPUT', shape: [1, 784], datatype: 'FP32', parameters: { binary_data_size: 784 * 4 } }], parameters: { binary_data_output: true } }));
const body = Buffer.concat([header, Buffer.from(new Float32Array(784).fill(0.01).buffer)]);
const bodies = [{ body, headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(header.length) }, verify: () => undefined }];
const portB = await freePort();
const httpB = await startServer('nereid batched', nereidArgs(join(work, 'mlp_batched'), portB), portB);
const portD = await freePort();
const httpD = await startServer('nereid direct', nereidArgs(join(work, 'mlp_direct'), portD), portD).catch(async (e) => {
  await httpB.stop();
  throw e;
});
const httpRows = [];
try {
  for (let r = 0; r < ROUNDS; r++) {
    const run = (s) => runLoad({ url: `${s.origin}/v2/models/mlp/infer`, bodies, concurrency: CONCURRENCY, duration: SECONDS, warmup: 0.5 });
    let d;
    let b;
    if (r % 2 === 0) {
      d = await run(httpD);
      b = await run(httpB);
    } else {
      b = await run(httpB);
      d = await run(httpD);
    }
    if (d.errors || b.errors) throw new Error(`HTTP errors: ${JSON.stringify(d.errorDetail)} ${JSON.stringify(b.errorDetail)}`);
    httpRows.push({ direct: d.throughput, batched: b.throughput, gain: b.throughput / d.throughput });
    log(`HTTP round ${r + 1}: direct ${d.throughput.toFixed(0)} req/s, batched ${b.throughput.toFixed(0)} req/s (${(b.throughput / d.throughput).toFixed(2)}x)`);
  }
} finally {
  await httpB.stop();
  await httpD.stop();
}

// ---- 2. overhead at concurrency 1 on `simple`: dynamic batcher (no delay) vs direct scheduler ----
const sBatched = await create(simpleRepo('simple_batched', 'dynamic_batching { max_queue_delay_microseconds: 0 }'), notes);
const sDirect = await create(simpleRepo('simple_direct', ''), notes);
const ints = new Uint8Array(new Int32Array(16).fill(3).buffer);
const sreq = { model: 'simple', inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: ints }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: ints }] };
await load(sDirect, sreq, 1, 0.5);
await load(sBatched, sreq, 1, 0.5);
const pairs = [];
for (let i = 0; i < OVERHEAD_PAIRS; i++) {
  const first = i % 2 === 0 ? sDirect : sBatched;
  const a = await load(first, sreq, 1, OVERHEAD_BLOCK_S);
  const b = await load(first === sDirect ? sBatched : sDirect, sreq, 1, OVERHEAD_BLOCK_S);
  const [d, x] = first === sDirect ? [a, b] : [b, a];
  pairs.push({ direct: d.p50, batcher: x.p50, ratio: x.p50 / d.p50 });
}
await sBatched.close();
await sDirect.close();
rmSync(work, { recursive: true, force: true });

const med = (k, xs = rows) => median(xs.map((x) => x[k]));
log('');
log(`== dynamic batching gain, MLP 784-512-512-10, c=${CONCURRENCY}: medians of ${ROUNDS} alternating rounds ==`);
log(`raw onnxruntime per sample: batch 1 ${med('raw1').toFixed(0)}/s, batch 64 ${med('raw64').toFixed(0)}/s: gain ${med('rawGain').toFixed(2)}x`);
log(`in process: direct ${med('direct').toFixed(0)} req/s, dynamic batching ${med('batched').toFixed(0)} req/s: gain ${med('gain').toFixed(2)}x`);
log(`over HTTP (servers in their own processes, binary tensors): direct ${med('direct', httpRows).toFixed(0)} req/s, dynamic batching ${med('batched', httpRows).toFixed(0)} req/s: gain ${med('gain', httpRows).toFixed(2)}x`);
log(`batch sizes seen in process: ${mlpStats.batch_stats.map((b) => `${b.batch_size}×${b.compute_infer.count}`).join(' ')}`);
log(`== batcher overhead, simple, c=1, max_queue_delay 0: medians of ${OVERHEAD_PAIRS} alternating ${OVERHEAD_BLOCK_S} s blocks ==`);
log(`p50 direct ${med('direct', pairs).toFixed(1)} µs, dynamic batcher ${med('batcher', pairs).toFixed(1)} µs`);
log(`placement: ${[...new Set(notes.map((n) => n.replace(/ \(.*\)$/, '')))].join('; ')}`);
const ratio = med('ratio');
const overhead = med('ratio', pairs);
log(`${ratio >= 0.8 ? 'pass' : 'FAIL'}  batching gain / raw gain ${ratio.toFixed(2)} (median of per-round ratios; goal >= 0.8)`);
log(`${overhead <= 1.05 ? 'pass' : 'FAIL'}  batcher p50 / direct p50 at c=1 ${overhead.toFixed(3)} (median of per-block ratios; goal <= 1.05)`);
