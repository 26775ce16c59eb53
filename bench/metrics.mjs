#!/usr/bin/env node
// Metrics cost, in one run:
//
//   1. HTTP throughput on `simple` (binary tensors, concurrency 8) of three `nereid serve` processes: metrics off
//      (--allow-metrics=false), on with Triton's defaults (counters read from the statistics at scrape time), and
//      on with per-request latencies (--metrics-config summary_latencies=true histogram_latencies=true). Each
//      measured run is scraped once a second, as a busy Prometheus would. Rounds alternate the three servers;
//      medians of rounds and the ratios on/off. Goal: both ≥ 0.97× off.
//   2. The recording path in process (ModelStatistics.recordSuccess, as every request calls it): without an
//      observer, and with a version's summaries bound; ns per call, medians of alternating blocks.
//      Goal: the metrics' own cost ≤ 1 µs per request.
//
//   node bench/metrics.mjs [--quick] [--rounds N] [--duration S] [--warmup S] [--concurrency C]
//
// Needs the compiled dist/ (./node_modules/.bin/tsc -p .).

import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { runLoad } from './loadgen.mjs';
import { simpleBodies } from './bodies.mjs';
import { ROOT, HOST, startServer, nereidArgs, nereidBuilt, freePort, killAll } from './servers.mjs';

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
  rounds: Number(a.rounds ?? (a.quick ? 2 : 5)),
  duration: Number(a.duration ?? (a.quick ? 1 : 3)),
  warmup: Number(a.warmup ?? (a.quick ? 0.3 : 1)),
  concurrency: Number(a.concurrency),
};
const GOALS = { throughputRatio: 0.97, recordingNs: 1000 };
const log = (s) => process.stderr.write(s + '\n');
const median = (xs) => {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

if (!nereidBuilt()) {
  log('bench/metrics.mjs needs the compiled dist/: run ./node_modules/.bin/tsc -p . first');
  process.exit(2);
}
process.on('SIGINT', () => {
  killAll();
  process.exit(130);
});

const VARIANTS = [
  { name: 'off', flags: [] },
  { name: 'on', flags: ['--allow-metrics=true'] },
  { name: 'latencies', flags: ['--allow-metrics=true', '--metrics-config', 'summary_latencies=true', '--metrics-config', 'histogram_latencies=true'] },
];

async function http() {
  const repo = mkdtempSync(join(tmpdir(), 'nereid-bench-metrics-'));
  cpSync(join(ROOT, 'examples', 'model_repository', 'simple'), join(repo, 'simple'), { recursive: true });
  const servers = [];
  try {
    for (const v of VARIANTS) {
      const port = await freePort();
      const metricsPort = await freePort();
      // The last --allow-metrics wins, so each variant's own flag overrides nereidArgs' default off.
      const args = [...nereidArgs(repo, port), '--metrics-port', String(metricsPort), '--metrics-address', HOST, ...v.flags];
      servers.push({ ...v, server: await startServer(`nereid (${v.name})`, args, port), metricsUrl: `http://${HOST}:${metricsPort}/metrics` });
    }
    const bodies = simpleBodies('binary');
    const runs = new Map(VARIANTS.map((v) => [v.name, []]));
    for (let round = 0; round < opt.rounds; round++) {
      // Alternate the order too, so no variant always runs right after the same one.
      const order = round % 2 === 0 ? servers : [...servers].reverse();
      for (const s of order) {
        const scraper = s.name === 'off' ? undefined : setInterval(() => void fetch(s.metricsUrl).then((r) => r.text()).catch(() => undefined), 1000);
        const r = await runLoad({ url: `${s.server.origin}/v2/models/simple/infer`, bodies, concurrency: opt.concurrency, duration: opt.duration, warmup: opt.warmup });
        if (scraper) clearInterval(scraper);
        if (r.errors > 0) throw new Error(`${s.name}: ${r.errors} failed requests`);
        runs.get(s.name).push(r);
        log(`round ${round + 1} ${s.name}: ${r.throughput.toFixed(0)} req/s, p50 ${(r.p50 * 1000).toFixed(0)} µs`);
      }
    }
    const scraped = await (await fetch(servers[2].metricsUrl)).text();
    if (!/nv_inference_request_summary_us_count\{model="simple",version="1"\} [1-9]/.test(scraped)) throw new Error('the latencies server recorded no summary');
    const med = (name, key) => median(runs.get(name).map((r) => r[key]));
    return Object.fromEntries(VARIANTS.map((v) => [v.name, {
      throughput: med(v.name, 'throughput'), p50us: med(v.name, 'p50') * 1000, p99us: med(v.name, 'p99') * 1000,
      // Ratios per round, then their median: each pair of runs saw the same machine load.
      throughputRatio: median(runs.get(v.name).map((r, i) => r.throughput / runs.get('off')[i].throughput)),
    }]));
  } finally {
    for (const s of servers) await s.server.stop();
    rmSync(repo, { recursive: true, force: true });
  }
}

async function recording() {
  const { ModelStatistics } = await import('../dist/src/observability/statistics.js');
  const { MetricModelReporter } = await import('../dist/src/observability/metrics/reporter.js');
  const { parseMetricsConfig } = await import('../dist/src/observability/metrics/settings.js');
  const plain = new ModelStatistics('simple', 1);
  const bound = new ModelStatistics('simple', 1);
  const info = { name: 'simple', version: 1, metricTags: {}, decoupled: false, cached: false, buckets: new Map() };
  bound.observer = new MetricModelReporter(info, parseMetricsConfig(['summary_latencies=true']));
  const N = a.quick ? 200_000 : 1_000_000;
  const block = (stats) => {
    const t0 = performance.now();
    for (let i = 0; i < N; i++) stats.recordSuccess(40_000 + (i & 1023), 3_000 + (i & 255), 5_000, 25_000 + (i & 4095), 2_000);
    return ((performance.now() - t0) * 1e6) / N;
  };
  const plainNs = [];
  const boundNs = [];
  for (let b = 0; b < (a.quick ? 5 : 15); b++) {
    plainNs.push(block(plain));
    boundNs.push(block(bound));
  }
  return { plainNs: median(plainNs), summariesNs: median(boundNs), costNs: median(boundNs.map((x, i) => x - plainNs[i])) };
}

const h = await http();
const rec = await recording();
const pct = (x) => `${x.toFixed(3)}×`;
process.stdout.write(`\nHTTP simple (binary), concurrency ${opt.concurrency}, ${opt.rounds} rounds of ${opt.duration} s, medians\n`);
process.stdout.write('variant     req/s    p50 µs  p99 µs  throughput vs off\n');
for (const v of VARIANTS) {
  const r = h[v.name];
  process.stdout.write(`${v.name.padEnd(10)} ${r.throughput.toFixed(0).padStart(6)}  ${r.p50us.toFixed(0).padStart(7)} ${r.p99us.toFixed(0).padStart(7)}  ${pct(r.throughputRatio)}\n`);
}
process.stdout.write(`\nrecordSuccess per call: ${rec.plainNs.toFixed(0)} ns without an observer, ${rec.summariesNs.toFixed(0)} ns with summaries bound (metrics' own cost ${rec.costNs.toFixed(0)} ns)\n`);
const goals = [
  [`metrics on: throughput ≥ ${GOALS.throughputRatio}× off`, h.on.throughputRatio >= GOALS.throughputRatio],
  [`latencies on: throughput ≥ ${GOALS.throughputRatio}× off`, h.latencies.throughputRatio >= GOALS.throughputRatio],
  [`recording cost ≤ ${GOALS.recordingNs} ns per request`, rec.costNs <= GOALS.recordingNs],
];
process.stdout.write('\n' + goals.map(([g, ok]) => `${ok ? 'pass' : 'FAIL'}  ${g}`).join('\n') + '\n');
