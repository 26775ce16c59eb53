#!/usr/bin/env node
// The repository index of a large repository: a temporary repository of N model folders (default 5,000), each
// `simple`'s config.pbtxt under the folder's name and 1/model.onnx hard-linked to the bundled one, served by
// `nereid serve --model-control-mode=explicit` (nothing loads). Per start it takes the time to ready, the first
// index call, then the medians of --calls calls of POST /v2/repository/index and of the gRPC RepositoryIndex
// (each timed until the whole answer has arrived; the answer is decoded afterwards and must list every model).
//
// References in the same run: the same server on a repository of one model (what an index call costs whatever
// the repository), so the difference over N is the cost per model; and one readdir of the large repository
// in this process, the floor for any listing of it. Starts alternate between the two servers.
// Goal: the index (HTTP and gRPC medians) under 1 s for 5,000 models.
//
//   node bench/repository-index.mjs [--models N] [--calls N] [--starts N] [--out FILE]
//   npm run bench -- repository-index
//
// Needs the compiled dist/ (npm run build).

import { copyFileSync, linkSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir, cpus } from 'node:os';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { ROOT, HOST, startServer, nereidArgs, nereidBuilt, freePort, killAll, commitName, median, fmt, pad, padEnd } from './servers.mjs';

const { values: a } = parseArgs({
  options: {
    models: { type: 'string', default: '5000' },
    calls: { type: 'string', default: '15' },
    starts: { type: 'string', default: '3' },
    out: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (a.help) {
  process.stdout.write('usage: node bench/repository-index.mjs [--models N] [--calls N] [--starts N] [--out FILE]\nsee bench/README.md\n');
  process.exit(0);
}
const MODELS = Number(a.models);
const CALLS = Number(a.calls);
const STARTS = Number(a.starts);
const GOAL_MS = 1000;
const SIMPLE = join(ROOT, 'examples', 'model_repository', 'simple');
const INDEX_PATH = '/inference.GRPCInferenceService/RepositoryIndex';

const protoRoot = new protobuf.Root().loadSync(join(ROOT, 'proto', 'grpc_service.proto'), { keepCase: true });
const IndexRequest = protoRoot.lookupType('inference.RepositoryIndexRequest');
const IndexResponse = protoRoot.lookupType('inference.RepositoryIndexResponse');

const log = (s) => process.stderr.write(s + '\n');

/** N model folders named m00000…, each simple's config under its own name and the model file hard-linked. */
function makeRepository(dir, n) {
  mkdirSync(dir, { recursive: true });
  const config = readFileSync(join(SIMPLE, 'config.pbtxt'), 'utf8');
  const onnx = join(SIMPLE, '1', 'model.onnx');
  const names = Array.from({ length: n }, (_, i) => `m${String(i).padStart(5, '0')}`);
  for (const name of names) {
    mkdirSync(join(dir, name, '1'), { recursive: true });
    writeFileSync(join(dir, name, 'config.pbtxt'), config.replace('name: "simple"', `name: "${name}"`));
    try {
      linkSync(onnx, join(dir, name, '1', 'model.onnx'));
    } catch {
      copyFileSync(onnx, join(dir, name, '1', 'model.onnx')); // another file system
    }
  }
  return names;
}

async function httpIndex(origin) {
  const t0 = performance.now();
  const res = await fetch(`${origin}/v2/repository/index`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
  const body = await res.text();
  const ms = performance.now() - t0;
  if (res.status !== 200) throw new Error(`index answered ${res.status}: ${body.slice(0, 200)}`);
  return { ms, names: JSON.parse(body).map((e) => e.name) };
}

function grpcIndex(client) {
  const request = Buffer.from(IndexRequest.encode(IndexRequest.fromObject({})).finish());
  const id = (b) => b;
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    client.makeUnaryRequest(INDEX_PATH, id, id, request, (err, res) => {
      const ms = performance.now() - t0;
      if (err) reject(err);
      else resolve({ ms, names: IndexResponse.decode(res).models.map((m) => m.name) });
    });
  });
}

function check(kind, got, names) {
  if (got.length !== names.length || got.some((n, i) => n !== names[i])) {
    throw new Error(`${kind} index listed ${got.length} models, not the ${names.length} of the repository`);
  }
}

/** One start: ready time, the first HTTP index call, then CALLS calls of each protocol, alternating. */
async function measure(kind, repository, names) {
  const [port, grpcPort] = [await freePort(), await freePort()];
  const args = nereidArgs(repository, port).map((x) => (x === '--allow-grpc=false' ? '--allow-grpc=true' : x));
  args.push('--grpc-port', String(grpcPort), '--grpc-address', HOST, '--model-control-mode=explicit');
  const load = [loadavg()[0]];
  const s = await startServer(kind, args, port);
  const client = new grpc.Client(`${HOST}:${grpcPort}`, grpc.credentials.createInsecure());
  try {
    const first = await httpIndex(s.origin);
    check('HTTP', first.names, names);
    const http = [];
    const g = [];
    for (let i = 0; i < CALLS; i++) {
      const h = await httpIndex(s.origin);
      check('HTTP', h.names, names);
      http.push(h.ms);
      const r = await grpcIndex(client);
      check('gRPC', r.names, names);
      g.push(r.ms);
    }
    load.push(loadavg()[0]);
    return { readyMs: s.readyMs, firstMs: first.ms, httpMs: median(http), grpcMs: median(g), http, grpc: g, load };
  } finally {
    client.close();
    await s.stop();
  }
}

async function main() {
  if (!nereidBuilt()) throw new Error('bin/nereid.js needs the compiled dist/: run `npm run build` first');
  const tmp = mkdtempSync(join(tmpdir(), 'nereid-index-'));
  const large = join(tmp, 'large');
  const small = join(tmp, 'small');
  log(`${cpus().length} CPUs, node ${process.version}, commit ${commitName()}; writing ${MODELS} model folders…`);
  const t0 = performance.now();
  const names = makeRepository(large, MODELS);
  const one = makeRepository(small, 1);
  log(`  written in ${fmt((performance.now() - t0) / 1000, 1)} s`);
  const runs = { large: [], small: [], readdirMs: [] };
  try {
    for (let i = 0; i < STARTS; i++) {
      const order = i % 2 === 0 ? ['large', 'small'] : ['small', 'large'];
      for (const kind of order) {
        const r = await measure(kind, kind === 'large' ? large : small, kind === 'large' ? names : one);
        runs[kind].push(r);
        log(`  start ${i + 1}/${STARTS} ${padEnd(kind, 5)} ready ${fmt(r.readyMs)} ms, first index ${fmt(r.firstMs, 1)} ms, ` +
          `index HTTP ${fmt(r.httpMs, 1)} ms, gRPC ${fmt(r.grpcMs, 1)} ms (load ${r.load.map((x) => x.toFixed(2)).join(' → ')})`);
      }
      for (let k = 0; k < CALLS; k++) {
        const t = performance.now();
        readdirSync(large, { withFileTypes: true });
        runs.readdirMs.push(performance.now() - t);
      }
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }

  const med = (kind, key) => median(runs[kind].map((r) => r[key]));
  const row = (kind, label) => console.log(`${padEnd(label, 22)} ${pad(fmt(med(kind, 'readyMs')), 9)} ${pad(fmt(med(kind, 'firstMs'), 1), 12)} ` +
    `${pad(fmt(med(kind, 'httpMs'), 1), 11)} ${pad(fmt(med(kind, 'grpcMs'), 1), 11)}`);
  const loads = [...runs.large, ...runs.small].flatMap((r) => r.load);
  console.log(`\n== repository index, explicit mode, nothing loaded: medians of ${STARTS} starts (${CALLS} calls each) ==`);
  console.log(`${padEnd('repository', 22)} ${pad('ready ms', 9)} ${pad('1st index ms', 12)} ${pad('HTTP ms', 11)} ${pad('gRPC ms', 11)}`);
  row('large', `${MODELS} models`);
  row('small', '1 model');
  const perModelUs = (key) => ((med('large', key) - med('small', key)) / Math.max(1, MODELS - 1)) * 1000;
  // Start-up reads no model folder in explicit mode: a difference in ready time is the machine's, not the models'.
  console.log(`per model: HTTP ${fmt(perModelUs('httpMs'), 2)} µs, gRPC ${fmt(perModelUs('grpcMs'), 2)} µs; ready ${fmt(med('large', 'readyMs') - med('small', 'readyMs'))} ms later with ${MODELS} models`);
  console.log(`readdir of the ${MODELS}-model repository in this process (the floor): median ${fmt(median(runs.readdirMs), 2)} ms`);
  console.log(`load average (1 min) over the run: ${fmt(Math.min(...loads), 2)}–${fmt(Math.max(...loads), 2)}`);
  const worst = Math.max(med('large', 'httpMs'), med('large', 'grpcMs'));
  console.log(`goal: index of ${MODELS} models ${fmt(worst, 1)} ms < ${GOAL_MS} ms ${worst < GOAL_MS ? 'pass' : 'FAIL'}`);

  const outFile = a.out ?? join(ROOT, '.bench-results', `repository-index-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  mkdirSync(join(outFile, '..'), { recursive: true });
  writeFileSync(outFile, JSON.stringify({ commit: commitName(), models: MODELS, calls: CALLS, starts: STARTS, runs }, null, 2) + '\n');
  console.log(`results: ${relative(process.cwd(), outFile)}`);
}

process.on('SIGINT', () => {
  killAll();
  process.exit(130);
});
main().catch((e) => {
  killAll();
  console.error(e);
  process.exit(1);
});
