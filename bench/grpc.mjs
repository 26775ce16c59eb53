#!/usr/bin/env node
// gRPC on `simple`: Nereid's ModelInfer (side `nereid`) and ModelStreamInfer (`stream`) against Nereid's own
// HTTP binary (`http`), with the bare references for context: `reference`, a minimal grpc-js server, and
// `reference-h2`, the same on node:http2 (bench/grpc-reference-server.mjs); `before` is another Nereid build
// given with --before DIR (a checkout with bin/ and dist/), on ModelInfer, and `before-stream` that build on
// ModelStreamInfer. Each side is driven by a grpc-js client and by
// h2load (nghttp2's C client; HTTP binary through h2load --h1), rounds alternating every pair (see
// grpc-suite.mjs). Prints medians of rounds (req/s, p50 µs, server CPU µs per request) and the goals: gRPC
// ≥ 1.0× HTTP binary's throughput at no more CPU per request.
//
//   node bench/grpc.mjs [--rounds N] [--duration S] [--warmup S] [--slices N] [--concurrency 1,8]
//                       [--sides reference,reference-h2,nereid,stream,http] [--clients grpc-js,h2load]
//                       [--before DIR] [--out FILE]
//
// With the grpc-js client the load is one channel (one HTTP/2 connection) with `concurrency` calls in flight
// (ModelStreamInfer: one stream with `concurrency` requests in flight); h2load sends `concurrency` streams on
// one connection, each a call with one pre-encoded request (so ModelStreamInfer opens a stream per request).
// HTTP is one connection per request in flight, undici for the grpc-js column, h2load --h1 for the other.

import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { runGrpcSuite, grpcVerdicts, printGrpcTable, SIDES } from './grpc-suite.mjs';
import { ROOT, nereidBuilt, commitName, killAll } from './servers.mjs';

const { values: a } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '1' },
    slices: { type: 'string', default: '4' },
    concurrency: { type: 'string', default: '1,8' },
    sides: { type: 'string', default: 'reference,reference-h2,nereid,stream,http' },
    clients: { type: 'string', default: 'grpc-js,h2load' },
    before: { type: 'string' },
    out: { type: 'string' },
  },
});
const log = (s) => process.stderr.write(s + '\n');
const opt = {
  rounds: Number(a.rounds), duration: Number(a.duration), warmup: Number(a.warmup), slices: Number(a.slices),
  concurrency: a.concurrency.split(',').map(Number), sides: a.sides.split(','), clients: a.clients.split(','), before: a.before, log,
};
for (const s of opt.sides) if (!SIDES.includes(s)) throw new Error(`unknown side ${s}; sides: ${SIDES.join(', ')}`);
if (opt.sides.some((s) => s.startsWith('before')) && !opt.before) throw new Error('the sides `before` and `before-stream` need --before DIR');
if (!nereidBuilt()) throw new Error('build first: npm run build');

const meta = { date: new Date().toISOString(), node: process.version, cpus: cpus().length, commit: commitName(), options: { ...opt, log: undefined } };
log(`${meta.cpus} CPUs, node ${process.version}, commit ${meta.commit}`);
log(`${opt.rounds} rounds × ${opt.duration} s (+${opt.warmup} s warm-up) per side and client in ${opt.slices} interleaved slices; concurrency ${opt.concurrency.join(',')}; sides ${opt.sides.join(',')}; clients ${opt.clients.join(',')}`);
let result;
try {
  result = await runGrpcSuite(opt);
} finally {
  killAll();
}

console.log(`\ngRPC on simple, ${opt.rounds} rounds of ${opt.duration} s, medians (req/s, p50 µs — h2load: mean —, server CPU µs per request, client CPU µs per request); load average ${result.load[0].toFixed(2)} before, ${result.load[1].toFixed(2)} after\n`);
printGrpcTable(result.rows, opt.sides);
const verdicts = grpcVerdicts(result.rows);
if (verdicts.length > 0) {
  console.log('\ngoals:');
  for (const v of verdicts) console.log(`  ${v.pass ? 'pass' : 'FAIL'}  ${v.name}: ${v.value.toFixed(2)} (goal ${v.goal})${v.note ? `  [${v.note}]` : ''}`);
}
const dir = join(ROOT, '.bench-results');
mkdirSync(dir, { recursive: true });
const file = a.out ?? join(dir, `grpc-${meta.date.replace(/[:.]/g, '-')}.json`);
writeFileSync(file, JSON.stringify({ meta, ...result, verdicts }, null, 2));
log(`\nwrote ${relative(process.cwd(), file)}`);
if (result.rows.some((r) => opt.sides.some((s) => r[s].errors > 0))) process.exitCode = 1;
