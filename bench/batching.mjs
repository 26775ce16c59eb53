#!/usr/bin/env node
// Dynamic batching benchmarks (issue: scheduling), each side by side in one run, medians of alternating rounds:
//  1. gain: an MLP 784-512-512-10 at concurrency 64 through the in-process API, dynamic batching vs none,
//     beside raw onnxruntime's own per-sample gain from batch 1 to batch 64 on the same model;
//  2. overhead: `simple` at concurrency 1 with max_queue_delay 0, the dynamic batcher vs the direct scheduler.
// Usage: npx tsc -p . && node bench/batching.mjs [--quick]
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { InferenceServer } from '../dist/src/index.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const quick = process.argv.includes('--quick');
const ROUNDS = quick ? 2 : 5;
const SECONDS = quick ? 1 : 3;
const CONCURRENCY = 64;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const log = (s) => process.stdout.write(`${s}\n`);

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
  if (batching) writeFileSync(join(dir, 'simple', 'config.pbtxt'), `${execFileSync('cat', [join(dir, 'simple', 'config.pbtxt')], { encoding: 'utf8' })}\n${batching}\n`);
  return dir;
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

// 1. Raw onnxruntime: per-sample throughput at batch 1 and at batch 64, same session options as the servers,
// through the synchronous native run (src/backends/onnxruntime/session.ts) so no JavaScript scheduling cost
// is counted on either side of the ratio.
const { openSession } = await import('../dist/src/backends/onnxruntime/session.js');
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

const rawGains = [];
for (let r = 0; r < ROUNDS; r++) {
  const one = await rawPerSample(1, SECONDS / 2);
  const many = await rawPerSample(64, SECONDS / 2);
  rawGains.push(many / one);
  log(`raw onnxruntime round ${r + 1}: batch 1 ${one.toFixed(0)} samples/s, batch 64 ${many.toFixed(0)} samples/s, gain ${(many / one).toFixed(2)}x`);
}
await session.release();

const quiet = { info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' };
const { createLogger } = await import('../dist/src/observability/logger.js');
const logger = createLogger(quiet);
const batched = await InferenceServer.create({ modelRepositories: [mlpRepo('mlp_batched', 'dynamic_batching { }')] }, { logger });
const direct = await InferenceServer.create({ modelRepositories: [mlpRepo('mlp_direct', '')] }, { logger });
const req = { model: 'mlp', inputs: [mlpInput(1)] };
const gains = [];
const thrB = [];
const thrD = [];
for (let r = 0; r < ROUNDS; r++) {
  const d = await load(direct, req, CONCURRENCY, SECONDS);
  const b = await load(batched, req, CONCURRENCY, SECONDS);
  thrB.push(b.throughput);
  thrD.push(d.throughput);
  gains.push(b.throughput / d.throughput);
  log(`mlp c=${CONCURRENCY} round ${r + 1}: direct ${d.throughput.toFixed(0)} req/s, dynamic batching ${b.throughput.toFixed(0)} req/s, gain ${(b.throughput / d.throughput).toFixed(2)}x`);
}
const mlpStats = batched.statistics('mlp').model_stats[0];

// The same over HTTP: the load generator in this process, binary tensors, 64 connections.
const { startHttpFrontend } = await import('../dist/src/frontends/http/server.js');
const { runLoad } = await import('./loadgen.mjs');
const httpB = await startHttpFrontend(batched, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 26 }, logger);
const httpD = await startHttpFrontend(direct, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 26 }, logger);
const header = Buffer.from(JSON.stringify({ inputs: [{ name: 'INPUT', shape: [1, 784], datatype: 'FP32', parameters: { binary_data_size: 784 * 4 } }], parameters: { binary_data_output: true } }));
const body = Buffer.concat([header, Buffer.from(new Float32Array(784).fill(0.01).buffer)]);
const bodies = [{ body, headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(header.length) }, verify: () => undefined }];
const httpGains = [];
for (let r = 0; r < ROUNDS; r++) {
  const d = await runLoad({ url: `http://127.0.0.1:${httpD.port}/v2/models/mlp/infer`, bodies, concurrency: CONCURRENCY, duration: SECONDS, warmup: 0.5 });
  const b = await runLoad({ url: `http://127.0.0.1:${httpB.port}/v2/models/mlp/infer`, bodies, concurrency: CONCURRENCY, duration: SECONDS, warmup: 0.5 });
  httpGains.push(b.throughput / d.throughput);
  log(`mlp HTTP c=${CONCURRENCY} round ${r + 1}: direct ${d.throughput.toFixed(0)} req/s, dynamic batching ${b.throughput.toFixed(0)} req/s, gain ${(b.throughput / d.throughput).toFixed(2)}x`);
}
await httpB.close();
await httpD.close();
await batched.close();
await direct.close();

// 2. Overhead at concurrency 1 on `simple`: dynamic batcher (no delay) vs direct scheduler.
const sBatched = await InferenceServer.create({ modelRepositories: [simpleRepo('simple_batched', 'dynamic_batching { max_queue_delay_microseconds: 0 }')] }, { logger });
const sDirect = await InferenceServer.create({ modelRepositories: [simpleRepo('simple_direct', '')] }, { logger });
const ints = new Uint8Array(new Int32Array(16).fill(3).buffer);
const sreq = { model: 'simple', inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: ints }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: ints }] };
const ratios = [];
for (let r = 0; r < ROUNDS; r++) {
  const d = await load(sDirect, sreq, 1, SECONDS);
  const b = await load(sBatched, sreq, 1, SECONDS);
  ratios.push(b.p50 / d.p50);
  log(`simple c=1 round ${r + 1}: direct p50 ${d.p50.toFixed(1)} µs, dynamic batcher p50 ${b.p50.toFixed(1)} µs, ratio ${(b.p50 / d.p50).toFixed(3)}`);
}
await sBatched.close();
await sDirect.close();
rmSync(work, { recursive: true, force: true });

const rawGain = median(rawGains);
const gain = median(gains);
log('');
log(`== dynamic batching, MLP 784-512-512-10, c=${CONCURRENCY}, in-process: medians of ${ROUNDS} alternating rounds ==`);
log(`direct ${median(thrD).toFixed(0)} req/s, batched ${median(thrB).toFixed(0)} req/s: gain ${gain.toFixed(2)}x; raw onnxruntime batch 64 vs 1 per sample: ${rawGain.toFixed(2)}x`);
log(`over HTTP (binary tensors, load generator in the same process): gain ${median(httpGains).toFixed(2)}x`);
log(`batch sizes seen: ${mlpStats.batch_stats.map((b) => `${b.batch_size}×${b.compute_infer.count}`).join(' ')}`);
log(`${gain / rawGain >= 0.8 ? 'pass' : 'FAIL'}  batching gain / raw gain ${(gain / rawGain).toFixed(2)} (goal >= 0.8)`);
log(`${median(ratios) <= 1.05 ? 'pass' : 'FAIL'}  batcher p50 / direct p50 at c=1 ${median(ratios).toFixed(3)} (goal <= 1.05)`);
