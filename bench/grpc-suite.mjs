// The gRPC comparison shared by bench/grpc.mjs and bench/http.mjs --quick: Nereid's ModelInfer and
// ModelStreamInfer against Nereid's own HTTP binary on `simple` (the goals: gRPC at least as fast, at no more
// server CPU per request), from a grpc-js client and from h2load, with the bare references for context.
// Rounds alternate every (side, client) pair, the order rotating each round, so that drift on a shared
// machine hits all alike; figures are medians of rounds.

import { mkdtempSync, cpSync, rmSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { join } from 'node:path';
import {
  SIMPLE, INFER_PATH, STREAM_PATH, grpcBodies, grpcUnaryLoad, grpcStreamLoad, httpBinaryLoad, h2loadGrpc, h2loadHttpBinary,
  haveH2load, startReference,
} from './grpc-load.mjs';
import { HOST, ROOT, startServer, nereidArgs, freePort, median } from './servers.mjs';

/**
 * Sides: what serves. `before` is another Nereid build (--before DIR), e.g. the commit before a change, on
 * ModelInfer; `before-stream` the same build on ModelStreamInfer.
 */
export const SIDES = ['reference', 'reference-h2', 'before', 'before-stream', 'nereid', 'stream', 'http'];
export const GOALS = { grpcOverHttp: 1.0, cpuOverHttp: 1.0 };

/**
 * Runs the sides × clients at each concurrency. `opt`: { sides, clients, concurrency, rounds, duration, warmup,
 * before?: DIR, log }. Resolves to { rows: [{ concurrency, client, side: { throughput, p50, cpuUs, errors } }],
 * load: [before, after] }.
 */
export async function runGrpcSuite(opt) {
  const clients = opt.clients.filter((c) => c !== 'h2load' || haveH2load());
  if (clients.length < opt.clients.length) opt.log(`h2load is not installed (${'/usr/bin/h2load'}): the C client is left out`);
  const repo = mkdtempSync(join(tmpdir(), 'nereid-bench-grpc-'));
  cpSync(SIMPLE, join(repo, 'simple'), { recursive: true });
  const servers = {};
  const loadBefore = loadavg()[0];
  const rows = [];
  try {
    const bodies = grpcBodies();
    const nereid = await startNereid(ROOT, repo);
    servers.nereid = nereid;
    if (opt.sides.some((x) => x.startsWith('before'))) servers.before = await startNereid(opt.before, repo);
    if (opt.sides.includes('reference')) servers.reference = await startReference('grpc-js');
    if (opt.sides.includes('reference-h2')) servers['reference-h2'] = await startReference('http2');
    const load = (side, client, c, duration, warmup) => {
      const common = { concurrency: c, duration, warmup, bodies, tmp: repo };
      const s = side === 'stream' || side === 'http' ? nereid : side === 'before-stream' ? servers.before : servers[side];
      const target = { ...common, port: s.grpcPort ?? s.port, pid: s.pid, origin: s.origin };
      if (side === 'http') return client === 'h2load' ? h2loadHttpBinary(target) : httpBinaryLoad(target);
      const streaming = side === 'stream' || side === 'before-stream';
      const path = streaming ? STREAM_PATH : INFER_PATH;
      if (client === 'h2load') return h2loadGrpc({ ...target, path, body: bodies[0].body });
      return streaming ? grpcStreamLoad(target) : grpcUnaryLoad(target);
    };
    const pairs = clients.flatMap((client) => opt.sides.map((side) => ({ side, client })));
    const slices = Math.max(1, opt.slices ?? 1);
    // Every side's JIT warmed before the first measured round, at c=8 and at c=1 (one call at a time takes paths
    // of its own): otherwise the side measured first in the first round is measured cold.
    for (const c of [8, 1]) for (const { side, client } of pairs) await load(side, client, c, opt.warmup, 0);
    for (const c of opt.concurrency) {
      const runs = new Map(pairs.map((p) => [`${p.client}/${p.side}`, []]));
      for (let round = 0; round < opt.rounds; round++) {
        const k = round % pairs.length;
        const order = [...pairs.slice(k), ...pairs.slice(0, k)];
        // Each pair's share of the round in interleaved slices (A B C, C B A, …), so that the machine's drift
        // over the round falls on every side alike.
        const parts = new Map(pairs.map((p) => [`${p.client}/${p.side}`, []]));
        for (let i = 0; i < slices; i++) {
          for (const { side, client } of i % 2 === 0 ? order : [...order].reverse()) {
            parts.get(`${client}/${side}`).push(await load(side, client, c, opt.duration / slices, opt.warmup / slices));
          }
        }
        for (const { side, client } of order) {
          const r = mergeSlices(parts.get(`${client}/${side}`), opt.duration);
          runs.get(`${client}/${side}`).push(r);
          opt.log(`  c=${c} round ${round + 1}/${opt.rounds} ${client.padEnd(7)} ${side.padEnd(12)} ${r.throughput.toFixed(0).padStart(6)} req/s  ` +
            `p50 ${(r.p50 * 1000).toFixed(0).padStart(5)} µs  cpu ${r.serverCpuUsPerRequest.toFixed(0).padStart(4)} µs/req  client cpu ${r.clientCpuUsPerRequest.toFixed(0).padStart(4)} µs/req` +
            (r.errors ? `  ERRORS ${r.errors} ${JSON.stringify(r.errorSamples)}` : ''));
        }
      }
      for (const client of clients) {
        const row = { concurrency: c, client };
        for (const side of opt.sides) {
          const xs = runs.get(`${client}/${side}`);
          row[side] = {
            throughput: median(xs.map((r) => r.throughput)), p50: median(xs.map((r) => r.p50)),
            cpuUs: median(xs.map((r) => r.serverCpuUsPerRequest)), clientCpuUs: median(xs.map((r) => r.clientCpuUsPerRequest)),
            errors: xs.reduce((s, r) => s + r.errors, 0),
            rounds: xs.map((r) => ({ throughput: r.throughput, p50: r.p50, cpuUs: r.serverCpuUsPerRequest, clientCpuUs: r.clientCpuUsPerRequest })),
          };
        }
        rows.push(row);
      }
    }
  } finally {
    for (const s of Object.values(servers)) await s.stop();
    rmSync(repo, { recursive: true, force: true });
  }
  return { rows, load: [loadBefore, loadavg()[0]] };
}

/**
 * One pair's slices of a round as one run: throughput over their summed measured time (`seconds`), CPU per request over all their
 * requests, p50 the median of the slices' (h2load reports no percentiles, only a mean per run).
 */
function mergeSlices(xs, seconds) {
  const requests = xs.reduce((s, r) => s + r.requests, 0);
  const weighted = (field) => xs.reduce((s, r) => s + r[field] * r.requests, 0) / requests;
  return {
    requests, throughput: requests / seconds, p50: median(xs.map((r) => r.p50)),
    serverCpuUsPerRequest: weighted('serverCpuUsPerRequest'), clientCpuUsPerRequest: weighted('clientCpuUsPerRequest'),
    errors: xs.reduce((s, r) => s + r.errors, 0), errorSamples: xs.flatMap((r) => r.errorSamples ?? (r.errorDetail ? [r.errorDetail] : [])).slice(0, 3),
  };
}

/** Nereid from `root` (its bin/nereid.js and dist/) with HTTP and gRPC on free ports. */
async function startNereid(root, repo) {
  const httpPort = await freePort();
  const grpcPort = await freePort();
  const args = nereidArgs(repo, httpPort).filter((x) => x !== '--allow-grpc=false');
  args[0] = join(root, 'bin', 'nereid.js');
  const s = await startServer(root === ROOT ? 'nereid' : 'before', [...args, '--grpc-port', String(grpcPort), '--grpc-address', HOST, '--log-info=false'], httpPort);
  s.grpcPort = grpcPort;
  return s;
}

/**
 * The goal lines: each gRPC side against HTTP binary, per client and concurrency, throughput and CPU. As for
 * HTTP (bench/http.mjs), a goal passes when it holds for the medians and in at least 80% of rounds, a round's
 * ratio being that of its own interleaved measurements.
 */
export function grpcVerdicts(rows) {
  const out = [];
  for (const r of rows) {
    if (!r.http) continue;
    const n = r.http.rounds.length;
    const need = Math.ceil(0.8 * n);
    const held = (side, field, ok) => r[side].rounds.filter((x, i) => ok(x[field] / r.http.rounds[i][field])).length;
    for (const side of ['nereid', 'stream']) {
      if (!r[side]) continue;
      const rpc = side === 'nereid' ? 'ModelInfer' : 'ModelStreamInfer';
      const ratio = r[side].throughput / r.http.throughput;
      const up = (q) => q >= GOALS.grpcOverHttp;
      const kt = held(side, 'throughput', up);
      // A loop whose client spends more CPU per call than the server is measuring the client: say so beside the verdict.
      const cl = r[side].clientCpuUs;
      const note = cl > r[side].cpuUs ? `client-bound: the ${r.client} client spent ${cl.toFixed(0)} µs of CPU per call, the server ${r[side].cpuUs.toFixed(0)}` : undefined;
      out.push({ name: `gRPC ${rpc} req/s / HTTP binary, ${r.client}, c=${r.concurrency}, held ${kt}/${n} rounds`, value: ratio, goal: `>= ${GOALS.grpcOverHttp}`, pass: up(ratio) && kt >= need, note });
      const cpu = r[side].cpuUs / r.http.cpuUs;
      const down = (q) => q <= GOALS.cpuOverHttp;
      const kc = held(side, 'cpuUs', down);
      out.push({
        name: `gRPC ${rpc} CPU/req / HTTP binary, ${r.client}, c=${r.concurrency} (${r[side].cpuUs.toFixed(0)} vs ${r.http.cpuUs.toFixed(0)} µs), held ${kc}/${n} rounds`,
        value: cpu, goal: `<= ${GOALS.cpuOverHttp}`, pass: down(cpu) && kc >= need,
      });
    }
  }
  return out;
}

/**
 * The table of medians: one line per client and concurrency, and per side req/s, p50 µs, the server's CPU µs
 * per request and the client's (`cl`: where the client spends more per request than the server, the loop is
 * the client's).
 */
export function printGrpcTable(rows, sides, print = console.log) {
  print(`client  ${'c'.padStart(3)} | ${sides.map((s) => `${s} req/s  p50  cpu   cl`).join(' | ')}`);
  for (const r of rows) {
    const cells = sides.map((s) => `${r[s].throughput.toFixed(0).padStart(6)} ${(r[s].p50 * 1000).toFixed(0).padStart(5)} ${r[s].cpuUs.toFixed(0).padStart(4)} ${r[s].clientCpuUs.toFixed(0).padStart(4)}${r[s].errors ? ` (${r[s].errors} errors)` : ''}`);
    print(`${r.client.padEnd(7)} ${String(r.concurrency).padStart(3)} | ${cells.join(' | ')}`);
  }
}
