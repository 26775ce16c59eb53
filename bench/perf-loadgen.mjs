#!/usr/bin/env node
// The load generator's own cost: client CPU microseconds per request of `nereid perf`, of bench/loadgen.mjs and of
// wrk (a C load generator, Debian's package), each sending the same pre-encoded KServe v2 request (the `simple`
// model's two INT32[1,16] inputs, binary tensor extension) at the same offered rate, in the same run.
//
// What is compared is the marginal cost of a request: each tool runs once short and once three times as long, and
// the difference in CPU time is divided by the difference in requests, so that process start, module loading and
// JIT warm-up (which wrk does not have) fall out.
//
// The rate is set by the server, not by the tools: a stub server answers every request after a fixed delay, so
// C requests in flight make about C / delay requests per second whichever tool keeps them in flight, as long as the
// tool keeps up. The stub counts the requests it answers; each tool runs as a child process, and its CPU time
// (user + system, from the shell's `times`, process start included) is divided by that count. Runs alternate
// between the tools; medians are reported with the ratios to wrk and to loadgen.mjs.
//
//   node bench/perf-loadgen.mjs [--rounds 3] [--duration 2]   (whole seconds: wrk takes no fractions) [--concurrency 16] [--delay-ms 8]

import http from 'node:http';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values: a } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '16' },
    'delay-ms': { type: 'string', default: '8' },
  },
});
const rounds = Number(a.rounds);
const duration = Number(a.duration);
const concurrency = Number(a.concurrency);
const delayMs = Number(a['delay-ms']);

// The request nereid perf sends for `simple` with --input-data zero, built here the same way for the others.
const header = Buffer.from(JSON.stringify({
  inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, shape: [1, 16], datatype: 'INT32', parameters: { binary_data_size: 64 } })),
  outputs: ['OUTPUT0', 'OUTPUT1'].map((name) => ({ name, parameters: { binary_data: true } })),
}));
const body = Buffer.concat([header, Buffer.alloc(128)]);
const resHeader = Buffer.from(JSON.stringify({ model_name: 'simple', model_version: '1', outputs: ['OUTPUT0', 'OUTPUT1'].map((name) => ({ name, datatype: 'INT32', shape: [1, 16], parameters: { binary_data_size: 64 } })) }));
const resBody = Buffer.concat([resHeader, Buffer.alloc(128)]);
const metadata = JSON.stringify({ name: 'simple', versions: ['1'], platform: 'onnxruntime_onnx', inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'INT32', shape: [-1, 16] })), outputs: ['OUTPUT0', 'OUTPUT1'].map((name) => ({ name, datatype: 'INT32', shape: [-1, 16] })) });
const config = JSON.stringify({ name: 'simple', max_batch_size: 8, input: ['INPUT0', 'INPUT1'].map((name) => ({ name, data_type: 'TYPE_INT32', dims: [16] })), output: [] });

let answered = 0;
const server = http.createServer((req, res) => {
  if (req.method === 'POST') {
    req.resume();
    req.on('end', () => setTimeout(() => {
      answered++;
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': resHeader.length, 'Content-Length': resBody.length });
      res.end(resBody);
    }, delayMs));
    return;
  }
  const text = req.url === '/v2/models/simple' ? metadata : req.url === '/v2/models/simple/config' ? config : undefined;
  res.writeHead(text ? 200 : 404, { 'Content-Type': 'application/json' });
  res.end(text ?? '{"error":"not found"}');
});
server.keepAliveTimeout = 60_000;
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const port = server.address().port;
const url = `http://127.0.0.1:${port}/v2/models/simple/infer`;

const dir = mkdtempSync(join(tmpdir(), 'nereid-bench-loadgen-'));
const bodyFile = join(dir, 'body.bin');
writeFileSync(bodyFile, body);
const lua = join(dir, 'post.lua');
writeFileSync(lua, `local f = io.open("${bodyFile}", "rb")\nwrk.method = "POST"\nwrk.body = f:read("*all")\nf:close()\nwrk.headers["Content-Type"] = "application/octet-stream"\nwrk.headers["Inference-Header-Content-Length"] = "${header.length}"\n`);

