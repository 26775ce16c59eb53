#!/usr/bin/env node
// Instructions per request on `simple`, one request at a time: a count that does not move with the machine's
// load, where the CPU time per request of bench/http.mjs and bench/grpc.mjs moves by a third from one stretch
// of a shared machine to the next. Each server runs under valgrind's callgrind; h2load sends N requests, and the
// server's instructions over exactly those N (counters zeroed before, dumped after, with callgrind_control) are
// divided by N. The client's are h2load's under cachegrind: its count for 2N requests less its count for N,
// divided by N, so that its start and connection drop out. User-space instructions only: the system calls'
// kernel work (the same calls for every side, counted with strace in bench/README.md) is not in them.
//
//   node bench/instructions.mjs [--calls N] [--warmup-rounds W] [--rounds R] [--sides nereid,stream,http,reference]
//
// Sides: `nereid` is Nereid's ModelInfer, `stream` its ModelStreamInfer (a stream per request, as h2load sends
// them), `http` its HTTP binary infer (h2load --h1), `reference` bench/reference-server.mjs on HTTP binary. The
// first W rounds per side are warm-up: V8 tiers the request path up over the first thousands of calls, and
// counts settle to within a few percent once it has. Needs valgrind and h2load (Debian: valgrind,
// nghttp2-client). Under callgrind a server runs some fifty times slower, so a run takes about fifteen minutes.

import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, appendFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { simpleBodies } from './bodies.mjs';
import { grpcBodies, grpcFrame, H2LOAD, haveH2load, INFER_PATH, SIMPLE, STREAM_PATH } from './grpc-load.mjs';
import { HOST, ROOT, commitName, freePort, killAll, median, nereidArgs, nereidBuilt, referenceArgs, startServer } from './servers.mjs';

const { values: a } = parseArgs({
  options: {
    calls: { type: 'string', default: '2000' },
    'warmup-rounds': { type: 'string', default: '4' },
    rounds: { type: 'string', default: '5' },
    sides: { type: 'string', default: 'nereid,stream,http,reference' },
    out: { type: 'string' },
  },
});
const SIDES = ['nereid', 'stream', 'http', 'reference'];
const opt = { calls: Number(a.calls), warmupRounds: Number(a['warmup-rounds']), rounds: Number(a.rounds), sides: a.sides.split(',') };
for (const s of opt.sides) if (!SIDES.includes(s)) throw new Error(`unknown side ${s}; sides: ${SIDES.join(', ')}`);
const log = (s) => process.stderr.write(s + '\n');
const VALGRIND = '/usr/bin/valgrind';
const CALLGRIND_CONTROL = '/usr/bin/callgrind_control';
for (const [tool, pkg] of [[VALGRIND, 'valgrind'], [CALLGRIND_CONTROL, 'valgrind']]) {
  if (!existsSync(tool)) throw new Error(`${tool} is missing: apt-get install ${pkg}`);
}
if (!haveH2load()) throw new Error(`${H2LOAD} is missing: apt-get install nghttp2-client`);
if (!nereidBuilt()) throw new Error('build first: npm run build');

