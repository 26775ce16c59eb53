#!/usr/bin/env node
// Cold start and idle RSS: the minimal reference server loading `simple` against Nereid on the bundled
// repository, once without `tiny_llm` (every other bundled model) and once with it (the whole repository).
// Starts alternate (the order of the three rotates every start) so drift on the machine hits every server alike.
//
//   node bench/startup.mjs [--starts N] [--settle S] [--nereid-args '...'] [--baseline DIR] [--out FILE]
//   npm run bench -- startup --starts 5
//
// --baseline DIR adds another built checkout of Nereid (its bin/nereid.js) on the same two repositories, in the
// same rotation: before/after figures for a change, taken under the same load.
//
// Cold start is spawn → first 200 from GET /v2/health/ready (polled every 5 ms); idle RSS is VmRSS `--settle`
// seconds after that. Each model's load time comes from Nereid's own log: from its `loading: NAME:VERSION`
// line to `successfully loaded 'NAME' version V`. Goals (medians, without tiny_llm, against the reference):
// cold start <= 3x and idle RSS <= 1.5x.

import { mkdtempSync, cpSync, rmSync, mkdirSync, writeFileSync, readdirSync } from 'node:fs';
import { tmpdir, cpus, loadavg } from 'node:os';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { ROOT, startServer, referenceArgs, nereidArgs, nereidBuilt, freePort, rssKiB, killAll, commitName, median, fmt, pad, padEnd } from './servers.mjs';

const { values: a } = parseArgs({
  options: {
    starts: { type: 'string', default: '5' },
    settle: { type: 'string', default: '2' },
    out: { type: 'string' },
    'nereid-args': { type: 'string', default: '' },
    baseline: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (a.help) {
  process.stdout.write('usage: node bench/startup.mjs [--starts N] [--settle S] [--nereid-args \'--flag value ...\'] [--baseline DIR] [--out FILE]\nsee bench/README.md\n');
  process.exit(0);
}
const STARTS = Number(a.starts);
const SETTLE_MS = Number(a.settle) * 1000;
const EXTRA = a['nereid-args'].split(/\s+/).filter(Boolean);
const GOALS = { readyRatio: 3, rssRatio: 1.5 };

const BUNDLED = join(ROOT, 'examples', 'model_repository');
const SIMPLE_ONNX = join(BUNDLED, 'simple', '1', 'model.onnx');

const log = (s) => process.stderr.write(s + '\n');

/** Microseconds since the epoch of a default-format log line's stamp (I0523 14:03:07.123456), or NaN. */
function stampUs(line) {
  const m = /^[IWEV](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6}) /.exec(line);
  if (!m) return NaN;
  const year = new Date().getUTCFullYear();
  return Date.UTC(year, Number(m[1]) - 1, Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5])) * 1000 + Number(m[6]);
}

/** Each model's load time in ms from the log: `loading: NAME:V` to `successfully loaded 'NAME' version V`. */
function loadTimes(text) {
  const began = new Map();
  const out = {};
  for (const line of text.split('\n')) {
    const start = /loading: ([^:"]+):(\d+)/.exec(line);
    if (start) began.set(`${start[1]}:${start[2]}`, stampUs(line));
    const done = /successfully loaded '([^']+)' version (\d+)/.exec(line);
    if (done) {
      const t0 = began.get(`${done[1]}:${done[2]}`);
      if (t0 !== undefined) out[done[1]] = (stampUs(line) - t0) / 1000;
    }
  }
  return out;
}

const SERVERS = [
  { name: 'reference', models: 'simple' },
  { name: 'nereid', models: 'bundled without tiny_llm' },
  { name: 'nereid+llm', models: 'bundled (with tiny_llm)' },
  ...(a.baseline ? [
    { name: 'baseline', models: 'bundled without tiny_llm', root: a.baseline },
    { name: 'baseline+llm', models: 'bundled (with tiny_llm)', root: a.baseline },
  ] : []),
];

async function startOne({ name: kind, root }, repos) {
  const port = await freePort();
  const args = kind === 'reference'
    ? referenceArgs(SIMPLE_ONNX, port)
    : [...nereidArgs(kind.endsWith('+llm') ? join(root ?? ROOT, 'examples', 'model_repository') : repos.withoutLlm, port), ...EXTRA];
  if (root) args[0] = join(root, 'bin', 'nereid.js');
  const s = await startServer(kind, args, port);
  await sleep(SETTLE_MS);
  const run = { readyMs: s.readyMs, rssKiB: rssKiB(s.pid), load: kind === 'reference' ? {} : loadTimes(s.log()) };
  await s.stop();
  return run;
}