const tools = {
  wrk: (d) => ['/usr/bin/wrk', '-t1', `-c${concurrency}`, `-d${d}s`, '-s', lua, url],
  'loadgen.mjs': (d) => [process.execPath, join(ROOT, 'bench', 'loadgen.mjs'), '--url', url, '--body', bodyFile, '--header', 'content-type: application/octet-stream', '--header', `inference-header-content-length: ${header.length}`, '-c', String(concurrency), '-d', String(d), '--warmup', '0', '--verify-every', '1000000000'],
  'nereid perf': (d) => [process.execPath, join(ROOT, 'bin', 'nereid.js'), 'perf', '-m', 'simple', '-u', `127.0.0.1:${port}`, '--input-data', 'zero', '--concurrency-range', String(concurrency), '-p', String(Math.round((d * 1000) / 3)), '-r', '3', '-s', '100'],
};

/** Runs one tool under bash and returns its children's CPU seconds (user + system) from `times`. */
function run(argv) {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/bash', ['-c', '"$@" > /dev/null 2>&1; code=$?; times; exit $code', 'bash', ...argv], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (b) => (out += b));
    child.on('exit', (code) => {
      const lines = out.trim().split('\n');
      const m = /(\d+)m([\d.]+)s (\d+)m([\d.]+)s/.exec(lines.at(-1) ?? '');
      if (code !== 0 || !m) return reject(new Error(`${argv[0]} failed (${code}): ${out}`));
      resolve(Number(m[1]) * 60 + Number(m[2]) + Number(m[3]) * 60 + Number(m[4]));
    });
  });
}

const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const results = Object.fromEntries(Object.keys(tools).map((k) => [k, []]));
const load = [loadavg()[0]];
async function measured(argv) {
  answered = 0;
  const t0 = Date.now();
  const cpu = await run(argv);
  return { cpu, requests: answered, secs: (Date.now() - t0) / 1000 };
}

for (let r = 0; r < rounds; r++) {
  for (const [name, argv] of Object.entries(tools)) {
    const short = await measured(argv(duration));
    const long = await measured(argv(3 * duration));
    const us = ((long.cpu - short.cpu) * 1e6) / (long.requests - short.requests);
    results[name].push({ usPerRequest: us, requests: long.requests - short.requests, rate: (long.requests - short.requests) / (2 * duration) });
    process.stderr.write(`round ${r + 1} ${name}: ${long.requests - short.requests} more requests for ${((long.cpu - short.cpu) * 1000).toFixed(0)} ms more CPU: ${us.toFixed(1)} µs per request\n`);
  }
  load.push(loadavg()[0]);
}
server.close();
server.closeAllConnections();
rmSync(dir, { recursive: true, force: true });

console.log(`\nClient CPU per request at ~${Math.round(concurrency / (delayMs / 1000))} requests/sec offered (concurrency ${concurrency}, server delay ${delayMs} ms), median of ${rounds}:`);
const med = Object.fromEntries(Object.entries(results).map(([k, v]) => [k, median(v.map((x) => x.usPerRequest))]));
for (const [k, v] of Object.entries(results)) {
  console.log(`  ${k.padEnd(12)} ${med[k].toFixed(1).padStart(7)} µs/request   (runs: ${v.map((x) => x.usPerRequest.toFixed(1)).join(', ')}; ${Math.round(median(v.map((x) => x.rate)))} requests/sec in the steady state)`);
}
console.log(`  nereid perf / wrk:         ${(med['nereid perf'] / med.wrk).toFixed(2)}`);
console.log(`  nereid perf / loadgen.mjs: ${(med['nereid perf'] / med['loadgen.mjs']).toFixed(2)}`);
console.log(`  1-minute load average during the run: ${load.map((x) => x.toFixed(2)).join(' → ')} (2 cores)`);
