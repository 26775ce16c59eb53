#!/usr/bin/env node
// The gateway backend's cost: tokens/s streaming through Nereid (backend "openai") vs straight to the same
// llama-server, at concurrency 1 and 4, on the tiny example LLM with a fixed number of generated tokens (end of
// sequence ignored, greedy), one llama.cpp thread, 4 parallel slots. Nereid runs as it is deployed, `nereid
// serve` in its own process, and is measured on both of its streaming surfaces: its OpenAI endpoint
// (/v1/completions, the same request the direct path sends) and Triton's generate_stream. One client, node:http
// without keep-alive (llama-server closes each stream's connection anyway), the same code for every path.
// Rounds rotate the order of the paths; figures are medians of the rounds and their ratio. Goal: ≥ 0.95×.
// Needs llama-server (node scripts/build-llama-server.mjs).
// Usage: ./node_modules/.bin/tsc -p . && node bench/gateway.mjs [--quick] [--tokens N] [--rounds N]
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { llamaServerPath } from '../scripts/build-llama-server.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const QUICK = process.argv.includes('--quick');
const ROUNDS = arg('--rounds', QUICK ? 3 : 9);
const TOKENS = arg('--tokens', 128);
const MODEL = join(ROOT, 'examples/model_repository/tiny_llm/1/model.gguf');

const { bin } = llamaServerPath();
if (!existsSync(bin)) {
  console.error('llama-server is not built: node scripts/build-llama-server.mjs');
  process.exit(1);
}

function freePort() {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const children = [];
const repo = mkdtempSync(join(tmpdir(), 'nereid-bench-gateway-'));
// The servers this script starts go with it, also when it fails half-way.
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(repo, { recursive: true, force: true });
});

const enginePort = await freePort();
const engine = spawn(bin, ['-m', MODEL, '--host', '127.0.0.1', '--port', String(enginePort), '-t', '1', '-c', '4096', '-np', '4', '--no-webui'], { stdio: 'ignore' });
children.push(engine);
for (let i = 0; ; i++) {
  if (await fetch(`http://127.0.0.1:${enginePort}/health`).then((r) => r.ok, () => false)) break;
  if (i > 300) throw new Error('llama-server did not start');
  await sleep(100);
}

mkdirSync(join(repo, 'llm', '1'), { recursive: true });
writeFileSync(join(repo, 'llm', 'config.pbtxt'), `name: "llm"
backend: "openai"
max_batch_size: 0
model_transaction_policy { decoupled: true }
parameters { key: "base_url" value { string_value: "http://127.0.0.1:${enginePort}" } }
parameters { key: "model_id" value { string_value: "tiny" } }
`);
const nereid = spawn(process.execPath, [join(ROOT, 'bin/nereid.js'), 'serve', '--model-repository', repo, '--http-port=0', '--http-address=127.0.0.1',
  '--allow-grpc=false', '--allow-metrics=false', '--openai-port=0', '--openai-address=127.0.0.1'], { stdio: ['ignore', 'pipe', 'pipe'] });
children.push(nereid);
const ports = await new Promise((resolve, reject) => {
  let out = '';
  const found = {};
  const onData = (b) => {
    out += b.toString();
    found.http ??= /Started HTTPService at [^:]+:(\d+)/.exec(out)?.[1];
    found.openai ??= /Started OpenAI-compatible service at [^:]+:(\d+)/.exec(out)?.[1];
    if (found.http && found.openai) resolve({ http: Number(found.http), openai: Number(found.openai) });
  };
  nereid.stdout.on('data', onData);
  nereid.stderr.on('data', onData);
  nereid.once('exit', (code) => reject(new Error(`nereid exited with ${code}:\n${out}`)));
});
for (let i = 0; ; i++) {
  if (await fetch(`http://127.0.0.1:${ports.http}/v2/models/llm/ready`).then((r) => r.ok, () => false)) break;
  if (i > 300) throw new Error('the gateway model did not become ready');
  await sleep(50);
}

// The yardstick: a minimal pass-through proxy in Node (bench/proxy-reference-server.mjs), the cost of one more
// hop with nothing else.
const proxy = spawn(process.execPath, [join(ROOT, 'bench/proxy-reference-server.mjs'), '--engine', `http://127.0.0.1:${enginePort}`], { stdio: ['ignore', 'pipe', 'inherit'] });
children.push(proxy);
const proxyPort = await new Promise((resolve) => proxy.stdout.once('data', (b) => resolve(Number(b.toString().trim()))));

/**
 * Streams one request and resolves with its generated tokens (the usage's completion_tokens, the last one
 * seen) and the time to the first byte of generated text.
 */