async function main() {
  if (!nereidBuilt()) throw new Error('bin/nereid.js needs the compiled dist/: run `npm run build` first');
  const tmp = mkdtempSync(join(tmpdir(), 'nereid-startup-'));
  const withoutLlm = join(tmp, 'repository');
  for (const d of readdirSync(BUNDLED)) if (d !== 'tiny_llm') cpSync(join(BUNDLED, d), join(withoutLlm, d), { recursive: true });
  const runs = Object.fromEntries(SERVERS.map((s) => [s.name, []]));
  const load = [];
  log(`${cpus().length} CPUs, node ${process.version}, commit ${commitName()}, ${STARTS} starts each, settle ${SETTLE_MS / 1000} s`);
  try {
    for (let i = 0; i < STARTS; i++) {
      const order = SERVERS.map((_, k) => SERVERS[(k + i) % SERVERS.length]);
      load.push(loadavg()[0]);
      for (const server of order) {
        const { name } = server;
        const r = await startOne(server, { withoutLlm });
        runs[name].push(r);
        const llm = r.load.tiny_llm !== undefined ? `, tiny_llm loaded in ${fmt(r.load.tiny_llm)} ms` : '';
        log(`  start ${i + 1}/${STARTS} ${padEnd(name, 10)} ready in ${fmt(r.readyMs)} ms, idle RSS ${fmt(r.rssKiB / 1024, 1)} MiB${llm}`);
      }
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  load.push(loadavg()[0]);

  const med = {};
  for (const { name } of SERVERS) {
    med[name] = { readyMs: median(runs[name].map((r) => r.readyMs)), rssKiB: median(runs[name].map((r) => r.rssKiB)) };
  }
  const ref = med.reference;
  console.log(`\n== cold start (spawn → first 200 on /v2/health/ready) and idle RSS (${SETTLE_MS / 1000} s after ready): medians of ${STARTS} starts ==`);
  console.log(`${padEnd('server', 11)} ${padEnd('models', 26)} ${pad('ready ms', 9)} ${pad('ratio', 6)} ${pad('RSS MiB', 8)} ${pad('ratio', 6)}`);
  for (const { name, models } of SERVERS) {
    const m = med[name];
    console.log(`${padEnd(name, 11)} ${padEnd(models, 26)} ${pad(fmt(m.readyMs), 9)} ${pad(fmt(m.readyMs / ref.readyMs, 2) + 'x', 6)} ${pad(fmt(m.rssKiB / 1024, 1), 8)} ${pad(fmt(m.rssKiB / ref.rssKiB, 2) + 'x', 6)}`);
  }
  for (const name of ['nereid+llm', 'baseline+llm'].filter((n) => runs[n])) {
    const llmLoads = runs[name].map((r) => r.load.tiny_llm);
    const cost = med[name].readyMs - med[name.replace('+llm', '')].readyMs;
    console.log(`${name}: tiny_llm load (its own log lines) median ${fmt(median(llmLoads))} ms (${llmLoads.map((x) => fmt(x)).join(', ')}); ` +
      `ready ${fmt(cost)} ms later than without it`);
  }
  const models = new Set(runs.nereid.flatMap((r) => Object.keys(r.load)));
  const slowest = [...models].map((m) => [m, median(runs.nereid.map((r) => r.load[m]))]).sort((x, y) => y[1] - x[1]);
  console.log(`load per model without tiny_llm (medians, ms): ${slowest.map(([m, t]) => `${m} ${fmt(t)}`).join(', ')}`);
  console.log(`load average (1 min) over the run: ${load.map((x) => x.toFixed(2)).join(' → ')}`);
  const ready = med.nereid.readyMs / ref.readyMs;
  const rss = med.nereid.rssKiB / ref.rssKiB;
  console.log(`goals without tiny_llm: cold start ${fmt(ready, 2)}x <= ${GOALS.readyRatio}x ${ready <= GOALS.readyRatio ? 'pass' : 'FAIL'}, ` +
    `idle RSS ${fmt(rss, 2)}x <= ${GOALS.rssRatio}x ${rss <= GOALS.rssRatio ? 'pass' : 'FAIL'}`);

  const outFile = a.out ?? join(ROOT, '.bench-results', `startup-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  mkdirSync(join(outFile, '..'), { recursive: true });
  writeFileSync(outFile, JSON.stringify({ commit: commitName(), starts: STARTS, settleMs: SETTLE_MS, loadavg: load, runs, median: med }, null, 2) + '\n');
  console.log(`results: ${relative(process.cwd(), outFile)}`);
}

process.on('SIGINT', () => {
  killAll();
  process.exit(130);
});
try {
  await main();
} catch (err) {
  killAll();
  console.error(err.stack ?? String(err));
  process.exitCode = 1;
}
