#!/usr/bin/env node
// Many models in a memory budget (issue 38), in two parts, each against in-memory serving measured in the
// same run.
//
// 1. Time to first answer of an unloaded model: a repository of N copies of Triton's `simple` (simple_0…) and
//    as many twins (twin_0…), served by `nereid serve --model-control-mode=explicit --model-load-on-demand=true`.
//    For each copy, the first infer request (which loads it) is timed against that model's own load time
//    (nv_model_load_duration_secs from the metrics port) and against a second request, served from memory.
//    Its twin is loaded through the repository API (POST /v2/repository/models/twin_i/load) and then asked once:
//    what a client doing it by hand would wait. Goal: first answer within the load time + 5 ms (medians).
// 2. A Zipf(1.1) request pattern over M models of ~10 MB (OUTPUT = Gather(W, INDEX), W a 10 MiB FP32
//    initializer, made with /usr/bin/python3 and onnx at start; copies by hard link). One fixed-seed sequence
//    of requests, sent by C concurrent clients, to (a) a server with every model preloaded and no budget, the
//    reference, and (b) a server loading on demand with --model-memory-budget for B models. Each: throughput,
//    p50/p99; for (b) the hit rate (1 - on-demand loads / requests), evictions and ratios b/a. The server's RSS
//    is sampled every 50 ms and VmHWM read at the end; goal: the peak of (b) within 1.1 x (its RSS after start
//    with nothing loaded + the budget), also shown with ONNX Runtime's start in that baseline. Every answer is
//    checked (the gathered values equal the indices).
//
//   node bench/memory-budget.mjs [--quick] [--parts 1,2] [--copies N] [--models M] [--budget-models B]
//                                [--model-mib S] [--requests R] [--clients C] [--zipf X] [--rounds K] [--out FILE]
//   npm run bench -- memory-budget --quick
//
// Prints both parts with the load average before and after, and writes every figure to
// .bench-results/memory-budget-<time>.json. Exit status 1 when a request failed. Needs the compiled dist/.