function stream(port, path, body) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let first = 0;
    let tail = '';
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`${path}: HTTP ${res.statusCode}`));
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        first ||= performance.now() - t0;
        tail = (tail + chunk).slice(-2000);
      });
      res.on('end', () => {
        const all = [...tail.matchAll(/"completion_tokens":\s*(\d+)/g)];
        resolve({ tokens: all.length ? Number(all[all.length - 1][1]) : 0, first });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const completion = (model, i) => ({ model, prompt: `Story ${i}`, max_tokens: TOKENS, ignore_eos: true, temperature: 0, stream: true, stream_options: { include_usage: true } });
const paths = [
  ['direct', (i) => stream(enginePort, '/v1/completions', completion('tiny', i))],
  ['pipe proxy', (i) => stream(proxyPort, '/v1/completions', completion('tiny', i))],
  ['nereid openai', (i) => stream(ports.openai, '/v1/completions', completion('llm', i))],
  ['nereid generate_stream', (i) => stream(ports.http, '/v2/models/llm/generate_stream', { text_input: `Story ${i}`, max_tokens: TOKENS, ignore_eos: true, temperature: 0 })],
];

/** CPU seconds a process has used, all its threads (utime + stime from /proc, in clock ticks of 10 ms). */
function cpuSeconds(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').slice(readFileSync(`/proc/${pid}/stat`, 'utf8').lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

/**
 * tokens/s of `concurrency` streams at once, their median time to first token, and the CPU seconds llama-server
 * and Nereid used meanwhile.
 */
async function round(run, concurrency, seed) {
  const e0 = cpuSeconds(engine.pid);
  const n0 = cpuSeconds(nereid.pid) + cpuSeconds(proxy.pid);
  const t0 = performance.now();
  const rs = await Promise.all(Array.from({ length: concurrency }, (_, k) => run(seed * 10 + k)));
  const seconds = (performance.now() - t0) / 1000;
  const tokens = rs.reduce((n, r) => n + r.tokens, 0);
  return { tps: tokens / seconds, ttft: median(rs.map((r) => r.first)), tokens, engineCpu: cpuSeconds(engine.pid) - e0, proxyCpu: cpuSeconds(nereid.pid) + cpuSeconds(proxy.pid) - n0 };
}
const sum = (xs) => xs.reduce((a, b) => a + b, 0);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

for (const [, run] of paths) await round(run, 2, 0); // warm-up
const load0 = loadavg()[0];
console.log(`== gateway: ${TOKENS} tokens per stream, tiny_llm, llama-server -t 1 -np 4; medians of ${ROUNDS} rounds, order rotating ==`);
for (const c of [1, 4]) {
  const results = new Map(paths.map(([name]) => [name, []]));
  for (let i = 0; i < ROUNDS; i++) {
    for (let k = 0; k < paths.length; k++) {
      const [name, run] = paths[(i + k) % paths.length];
      results.get(name).push(await round(run, c, i + 1));
    }
  }
  const s = new Map([...results].map(([name, rs]) => [name, { tps: median(rs.map((r) => r.tps)), ttft: median(rs.map((r) => r.ttft)) }]));
  const d = s.get('direct');
  console.log(`c=${c}: ${[...s].map(([name, x]) => `${name} ${x.tps.toFixed(0)} tok/s (TTFT ${x.ttft.toFixed(2)} ms)`).join(', ')}`);
  for (const [name, rs] of results) {
    const tokens = sum(rs.map((r) => r.tokens));
    console.log(`  ${name}: CPU per token, llama-server ${(1e6 * sum(rs.map((r) => r.engineCpu)) / tokens).toFixed(0)} µs, proxy ${(1e6 * sum(rs.map((r) => r.proxyCpu)) / tokens).toFixed(0)} µs`);
  }
  for (const name of ['pipe proxy', 'nereid openai', 'nereid generate_stream']) {
    const ratio = s.get(name).tps / d.tps;
    console.log(`  ${name} / direct: ${ratio.toFixed(3)} ${ratio >= 0.95 ? 'pass' : 'FAIL'} (goal >= 0.95); TTFT +${(s.get(name).ttft - d.ttft).toFixed(2)} ms${name === 'pipe proxy' ? '' : `; vs the pipe proxy ${(s.get(name).tps / s.get('pipe proxy').tps).toFixed(3)}`}`);
  }
  for (const [name, rs] of results) {
    const off = rs.map((r) => r.tokens).filter((n) => n !== TOKENS * c);
    if (off.length > 0) console.log(`  note: ${name} rounds streamed ${off.join(', ')} tokens instead of ${TOKENS * c}`);
  }
}
console.log(`load average ${load0.toFixed(2)} before, ${loadavg()[0].toFixed(2)} after`);
process.exit(0);
