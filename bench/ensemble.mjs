#!/usr/bin/env node
// Ensemble overhead: a 3-step ensemble (simple → simple → simple) against the same three models called one
// after another through the in-process API, as a paired difference: each iteration runs both, in alternating
// order, and the median of (ensemble − sequential) / 3 is the cost added per step. Goal: ≤ 30 µs.
// Usage: npx tsc -p . && node bench/ensemble.mjs [--quick]
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InferenceServer } from '../dist/src/index.js';
import { createLogger } from '../dist/src/observability/logger.js';
import { writeChain3 } from './servers.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const N = process.argv.includes('--quick') ? 3000 : 20000;
const dir = mkdtempSync(join(tmpdir(), 'nereid-bench-ensemble-'));
cpSync(join(ROOT, 'examples/model_repository/simple'), join(dir, 'simple'), { recursive: true });
writeChain3(dir);
const logger = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
const server = await InferenceServer.create({ modelRepositories: [dir] }, { logger });
const ints = (v) => new Uint8Array(new Int32Array(16).fill(v).buffer);
const ensemble = () => server.infer({ model: 'chain3', inputs: [{ name: 'A', datatype: 'INT32', shape: [1, 16], data: ints(3) }, { name: 'B', datatype: 'INT32', shape: [1, 16], data: ints(1) }] });
async function sequential() {
  let a = { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: ints(3) };
  let b = { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: ints(1) };
  let r;
  for (let i = 0; i < 3; i++) {
    r = await server.infer({ model: 'simple', inputs: [a, b] });
    a = { ...r.outputs[0], name: 'INPUT0' };
    b = { ...r.outputs[1], name: 'INPUT1' };
  }
  return r;
}
// Same answer both ways: X = 4·A, Y = 4·B after three add/sub steps.
const e = await ensemble();
const s = await sequential();
if (Buffer.compare(Buffer.from(e.outputs[0].data), Buffer.from(s.outputs[0].data)) !== 0) throw new Error('ensemble and sequential calls disagree');
for (let i = 0; i < 500; i++) { await ensemble(); await sequential(); }
const diffs = [];
const ens = [];
const seq = [];
for (let i = 0; i < N; i++) {
  const first = i % 2 === 0;
  let t = performance.now();
  if (first) await ensemble(); else await sequential();
  const a = performance.now() - t;
  t = performance.now();
  if (first) await sequential(); else await ensemble();
  const b = performance.now() - t;
  const te = first ? a : b;
  const ts = first ? b : a;
  ens.push(te);
  seq.push(ts);
  diffs.push((te - ts) / 3);
}
await server.close();
rmSync(dir, { recursive: true, force: true });
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const us = (ms) => (ms * 1000).toFixed(1);
console.log(`== 3-step ensemble vs three calls, in-process, ${N} paired iterations ==`);
console.log(`p50 ensemble ${us(median(ens))} µs, p50 three calls ${us(median(seq))} µs`);
const added = median(diffs) * 1000;
console.log(`${added <= 30 ? 'pass' : 'FAIL'}  added per step (median paired difference / 3): ${added.toFixed(1)} µs (goal <= 30)`);