import { execFileSync } from 'node:child_process';
import { linkSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { simpleBodies } from './bodies.mjs';
import { ROOT, HOST, startServer, nereidArgs, nereidBuilt, freePort, rssKiB, killAll, commitName, median, fmt, pad, padEnd } from './servers.mjs';

const { values: a } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    copies: { type: 'string' },
    models: { type: 'string', default: '100' },
    'budget-models': { type: 'string', default: '10' },
    'model-mib': { type: 'string', default: '10' },
    requests: { type: 'string' },
    clients: { type: 'string', default: '4' },
    rounds: { type: 'string' },
    zipf: { type: 'string', default: '1.1' },
    parts: { type: 'string', default: '1,2' },
    out: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (a.help) {
  process.stdout.write('usage: node bench/memory-budget.mjs [--quick] [--parts 1,2] [--copies N] [--models M] [--budget-models B] [--model-mib S] [--requests R] [--clients C] [--zipf X] [--rounds K] [--out FILE]\nsee bench/README.md\n');
  process.exit(0);
}
const COPIES = Number(a.copies ?? (a.quick ? 8 : 20));
const MODELS = Number(a.models);
const BUDGET_MODELS = Number(a['budget-models']);
const MODEL_MIB = Number(a['model-mib']);
const REQUESTS = Number(a.requests ?? (a.quick ? 500 : 2000));
const CLIENTS = Number(a.clients);
const ROUNDS = Number(a.rounds ?? (a.quick ? 1 : 2));
const ZIPF_S = Number(a.zipf);
/** The budget allows each model its weights plus 10% (ONNX Runtime's session and arena beside them). */
const BUDGET = Math.round(BUDGET_MODELS * MODEL_MIB * 1.1 * 1024 * 1024);
const FIRST_ANSWER_GOAL_MS = 5;
const RSS_MARGIN = 1.1;
const PYTHON = '/usr/bin/python3';
const PARTS = new Set(a.parts.split(','));

if (!nereidBuilt()) throw new Error('bin/nereid.js needs the compiled dist/: run `npm run build` first');
process.on('SIGINT', () => {
  killAll();
  process.exit(130);
});
const log = (s) => process.stderr.write(s + '\n');

/** Links `from` to `to` (copies on another file system): every copy of a model shares one file on disk. */
function link(from, to) {
  try {
    linkSync(from, to);
  } catch {
    copyFileSync(from, to);
  }
}

/** A Nereid server on `repo` with its metrics port open (loopback), and `extra` flags. */
async function serve(name, repo, extra) {
  const [port, metricsPort] = [await freePort(), await freePort()];
  const args = nereidArgs(repo, port).map((x) => (x === '--allow-metrics=false' ? '--allow-metrics=true' : x));
  args.push('--metrics-port', String(metricsPort), '--metrics-address', HOST, ...extra);
  const s = await startServer(name, args, port);
  s.metricsOrigin = `http://${HOST}:${metricsPort}`;
  return s;
}

/** The samples of one metric family: [{ labels, value }]. */
async function scrape(server, family) {
  const text = await (await fetch(`${server.metricsOrigin}/metrics`)).text();
  const out = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(family + '{') && !line.startsWith(family + ' ')) continue;
    const m = /^[^{ ]+(?:\{(.*)\})? (\S+)$/.exec(line);
    const labels = Object.fromEntries([...(m[1] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    out.push({ labels, value: Number(m[2]) });
  }
  return out;
}
const sum = (samples) => samples.reduce((t, s) => t + s.value, 0);

/** The peak resident set of a process since it started (VmHWM), in KiB. */
function hwmKiB(pid) {
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
}

/**
 * Samples a process's RSS every 50 ms until stopped: the peak, and the RSS at the end of each quarter of the
 * run (a climb to the end is memory not given back; a plateau is the budget holding), in KiB.
 */
function rssSampler(pid) {
  const samples = [];
  const timer = setInterval(() => samples.push(rssKiB(pid)), 50);
  return {
    stop() {
      clearInterval(timer);
      samples.push(rssKiB(pid));
      const quarters = [1, 2, 3, 4].map((q) => samples[Math.ceil((q * samples.length) / 4) - 1]);
      return { peakKiB: Math.max(...samples), samples: samples.length, quarters };
    },
  };
}

/** One request through `pool`: { ms, status, body }. */
async function post(pool, path, body, headers = { 'content-type': 'application/json' }) {
  const t0 = performance.now();
  const res = await pool.request({ path, method: 'POST', headers, body });
  const buf = Buffer.from(await res.body.arrayBuffer());
  return { ms: performance.now() - t0, status: res.statusCode, headers: res.headers, body: buf };
}

const WARMUP_BODY = simpleBodies('json', 1)[0];
const newPool = (server, connections) => new Pool(server.origin, { connections, pipelining: 1, keepAliveTimeout: 60_000, headersTimeout: 120_000, bodyTimeout: 120_000 });

// ---------------------------------------------------------------- part 1: time to first answer

/**
 * A copy of `simple` under another name (its config renamed, model.onnx linked). The copy named WARMUP is asked
 * first in each server that loads on demand: the first ONNX model of a process also starts ONNX Runtime, a
 * one-time cost (time and some 25 MB) that no model's figure should carry; `simple` itself weighs 317 bytes.
 */
const WARMUP = 'warmup';
const SIMPLE = join(ROOT, 'examples', 'model_repository', 'simple');
function simpleCopy(dir, name) {
  mkdirSync(join(dir, name, '1'), { recursive: true });
  writeFileSync(join(dir, name, 'config.pbtxt'), readFileSync(join(SIMPLE, 'config.pbtxt'), 'utf8').replace('name: "simple"', `name: "${name}"`));
  link(join(SIMPLE, '1', 'model.onnx'), join(dir, name, '1', 'model.onnx'));
}

/** simple_0…, twin_0… and the warm-up copy. */
function simpleCopies(dir, n) {
  for (const name of [WARMUP, ...Array.from({ length: n }, (_, i) => [`simple_${i}`, `twin_${i}`]).flat()]) simpleCopy(dir, name);
}

/** When the server logged a line holding `text` (its local wall clock, to the microsecond), in epoch ms. */
function loggedAt(log, text) {
  const line = log.split('\n').findLast((l) => l.includes(text));
  const m = line && /^[IWE]\d{4} (\d\d):(\d\d):(\d\d\.\d+) /.exec(line);
  if (!m) return NaN;
  const d = new Date();
  d.setHours(Number(m[1]), Number(m[2]), 0, 0);
  return d.getTime() + Number(m[3]) * 1000;
}

/**
 * Where a first answer's time went, from the server's own log lines around the load: before the load of the
 * version began (the request's way in, reading and completing the config), the version's load as logged, and
 * after it (the request itself and its answer).
 */
function phases(log, name, sentAt, firstMs) {
  const loading = loggedAt(log, `"loading: ${name}:1"`);
  const loaded = loggedAt(log, `"successfully loaded '${name}' version 1"`);
  return { beforeMs: loading - sentAt, loggedLoadMs: loaded - loading, afterMs: sentAt + firstMs - loaded };
}

async function firstAnswer(tmp) {
  const repo = join(tmp, 'simple-copies');
  simpleCopies(repo, COPIES);
  const body = WARMUP_BODY;
  const server = await serve('on-demand simple', repo, ['--model-control-mode=explicit', '--model-load-on-demand=true']);
  const pool = newPool(server, 1);
  const infer = async (name) => {
    const r = await post(pool, `/v2/models/${name}/infer`, body.body, body.headers);
    const wrong = r.status === 200 ? body.verify(r.body, r.headers) : `status ${r.status}: ${r.body.toString().slice(0, 200)}`;
    if (wrong) throw new Error(`${name}: ${wrong}`);
    return r.ms;
  };
  const rows = [];
  try {
    await infer(WARMUP);
    for (let i = 0; i < COPIES; i++) {
      const row = { name: `simple_${i}` };
      const onDemand = async () => {
        const sentAt = performance.timeOrigin + performance.now();
        row.firstMs = await infer(`simple_${i}`);
        Object.assign(row, phases(server.log(), `simple_${i}`, sentAt, row.firstMs));
        row.warmMs = await infer(`simple_${i}`);
      };
      const byHand = async () => {
        const l = await post(pool, `/v2/repository/models/twin_${i}/load`, '{}');
        if (l.status !== 200) throw new Error(`twin_${i} load: ${l.status} ${l.body}`);
        row.explicitLoadMs = l.ms;
        row.twinFirstMs = await infer(`twin_${i}`);
      };
      // Alternate which goes first, so the machine's drift hits both alike.
      for (const step of i % 2 === 0 ? [onDemand, byHand] : [byHand, onDemand]) await step();
      rows.push(row);
    }
    const durations = await scrape(server, 'nv_model_load_duration_secs');
    for (const row of rows) {
      row.loadMs = durations.find((s) => s.labels.model === row.name).value * 1000;
      row.overMs = row.firstMs - row.loadMs;
      row.byHandMs = row.explicitLoadMs + row.twinFirstMs;
      row.overByHandMs = row.firstMs - row.byHandMs;
    }
  } finally {
    await pool.close();
    await server.stop();
  }
  const m = (k) => median(rows.map((r) => r[k]));
  return { rows, firstMs: m('firstMs'), loadMs: m('loadMs'), overMs: m('overMs'), warmMs: m('warmMs'), explicitLoadMs: m('explicitLoadMs'), byHandMs: m('byHandMs'), overByHandMs: m('overByHandMs'), beforeMs: m('beforeMs'), loggedLoadMs: m('loggedLoadMs'), afterMs: m('afterMs'), pass: m('overMs') < FIRST_ANSWER_GOAL_MS };
}

// ---------------------------------------------------------------- part 2: Zipf over a budget

const GATHER_PY = `
import sys, numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper
n = int(sys.argv[2])
w = numpy_helper.from_array(np.arange(n, dtype=np.float32), name='W')
g = helper.make_graph([helper.make_node('Gather', ['W', 'INDEX'], ['OUTPUT'], axis=0)], 'gather',
    [helper.make_tensor_value_info('INDEX', TensorProto.INT64, [4])],
    [helper.make_tensor_value_info('OUTPUT', TensorProto.FLOAT, [4])], initializer=[w])
m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)])
m.ir_version = 8
onnx.save(m, sys.argv[1])
`;

/** M model folders z000…, each Gather(W, INDEX) with W = 0, 1, 2, … (MODEL_MIB of FP32), one file linked. */
function gatherModels(dir, m) {
  const elements = (MODEL_MIB * 1024 * 1024) / 4;
  const onnx = join(dir, 'gather.onnx');
  mkdirSync(dir, { recursive: true });
  execFileSync(PYTHON, ['-c', GATHER_PY, onnx, String(elements)], { stdio: ['ignore', 'ignore', 'inherit'] });
  const repo = join(dir, 'gather-models');
  const names = Array.from({ length: m }, (_, i) => `z${String(i).padStart(3, '0')}`);
  for (const name of names) {
    mkdirSync(join(repo, name, '1'), { recursive: true });
    writeFileSync(join(repo, name, 'config.pbtxt'), `name: "${name}"
platform: "onnxruntime_onnx"
max_batch_size: 0
input [ { name: "INDEX" data_type: TYPE_INT64 dims: [ 4 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
`);
    link(onnx, join(repo, name, '1', 'model.onnx'));
  }
  simpleCopy(repo, WARMUP);
  return { repo, names, elements };
}

/**
 * The most popular models, nearly always among the last used: their requests seldom wait for their own load
 * (their evictions are counted), so their latency in (b) shows what the loads of other models cost a request
 * that finds its model loaded.
 */
const HOT = 3;

/** A small fixed-seed PRNG (mulberry32): the same sequence in every run. */
function prng(seed) {
  let t = seed >>> 0;
  return () => {
    t = (t + 0x6d2b79f5) >>> 0;
    let x = Math.imul(t ^ (t >>> 15), 1 | t);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** R requests: a model drawn by Zipf(s) over the names (rank 1 = the first), and 4 indices into its W. */
function zipfSequence(names, n, s, elements) {
  const rand = prng(38);
  const cdf = [];
  let total = 0;
  for (let k = 1; k <= names.length; k++) cdf.push((total += 1 / k ** s));
  return Array.from({ length: n }, () => {
    const u = rand() * total;
    let lo = 0;
    let hi = cdf.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    const index = Array.from({ length: 4 }, () => Math.floor(rand() * elements));
    const body = Buffer.from(JSON.stringify({ inputs: [{ name: 'INDEX', datatype: 'INT64', shape: [4], data: index }] }));
    return { path: `/v2/models/${names[lo]}/infer`, body, index, hot: lo < HOT };
  });
}

/**
 * The hit rate an exact LRU cache of `capacity` models would have on the sequence, requests taken one at a time:
 * what the budget's eviction order is held against (concurrent clients and loads shift it a little).
 */
function lruHitRate(sequence, capacity) {
  const lru = new Map();
  let hits = 0;
  for (const { path } of sequence) {
    if (lru.delete(path)) hits++;
    else if (lru.size >= capacity) lru.delete(lru.keys().next().value);
    lru.set(path, true);
  }
  return hits / sequence.length;
}

/** Whether a response holds W[index] for each index (W[i] = i). */
function wrongAnswer(r, index) {
  if (r.status !== 200) return `status ${r.status}: ${r.body.toString().slice(0, 200)}`;
  const out = JSON.parse(r.body.toString()).outputs?.[0]?.data;
  if (!Array.isArray(out) || out.length !== 4 || out.some((v, i) => v !== index[i])) return `wrong values ${JSON.stringify(out)} for ${JSON.stringify(index)}`;
  return null;
}

/** Sends the whole sequence with CLIENTS clients, each taking the next request when its last is answered. */
async function play(server, sequence) {
  const pool = newPool(server, CLIENTS);
  const lat = new Float64Array(sequence.length);
  const failures = { count: 0, samples: [] };
  let next = 0;
  const client = async () => {
    while (next < sequence.length) {
      const i = next++;
      const q = sequence[i];
      let wrong;
      try {
        const r = await post(pool, q.path, q.body);
        lat[i] = r.ms;
        wrong = wrongAnswer(r, q.index);
      } catch (e) {
        wrong = `network: ${e.message}`;
      }
      if (wrong) {
        failures.count++;
        if (failures.samples.length < 5) failures.samples.push(`${q.path}: ${wrong}`);
      }
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CLIENTS }, client));
  const seconds = (performance.now() - t0) / 1000;
  await pool.close();
  const all = percentiles(Array.from(lat));
  const hot = percentiles(sequence.flatMap((q, i) => (q.hot ? [lat[i]] : [])));
  return { requests: sequence.length, seconds, throughput: sequence.length / seconds, ...all, hotP50: hot.p50, hotP99: hot.p99, failures };
}

function percentiles(xs) {
  const sorted = xs.sort((x, y) => x - y);
  const pct = (p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
  return { p50: pct(0.5), p99: pct(0.99), max: sorted.at(-1) };
}

/** One run of the sequence on a fresh server: `budget` undefined is the reference, every model preloaded. */
async function zipfRun(repo, sequence, budget) {
  const extra = budget === undefined
    ? ['--model-control-mode=explicit', '--load-model=*']
    : ['--model-control-mode=explicit', '--model-load-on-demand=true', `--model-memory-budget=${budget}`];
  const server = await serve(budget === undefined ? 'preloaded' : 'budget', repo, extra);
  try {
    await sleep(1000); // let start-up garbage settle before the baseline
    const baselineKiB = rssKiB(server.pid);
    const pool = newPool(server, 1);
    const warm = await post(pool, `/v2/models/${WARMUP}/infer`, WARMUP_BODY.body, WARMUP_BODY.headers);
    await pool.close();
    if (warm.status !== 200) throw new Error(`${WARMUP}: status ${warm.status}`);
    const runtimeBaselineKiB = rssKiB(server.pid);
    const sampler = rssSampler(server.pid);
    const r = await play(server, sequence);
    const { peakKiB, samples, quarters } = sampler.stop();
    const hwm = hwmKiB(server.pid);
    r.baselineKiB = baselineKiB;
    r.runtimeBaselineKiB = runtimeBaselineKiB;
    r.peakKiB = peakKiB;
    r.rssQuartersKiB = quarters;
    r.hwmKiB = hwm;
    r.rssSamples = samples;
    const ours = (samples) => samples.filter((x) => x.labels.model !== WARMUP);
    r.onDemandLoads = sum(ours(await scrape(server, 'nereid_model_load_on_demand_count')));
    const evictions = ours(await scrape(server, 'nereid_model_eviction_count'));
    r.evictions = sum(evictions);
    r.evictionsByModel = Object.fromEntries(evictions.map((e) => [e.labels.model, e.value]));
    r.hotEvictions = sum(evictions.filter((e) => sequence.some((q) => q.hot && q.path === `/v2/models/${e.labels.model}/infer`)));
    const memory = ours(await scrape(server, 'nereid_model_memory_bytes'));
    r.loadedAtEnd = memory.length;
    r.modelMemoryMedian = median(memory.map((s) => s.value));
    r.modelMemoryBytes = memory.map((s) => s.value);
    if (budget !== undefined) {
      r.budget = budget;
      r.hitRate = 1 - r.onDemandLoads / r.requests;
      r.lruCapacity = Math.floor(budget / r.modelMemoryMedian);
      r.lruHitRate = lruHitRate(sequence, r.lruCapacity);
      r.rssGoalKiB = (baselineKiB + budget / 1024) * RSS_MARGIN;
      r.rssPass = Math.max(r.peakKiB, hwm) <= r.rssGoalKiB;
      r.runtimeRssGoalKiB = (runtimeBaselineKiB + budget / 1024) * RSS_MARGIN;
      r.runtimeRssPass = Math.max(r.peakKiB, hwm) <= r.runtimeRssGoalKiB;
    }
    return r;
  } finally {
    await server.stop();
  }
}

async function zipf(tmp) {
  const { repo, names, elements } = gatherModels(join(tmp, 'gather'), MODELS);
  const sequence = zipfSequence(names, REQUESTS, ZIPF_S, elements);
  const distinct = new Set(sequence.map((q) => q.path)).size;
  const runs = { preloaded: [], budget: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? ['preloaded', 'budget'] : ['budget', 'preloaded'];
    for (const side of order) {
      log(`  round ${round + 1}: ${side}…`);
      runs[side].push(await zipfRun(repo, sequence, side === 'budget' ? BUDGET : undefined));
    }
  }
  return { distinct, runs };
}

// ---------------------------------------------------------------- main

const tmp = mkdtempSync(join(tmpdir(), 'nereid-bench-memory-'));
const results = { commit: commitName(), cpus: cpus().length, load: [loadavg()[0]], copies: COPIES, models: MODELS, modelMiB: MODEL_MIB, budgetModels: BUDGET_MODELS, budget: BUDGET, requests: REQUESTS, clients: CLIENTS, rounds: ROUNDS, zipfExponent: ZIPF_S };
let failed = 0;
try {
  log(`${results.cpus} CPUs, node ${process.version}, commit ${results.commit}`);
  if (PARTS.has('1')) {
    log(`part 1: ${COPIES} copies of simple…`);
    results.first = await firstAnswer(tmp);
    results.load.push(loadavg()[0]);
  }
  if (PARTS.has('2')) {
    log(`part 2: ${MODELS} models of ${MODEL_MIB} MiB, ${REQUESTS} requests, Zipf(${ZIPF_S}), ${CLIENTS} clients, ${ROUNDS} round(s)…`);
    results.zipf = await zipf(tmp);
    results.load.push(loadavg()[0]);
  }
} finally {
  killAll();
  rmSync(tmp, { recursive: true, force: true });
}

const mib = (kib) => fmt(kib / 1024, 1);

function printFirst(f) {
  console.log(`\n1. first answer of an unloaded model (${COPIES} copies of simple, on demand; medians, ms)`);
  console.log(`   first answer ${fmt(f.firstMs, 2)}, its load (nv_model_load_duration_secs) ${fmt(f.loadMs, 2)}, first answer - load ${fmt(f.overMs, 2)}`);
  console.log(`   from the server's log: before the version's load ${fmt(f.beforeMs, 2)}, the load ${fmt(f.loggedLoadMs, 2)}, after it ${fmt(f.afterMs, 2)}`);
  console.log(`   in memory (its second request) ${fmt(f.warmMs, 2)}`);
  console.log(`   by hand (twin): load through the repository API ${fmt(f.explicitLoadMs, 2)} + first request = ${fmt(f.byHandMs, 2)}; first answer - by hand ${fmt(f.overByHandMs, 2)}, ratio ${fmt(f.firstMs / f.byHandMs, 2)}`);
  console.log(`   goal: first answer within load + ${FIRST_ANSWER_GOAL_MS} ms, the load as nv_model_load_duration_secs: +${fmt(f.overMs, 2)} ms ${f.pass ? 'pass' : 'FAIL'}`);
  console.log(`         the load as its twin's load through the repository API and first request: ${fmt(f.overByHandMs, 2)} ms ${f.overByHandMs < FIRST_ANSWER_GOAL_MS ? 'pass' : 'FAIL'}`);
}

function printZipf(z) {
  const m = (side, k) => median(z.runs[side].map((r) => r[k]));
  console.log(`\n2. Zipf(${ZIPF_S}) over ${MODELS} models of ${MODEL_MIB} MiB (${z.distinct} asked for), ${REQUESTS} requests, ${CLIENTS} clients, budget ${fmt(BUDGET / 1048576, 1)} MiB (${BUDGET_MODELS} models); medians of ${ROUNDS} round(s)`);
  console.log(`${padEnd('   side', 26)}${pad('req/s', 8)}${pad('p50 ms', 9)}${pad('p99 ms', 9)}${pad('hit rate', 10)}${pad('loads', 7)}${pad('evictions', 11)}${pad('base MiB', 10)}${pad('peak MiB', 10)}${pad('HWM MiB', 9)}`);
  for (const side of ['preloaded', 'budget']) {
    const hit = side === 'budget' ? fmt(m(side, 'hitRate') * 100, 1) + '%' : '-';
    const name = side === 'budget' ? '(b) on demand, budget' : '(a) all preloaded';
    console.log(`${padEnd(`   ${name}`, 26)}${pad(fmt(m(side, 'throughput')), 8)}${pad(fmt(m(side, 'p50'), 2), 9)}${pad(fmt(m(side, 'p99'), 1), 9)}${pad(hit, 10)}${pad(fmt(m(side, 'onDemandLoads')), 7)}${pad(fmt(m(side, 'evictions')), 11)}${pad(mib(m(side, 'baselineKiB')), 10)}${pad(mib(m(side, 'peakKiB')), 10)}${pad(mib(m(side, 'hwmKiB')), 9)}`);
  }
  const perModelKiB = (m('preloaded', 'baselineKiB') - m('budget', 'runtimeBaselineKiB')) / MODELS;
  console.log(`   hit rate of an exact LRU of ${fmt(m('budget', 'lruCapacity'))} models (budget / measured memory per model) on the same sequence, one request at a time: ${fmt(m('budget', 'lruHitRate') * 100, 1)}%`);
  console.log(`   requests to the ${HOT} most popular models (evicted ${fmt(m('budget', 'hotEvictions'))} times in (b)): p50 ${fmt(m('preloaded', 'hotP50'), 2)} / ${fmt(m('budget', 'hotP50'), 2)} ms, p99 ${fmt(m('preloaded', 'hotP99'), 1)} / ${fmt(m('budget', 'hotP99'), 1)} ms (a / b)`);
  console.log(`   ratios b/a: throughput ${fmt(m('budget', 'throughput') / m('preloaded', 'throughput'), 3)}, p50 ${fmt(m('budget', 'p50') / m('preloaded', 'p50'), 2)}, p99 ${fmt(m('budget', 'p99') / m('preloaded', 'p99'), 2)}`);
  console.log(`   memory per model (nereid_model_memory_bytes, median): preloaded ${mib(m('preloaded', 'modelMemoryMedian') / 1024)} MiB, budget ${mib(m('budget', 'modelMemoryMedian') / 1024)} MiB; loaded at the end under the budget: ${fmt(m('budget', 'loadedAtEnd'))}`);
  console.log(`   RSS per preloaded model ((a) baseline - (b) baseline with ONNX Runtime started) / ${MODELS}: ${mib(perModelKiB)} MiB`);
  for (const [i, r] of z.runs.budget.entries()) {
    console.log(`   (b) round ${i + 1}: RSS at each quarter of the run ${r.rssQuartersKiB.map(mib).join(', ')} MiB`);
    console.log(`   goal round ${i + 1}: peak RSS ${mib(Math.max(r.peakKiB, r.hwmKiB))} MiB (VmHWM ${mib(r.hwmKiB)}) within 1.1 x (baseline ${mib(r.baselineKiB)} + budget ${mib(r.budget / 1024)}) = ${mib(r.rssGoalKiB)} MiB: ${r.rssPass ? 'pass' : 'FAIL'}`);
    console.log(`      with ONNX Runtime started in the baseline (${mib(r.runtimeBaselineKiB)} MiB after the warm-up copy of simple): within ${mib(r.runtimeRssGoalKiB)} MiB: ${r.runtimeRssPass ? 'pass' : 'FAIL'}`);
  }
  let failed = 0;
  for (const side of ['preloaded', 'budget']) {
    for (const r of z.runs[side]) {
      failed += r.failures.count;
      if (r.failures.count > 0) console.log(`   ${side}: ${r.failures.count} failed requests, e.g. ${r.failures.samples.join('; ')}`);
    }
  }
  console.log(`   failed requests: ${failed}`);
  return failed;
}

console.log(`\n# memory budget (${results.commit}), ${results.cpus} cores, load average ${results.load.map((x) => x.toFixed(2)).join(' → ')}`);
if (results.first) printFirst(results.first);
if (results.zipf) failed += printZipf(results.zipf);

const out = a.out ?? join(ROOT, '.bench-results', `memory-budget-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
mkdirSync(join(out, '..'), { recursive: true });
writeFileSync(out, JSON.stringify(results, null, 1));
console.log(`results: ${out}`);
process.exitCode = failed > 0 ? 1 : 0;