const work = mkdtempSync(join(tmpdir(), 'nereid-bench-instructions-'));
// Under callgrind, the ONNX Runtime backend's load-time probe times the model fifty times slower than it runs
// and would move it to a worker thread; the parameter keeps it on the event loop, where the probe puts it
// when the server runs outside valgrind.
cpSync(SIMPLE, join(work, 'repo', 'simple'), { recursive: true });
appendFileSync(join(work, 'repo', 'simple', 'config.pbtxt'), '\nparameters {\n  key: "nereid_execution_placement"\n  value { string_value: "inline" }\n}\n');
const grpcFile = join(work, 'grpc.bin');
writeFileSync(grpcFile, grpcFrame(grpcBodies()[0].body));
const binary = simpleBodies('binary')[0];
const httpFile = join(work, 'http.bin');
writeFileSync(httpFile, binary.body);
const httpHeaders = Object.entries(binary.headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`]);

const meta = { date: new Date().toISOString(), node: process.version, cpus: cpus().length, commit: commitName(), options: opt };
log(`${meta.cpus} CPUs, node ${process.version}, commit ${meta.commit}; ${opt.calls} calls per round, ${opt.warmupRounds} warm-up and ${opt.rounds} measured rounds per side`);
const load0 = loadavg()[0];
let result;
try {
  result = await measure();
} finally {
  killAll();
  rmSync(work, { recursive: true, force: true });
}
const load1 = loadavg()[0];

console.log(`\nInstructions per request on simple, c=1 (medians of ${opt.rounds} rounds of ${opt.calls} requests; min–max of the rounds); load average ${load0.toFixed(2)} before, ${load1.toFixed(2)} after\n`);
const head = ['side', 'server', 'rounds min–max', 'server / http', 'client (h2load)', 'server + client'];
const rows = opt.sides.map((side) => {
  const r = result[side];
  const http = result.http?.server;
  return [side, fmt(r.server), `${fmt(r.min)}–${fmt(r.max)}`, http ? (r.server / http).toFixed(2) : '', fmt(r.client), fmt(r.server + r.client)];
});
printTable(head, rows);
const verdicts = [];
for (const side of ['nereid', 'stream']) {
  if (!result[side] || !result.http) continue;
  const ratio = result[side].server / result.http.server;
  verdicts.push({ name: `gRPC ${side === 'nereid' ? 'ModelInfer' : 'ModelStreamInfer'} server instructions / HTTP binary's`, value: ratio, goal: '<= 1.00', pass: ratio <= 1 });
}
if (result.http && result.reference) {
  const ratio = result.http.server / result.reference.server;
  verdicts.push({ name: 'HTTP binary server instructions / the reference\'s', value: ratio, goal: '<= 1.00', pass: ratio <= 1 });
}
if (verdicts.length > 0) {
  console.log('\ngoals (the CPU goals of bench/http.mjs and bench/grpc.mjs, counted instead of timed):');
  for (const v of verdicts) console.log(`  ${v.pass ? 'pass' : 'FAIL'}  ${v.name}: ${v.value.toFixed(2)} (goal ${v.goal})`);
}
const dir = join(ROOT, '.bench-results');
mkdirSync(dir, { recursive: true });
const file = a.out ?? join(dir, `instructions-${meta.date.replace(/[:.]/g, '-')}.json`);
writeFileSync(file, JSON.stringify({ meta, load: [load0, load1], result, verdicts }, null, 2));
log(`\nwrote ${relative(process.cwd(), file)}`);

async function measure() {
  const dumps = join(work, 'dumps');
  mkdirSync(dumps);
  const servers = {};
  const callgrind = (name) => [VALGRIND, '--tool=callgrind', '--dump-instr=no', `--callgrind-out-file=${join(dumps, `${name}.%p`)}`];
  const started = [];
  if (opt.sides.some((s) => s !== 'reference')) {
    started.push((async () => {
      const httpPort = await freePort();
      const grpcPort = await freePort();
      const args = nereidArgs(join(work, 'repo'), httpPort).filter((x) => x !== '--allow-grpc=false');
      servers.nereid = await startServer('nereid', [...args, '--grpc-port', String(grpcPort), '--grpc-address', HOST, '--log-info=false'], httpPort, { timeoutMs: 900_000, prefix: callgrind('nereid') });
      servers.nereid.grpcPort = grpcPort;
    })());
  }
  if (opt.sides.includes('reference')) {
    started.push((async () => {
      const port = await freePort();
      servers.reference = await startServer('reference', referenceArgs(join(SIMPLE, '1', 'model.onnx'), port), port, { timeoutMs: 900_000, prefix: callgrind('reference') });
    })());
  }
  log('starting the servers under callgrind (a minute or two)');
  await Promise.all(started);
  const target = (side) => {
    const s = side === 'reference' ? servers.reference : servers.nereid;
    if (side === 'nereid' || side === 'stream') {
      const path = side === 'nereid' ? INFER_PATH : STREAM_PATH;
      return { server: s, args: ['-c', '1', '-m', '1', '-d', grpcFile, '-H', 'content-type: application/grpc', '-H', 'te: trailers', `http://${HOST}:${s.grpcPort}${path}`] };
    }
    return { server: s, args: ['--h1', '-c', '1', '-m', '1', '-d', httpFile, ...httpHeaders, `${s.origin}/v2/models/simple/infer`] };
  };
  // The client first: h2load's count does not depend on how warm the server is, and its runs warm the server.
  const client = {};
  for (const side of opt.sides) {
    const { server, args } = target(side);
    const n = Math.max(500, opt.calls >> 1);
    const once = await clientInstructions(server, ['-n', String(n), ...args], n);
    const twice = await clientInstructions(server, ['-n', String(2 * n), ...args], 2 * n);
    client[side] = (twice - once) / n;
    log(`  ${side.padEnd(9)} client ${fmt(client[side])} instructions per request`);
  }
  const counts = Object.fromEntries(opt.sides.map((s) => [s, []]));
  for (let round = 0; round < opt.warmupRounds + opt.rounds; round++) {
    // Sides alternate within a round, as in the timed benchmarks, so that each is measured after the others.
    const order = opt.sides.slice(round % opt.sides.length).concat(opt.sides.slice(0, round % opt.sides.length));
    for (const side of order) {
      const { server, args } = target(side);
      const warm = round < opt.warmupRounds;
      if (!warm) await control(server.pid, ['--zero']);
      await h2load(server, ['-n', String(opt.calls), ...args], opt.calls);
      if (warm) continue;
      const ir = await dump(server.pid, dumps);
      counts[side].push(ir / opt.calls);
      log(`  round ${round - opt.warmupRounds + 1}/${opt.rounds} ${side.padEnd(9)} ${fmt(ir / opt.calls)} instructions per request`);
    }
  }
  const out = {};
  for (const side of opt.sides) {
    const xs = counts[side];
    out[side] = { server: median(xs), min: Math.min(...xs), max: Math.max(...xs), rounds: xs, client: client[side] };
  }
  return out;
}

