#!/usr/bin/env node
// Response cache: hit vs miss latency through the in-process API, for the local cache and for Redis (a real
// redis-server started here on a free loopback port), on the compute-bound MLP of bench/batching.mjs
// (784→512→512→10, batch 1) and on the tiny `simple` model. Each iteration sends, in alternating order, a request
// that misses (fresh input bytes) and one that hits (the previous iteration's input), beside the same requests to
// an uncached copy of the model; medians and ratios are taken over the same run.
// Usage: ./node_modules/.bin/tsc -p . && node bench/cache.mjs [--quick]
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, median, startRedis } from './servers.mjs';
import { InferenceServer } from '../dist/src/index.js';
import { createLogger } from '../dist/src/observability/logger.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const N = process.argv.includes('--quick') ? 1000 : 5000;
const work = mkdtempSync(join(tmpdir(), 'nereid-bench-cache-'));
execFileSync('/usr/bin/python3', [join(ROOT, 'scripts/models/make_bench_models.py'), '--out', work], { stdio: 'ignore' });

function repository() {
  const dir = join(work, 'repo');
  for (const [name, cached] of [['mlp', true], ['mlp_nocache', false]]) {
    mkdirSync(join(dir, name, '1'), { recursive: true });
    cpSync(join(work, 'mlp.onnx'), join(dir, name, '1', 'model.onnx'));
    writeFileSync(join(dir, name, 'config.pbtxt'), `name: "${name}"
backend: "onnxruntime"
max_batch_size: 64
input [ { name: "INPUT" data_type: TYPE_FP32 dims: [ 784 ] } ]
output [ { name: "PROBABILITIES" data_type: TYPE_FP32 dims: [ 10 ] } ]
parameters { key: "intra_op_thread_count" value { string_value: "1" } }
${cached ? 'response_cache { enable: true }' : ''}
`);
  }
  for (const [name, cached] of [['simple', true], ['simple_nocache', false]]) {
    cpSync(join(ROOT, 'examples/model_repository/simple'), join(dir, name), { recursive: true });
    const p = join(dir, name, 'config.pbtxt');
    const text = readFileSync(p, 'utf8').replace(/^name:.*$/m, `name: "${name}"`);
    writeFileSync(p, cached ? `${text}\nresponse_cache { enable: true }\n` : text);
  }
  return dir;
}

const us = (ms) => `${(ms * 1000).toFixed(1)} µs`;

/** A request whose input bytes are unique to `seed`. */
function request(model, seed) {
  if (model.startsWith('simple')) {
    const a = new Int32Array(16).fill(seed);
    const b = new Int32Array(16).fill(1);
    return { model, inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: new Uint8Array(a.buffer) },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: new Uint8Array(b.buffer) }] };
  }
  const x = new Float32Array(784).fill(0.001);
  x[0] = seed;
  return { model, inputs: [{ name: 'INPUT', datatype: 'FP32', shape: [1, 784], data: new Uint8Array(x.buffer) }] };
}

async function time(server, req) {
  const t = performance.now();
  await server.infer(req);
  return performance.now() - t;
}

/** Per iteration, in rotating order: a miss, a hit and the same fresh input on the uncached model. */
async function measure(server, model, label) {
  const miss = [];
  const hit = [];
  const none = [];
  let seed = 1e6 * Math.random();
  for (let i = 0; i < 300; i++) await server.infer(request(model, seed++));
  for (let i = 0; i < N; i++) {
    const fresh = seed++;
    const runs = [
      async () => miss.push(await time(server, request(model, fresh))),
      async () => hit.push(await time(server, request(model, fresh - 1))),
      async () => none.push(await time(server, request(`${model}_nocache`, fresh))),
    ];
    for (let k = 0; k < 3; k++) await runs[(i + k) % 3]();
  }
  const [h, m, n] = [median(hit), median(miss), median(none)];
  console.log(`${label.padEnd(14)} p50 hit ${us(h).padStart(10)}   miss ${us(m).padStart(10)}   uncached ${us(n).padStart(10)}   miss/hit ${(m / h).toFixed(2)}×   miss/uncached ${(m / n).toFixed(3)}`);
}

const logger = createLogger({ info: false, warning: true, error: true, verbose: 0, format: 'default', file: '' });
const repo = repository();
console.log(`== response cache, in-process API, ${N} iterations per row (medians) ==`);
{
  const server = await InferenceServer.create({ modelRepositories: [repo], responseCache: { local: { size: String(256 << 20) } } }, { logger });
  await measure(server, 'mlp', 'local  mlp');
  await measure(server, 'simple', 'local  simple');
  await server.close();
}
if (spawnSync('redis-server', ['--version']).error) {
  console.log('redis: skipped (redis-server is not installed; Debian package redis-server)');
} else {
  const port = await freePort();
  const redis = await startRedis(port);
  try {
    const server = await InferenceServer.create({ modelRepositories: [repo], responseCache: { redis: { host: '127.0.0.1', port: String(port) } } }, { logger });
    await measure(server, 'mlp', 'redis  mlp');
    await measure(server, 'simple', 'redis  simple');
    await server.close();
  } finally {
    redis.kill();
  }
}
rmSync(work, { recursive: true, force: true });
