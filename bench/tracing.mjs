#!/usr/bin/env node
// Tracing cost, in one run: HTTP `simple` (binary tensors) against four `nereid serve` processes,
//
//   off         no --trace-config (level OFF: a request reads one boolean for tracing)
//   rate1000    Triton mode, level TIMESTAMPS, rate 1000 (one request in a thousand traced, to a trace file)
//   triton-all  Triton mode, level TIMESTAMPS, rate 1, log-frequency 1000 (every request traced and written)
//   otel-all    OpenTelemetry mode, level TIMESTAMPS, rate 1 (every request traced; spans exported by the batch
//               span processor to an OTLP/HTTP sink in this process that reads and drops them)
//
// Rounds alternate the servers (reversed every other round); each run measures throughput and the server's
// CPU time per request (user + system, all threads, warm-up included and spread over the requests answered).
// Medians of rounds, and the median of per-round ratios against `off`. Goal (issue 19): rate1000's CPU per
// request within 5% of off. The load average before and after is printed: figures from a busy machine read as such.
//
//   node bench/tracing.mjs [--quick] [--rounds N] [--duration S] [--warmup S] [--concurrency C]
//
// Needs the compiled dist/ (./node_modules/.bin/tsc -p .).

import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runLoad } from './loadgen.mjs';
import { simpleBodies } from './bodies.mjs';
import { ROOT, HOST, startServer, nereidArgs, nereidBuilt, freePort, killAll, cpuMs, median } from './servers.mjs';

const { values: a } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    duration: { type: 'string' },
    warmup: { type: 'string' },
    concurrency: { type: 'string', default: '8' },
  },
});
const opt = {
  rounds: Number(a.rounds ?? (a.quick ? 2 : 6)),
  duration: Number(a.duration ?? (a.quick ? 1 : 3)),
  warmup: Number(a.warmup ?? (a.quick ? 0.3 : 1)),
  concurrency: Number(a.concurrency),
};
const GOAL_CPU_RATIO = 1.05;
const log = (s) => process.stderr.write(s + '\n');

if (!nereidBuilt()) {
  log('bench/tracing.mjs needs the compiled dist/: run ./node_modules/.bin/tsc -p . first');
  process.exit(2);
}
process.on('SIGINT', () => {
  killAll();
  process.exit(130);
});

/** The OTLP endpoint of otel-all: reads each export and answers 200, as a collector would. */
async function startSink() {
  let exports = 0;
  const sink = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      exports++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' });
      res.end();
    });
  });
  await new Promise((resolve) => sink.listen(0, HOST, resolve));
  return { url: `http://${HOST}:${sink.address().port}/v1/traces`, exports: () => exports, close: () => new Promise((r) => sink.close(r)) };
}

const load0 = loadavg();
const dir = mkdtempSync(join(tmpdir(), 'nereid-bench-tracing-'));
cpSync(join(ROOT, 'examples', 'model_repository', 'simple'), join(dir, 'repo', 'simple'), { recursive: true });
const sink = await startSink();
const VARIANTS = [
  { name: 'off', flags: [] },
  { name: 'rate1000', flags: ['--trace-config', 'level=TIMESTAMPS', '--trace-config', 'rate=1000', '--trace-config', `triton,file=${join(dir, 'rate1000.json')}`] },
  { name: 'triton-all', flags: ['--trace-config', 'level=TIMESTAMPS', '--trace-config', 'rate=1', '--trace-config', `triton,file=${join(dir, 'all.json')}`, '--trace-config', 'triton,log-frequency=1000'] },
  { name: 'otel-all', flags: ['--trace-config', 'mode=opentelemetry', '--trace-config', 'level=TIMESTAMPS', '--trace-config', 'rate=1', '--trace-config', `opentelemetry,url=${sink.url}`] },
];

const servers = [];
const runs = new Map(VARIANTS.map((v) => [v.name, []]));
try {
  for (const v of VARIANTS) {
    const port = await freePort();
    servers.push({ ...v, server: await startServer(`nereid (${v.name})`, [...nereidArgs(join(dir, 'repo'), port), ...v.flags], port) });
  }
  const bodies = simpleBodies('binary');
  for (let round = 0; round < opt.rounds; round++) {
    const order = round % 2 === 0 ? servers : [...servers].reverse();
    for (const s of order) {
      const cpu0 = cpuMs(s.server.pid);
      const r = await runLoad({ url: `${s.server.origin}/v2/models/simple/infer`, bodies, concurrency: opt.concurrency, duration: opt.duration, warmup: opt.warmup });
      const cpu1 = cpuMs(s.server.pid);
      if (r.errors > 0) throw new Error(`${s.name}: ${r.errors} failed requests`);
      r.cpuUs = ((cpu1 - cpu0) * 1000) / (r.requests * (1 + opt.warmup / Math.max(r.seconds, 1e-9)));
      runs.get(s.name).push(r);
      log(`round ${round + 1}/${opt.rounds} ${s.name.padEnd(10)} ${r.throughput.toFixed(0).padStart(6)} req/s  p50 ${(r.p50 * 1000).toFixed(0).padStart(5)} µs  ${r.cpuUs.toFixed(1).padStart(6)} µs CPU/request`);
    }
  }
} finally {
  for (const s of servers) await s.server.stop();
  await sink.close();
  rmSync(dir, { recursive: true, force: true });
}
const load1 = loadavg();

const off = runs.get('off');
const rows = VARIANTS.map((v) => {
  const rs = runs.get(v.name);
  return {
    name: v.name,
    throughput: median(rs.map((r) => r.throughput)),
    p50us: median(rs.map((r) => r.p50)) * 1000,
    cpuUs: median(rs.map((r) => r.cpuUs)),
    // Per-round ratios, then their median: each pair of runs saw the same machine load.
    throughputRatio: median(rs.map((r, i) => r.throughput / off[i].throughput)),
    cpuRatio: median(rs.map((r, i) => r.cpuUs / off[i].cpuUs)),
  };
});
const out = process.stdout;
out.write(`\nHTTP simple (binary), concurrency ${opt.concurrency}, ${opt.rounds} alternating rounds of ${opt.duration} s, medians\n`);
out.write(`load average (1/5/15 min): before ${load0.map((x) => x.toFixed(2)).join(' ')}, after ${load1.map((x) => x.toFixed(2)).join(' ')}\n`);
out.write('variant      req/s   p50 µs  CPU µs/req  throughput vs off  CPU vs off\n');
for (const r of rows) {
  out.write(`${r.name.padEnd(10)} ${r.throughput.toFixed(0).padStart(7)}  ${r.p50us.toFixed(0).padStart(7)}  ${r.cpuUs.toFixed(1).padStart(10)}  ${r.throughputRatio.toFixed(3).padStart(16)}×  ${r.cpuRatio.toFixed(3).padStart(9)}×\n`);
}
out.write(`OTLP exports received from otel-all: ${sink.exports()}\n`);
const rate = rows.find((r) => r.name === 'rate1000');
out.write(`\n${rate.cpuRatio <= GOAL_CPU_RATIO ? 'pass' : 'FAIL'}  rate1000: server CPU per request ≤ ${GOAL_CPU_RATIO}× off (${rate.cpuRatio.toFixed(3)}×)\n`);