function run(file, args) {
  return new Promise((resolve, reject) => {
    execFile(file, args, { maxBuffer: 16 << 20 }, (err, stdout, stderr) => (err ? reject(new Error(`${file} ${args.join(' ')}: ${err.message}\n${stderr}`)) : resolve({ stdout, stderr })));
  });
}

async function h2load(server, args, calls) {
  const { stdout } = await run(H2LOAD, args);
  checkDone(server, stdout, calls);
}

function checkDone(server, stdout, calls) {
  const ok = /requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded/.exec(stdout);
  if (!ok || Number(ok[1]) !== calls) {
    throw new Error(`h2load: ${calls} requests asked, ${ok ? ok[1] : 'none'} succeeded\n${stdout}\n${server.name}'s output ends:\n${server.log().slice(-4000)}`);
  }
}

function control(pid, args) {
  return run(CALLGRIND_CONTROL, [...args, String(pid)]);
}

/** Dumps the server's counters since the last zero and reads their total from the new file. */
async function dump(pid, dir) {
  const before = new Set(readdirSync(dir));
  await control(pid, ['--dump']);
  for (let i = 0; i < 600; i++) {
    const fresh = readdirSync(dir).filter((f) => !before.has(f) && f.includes(`.${pid}.`));
    for (const f of fresh) {
      const text = readFileSync(join(dir, f), 'utf8');
      const total = /^totals: (\d+)/m.exec(text) ?? /^summary: (\d+)/m.exec(text);
      if (total) {
        rmSync(join(dir, f));
        return Number(total[1]);
      }
    }
    await sleep(100);
  }
  throw new Error(`no callgrind dump from ${pid}`);
}

/** h2load's own user-space instructions for a run, under cachegrind. */
async function clientInstructions(server, args, calls) {
  const { stdout, stderr } = await run(VALGRIND, ['--tool=cachegrind', '--cache-sim=no', '--cachegrind-out-file=/dev/null', H2LOAD, ...args]);
  checkDone(server, stdout, calls);
  const ir = /I\s+refs:\s+([\d,]+)/.exec(stderr);
  if (!ir) throw new Error(`no instruction count from cachegrind:\n${stderr.slice(-2000)}`);
  return Number(ir[1].replaceAll(',', ''));
}

function fmt(n) {
  return n >= 10_000 ? `${(n / 1000).toFixed(1)}k` : n.toFixed(0);
}

function printTable(head, rows) {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join('  ');
  console.log(line(head));
  for (const r of rows) console.log(line(r));
}
