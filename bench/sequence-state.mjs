#!/usr/bin/env node
// Sequence state in Redis (--sequence-state-store) against sequence state in the process: the cost of one
// sequence step through the in-process API on the bundled `sequence_accumulator` (implicit state, ONNX Runtime),
// for two servers in this process, one with the store (a real redis-server started here on a free loopback
// port) and one without. Concurrency 1: each iteration runs one step on each server, in rotating order, and
// the medians are compared. Concurrency 8: eight sequences at once on one server, then on the other, in
// alternating rounds; steps per second compared. A step with the store reads the sequence (one round trip) and
// commits it by compare-and-set (a second one) before its reply goes out. The load average is printed with the
// figures, since the machine may be shared.
// Usage: ./node_modules/.bin/tsc -p . && node bench/sequence-state.mjs [--quick]
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, median, startRedis } from './servers.mjs';
import { InferenceServer } from '../dist/src/index.js';
import { createLogger } from '../dist/src/observability/logger.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const QUICK = process.argv.includes('--quick');
const STEPS = QUICK ? 1000 : 5000;
const ROUNDS = QUICK ? 2 : 5;
const ROUND_MS = QUICK ? 1000 : 3000;
const SEQ_LEN = 16;

if (spawnSync('redis-server', ['--version']).error) {
  console.log('skipped: redis-server is not installed (Debian package redis-server)');
  process.exit(0);
}

const us = (ms) => `${(ms * 1000).toFixed(1)} µs`;
const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');

/** Sequence `id`'s step `i` (START at 0, END at the last): a step the store may replay, so it carries an id. */
function step(id, i) {
  return {
    model: 'sequence_accumulator', id: `${id}-${i}`, sequenceId: id, sequenceStart: i === 0, sequenceEnd: i === SEQ_LEN - 1,
    inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1], data: new Uint8Array(new Int32Array([1]).buffer) }],
  };
}

/** Steps sequence after sequence on one server; `next()` times one more step. */
function stepper(server, base) {
  let seq = base;
  let i = 0;
  return async () => {
    const t = performance.now();
    const r = await server.infer(step(seq, i));
    const ms = performance.now() - t;
    const sum = new Int32Array(r.outputs[0].data.slice().buffer)[0];
    if (sum !== i + 1) throw new Error(`sequence ${seq} step ${i}: sum ${sum}, expected ${i + 1}`);
    if (++i === SEQ_LEN) {
      i = 0;
      seq++;
    }
    return ms;
  };
}

/** Steps per second with `n` sequences stepping at once for `ms`. */
async function throughput(server, base, n, ms) {
  let steps = 0;
  const end = performance.now() + ms;
  await Promise.all(Array.from({ length: n }, async (_, k) => {
    const next = stepper(server, base + k * 1_000_000);
    while (performance.now() < end) {
      await next();
      steps++;
    }
  }));
  return steps / (ms / 1000);
}

const logger = createLogger({ info: false, warning: true, error: true, verbose: 0, format: 'default', file: '' });
const port = await freePort();
const redis = await startRedis(port);
const options = { modelRepositories: [join(ROOT, 'examples/model_repository')], modelControlMode: 'explicit', loadModels: ['sequence_accumulator'] };
const local = await InferenceServer.create(options, { logger });
const shared = await InferenceServer.create({ ...options, sequenceStateStore: `redis://127.0.0.1:${port}` }, { logger });
try {
  console.log(`== sequence state: Redis (--sequence-state-store) vs in-process, sequence_accumulator, in-process API ==`);
  console.log(`load average before: ${load()}`);
  const sides = [['in-process', stepper(local, 1)], ['redis', stepper(shared, 1)]];
  for (let i = 0; i < 300; i++) for (const [, next] of sides) await next();
  const times = { 'in-process': [], redis: [] };
  for (let i = 0; i < STEPS; i++) {
    for (let k = 0; k < 2; k++) {
      const [name, next] = sides[(i + k) % 2];
      times[name].push(await next());
    }
  }
  const [a, b] = [median(times['in-process']), median(times.redis)];
  console.log(`concurrency 1, ${STEPS} steps each: p50 in-process ${us(a)}   redis ${us(b)}   redis/in-process ${(b / a).toFixed(2)}×   (+${us(b - a)} per step)`);
  const rates = { 'in-process': [], redis: [] };
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? [['in-process', local], ['redis', shared]] : [['redis', shared], ['in-process', local]];
    for (const [name, server] of order) rates[name].push(await throughput(server, 10_000_000 * (r + 2), 8, ROUND_MS));
  }
  const [ra, rb] = [median(rates['in-process']), median(rates.redis)];
  console.log(`concurrency 8 (8 sequences at once), ${ROUNDS} rounds of ${ROUND_MS} ms: median in-process ${ra.toFixed(0)} steps/s   redis ${rb.toFixed(0)} steps/s   in-process/redis ${(ra / rb).toFixed(2)}×`);
  console.log(`load average after: ${load()}`);
} finally {
  await local.close();
  await shared.close();
  redis.kill();
}
