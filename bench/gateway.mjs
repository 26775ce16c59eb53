#!/usr/bin/env node
// The gateway backend's cost: tokens/s streaming through Nereid (backend "openai") vs straight to the same
// llama-server, at concurrency 1 and 8, on the tiny example LLM with a fixed number of generated tokens (end of
// sequence ignored, greedy), one llama.cpp thread, 8 parallel slots. Nereid runs as it is deployed, `nereid
// serve` in its own process, and starts the engine itself (the llama-server preset); the direct path talks to
// that same engine process on the port Nereid gave it. Nereid is measured on both of its streaming surfaces:
// its OpenAI endpoint (/v1/completions, the same request the direct path sends) and Triton's generate_stream.
// One client, node:http without keep-alive (llama-server closes each stream's connection anyway), the same code
// for every path. Rounds rotate the order of the paths; figures are medians of the rounds and their ratio.
// Goals: tokens/s ≥ 0.95× direct, time to first token within 1 ms of direct. At 8 streams the engine takes the
// first request that reaches it into a batch of its own and the others into the next, direct or not, so the
// streams' first tokens fall into two groups; the fastest and slowest (medians over rounds) show where they fell. CPU per token is each process's
// own (utime + stime from /proc): the engine's, and the hop's (the pipe proxy's, or Nereid's).
// --model-width W --model-layers L: a larger model of the same kind instead (made by scripts/models/make_tiny_llm.py
// in a temporary folder), so that a token takes as long as a small real model's and the hop's fixed cost per token
// is seen against a realistic engine time (the tiny model runs at thousands of tokens/s on one thread).
// Needs llama-server (node scripts/build-llama-server.mjs).
// Usage: ./node_modules/.bin/tsc -p . && node bench/gateway.mjs [--quick] [--tokens N] [--rounds N]
//        [--model-width 512 --model-layers 8]
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
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

const children = [];
const repo = mkdtempSync(join(tmpdir(), 'nereid-bench-gateway-'));
let enginePid = 0;
// The servers this script starts go with it, also when it fails half-way: Nereid's engine with its group.
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
  if (enginePid) {
    try {
      process.kill(-enginePid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
  rmSync(repo, { recursive: true, force: true });
});

const SLOTS = 8;
mkdirSync(join(repo, 'llm', '1'), { recursive: true });
const WIDTH = arg('--model-width', 0);
if (WIDTH > 0) {
  const made = spawnSync('/usr/bin/python3', [join(ROOT, 'scripts/models/make_tiny_llm.py'), join(repo, 'llm', '1', 'model.gguf'),
    '--width', String(WIDTH), '--layers', String(arg('--model-layers', 8))], { stdio: 'inherit' });
  if (made.status !== 0) process.exit(1);
} else {
  copyFileSync(MODEL, join(repo, 'llm', '1', 'model.gguf'));
}
writeFileSync(join(repo, 'llm', 'config.pbtxt'), `name: "llm"
backend: "openai"
max_batch_size: 0
model_transaction_policy { decoupled: true }
parameters { key: "engine" value { string_value: "llama-server" } }
parameters { key: "engine_binary" value { string_value: "${bin}" } }
parameters { key: "engine_args" value { string_value: "-t 1 -c ${512 * SLOTS} -np ${SLOTS} --no-webui" } }
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
    found.engine ??= /started the engine \(pid (\d+)\) on 127\.0\.0\.1:(\d+)/.exec(out)?.slice(1);
    if (found.http && found.openai && found.engine) {
      nereid.stdout.off('data', onData);
      nereid.stderr.off('data', onData);
      // Nereid's log (and the engine's output in it) is not read further: drained, not kept.
      nereid.stdout.resume();
      nereid.stderr.resume();
      resolve({ http: Number(found.http), openai: Number(found.openai), enginePid: Number(found.engine[0]), engine: Number(found.engine[1]) });
    }
  };
  nereid.stdout.on('data', onData);
  nereid.stderr.on('data', onData);
  nereid.once('exit', (code) => reject(new Error(`nereid exited with ${code}:\n${out}`)));
});
enginePid = ports.enginePid;
const enginePort = ports.engine;
for (let i = 0; ; i++) {
  if (await fetch(`http://127.0.0.1:${ports.http}/v2/models/llm/ready`).then((r) => r.ok, () => false)) break;
  if (i > 600) throw new Error('the gateway model did not become ready');
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
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

/**
 * tokens/s of `concurrency` streams at once, their median time to first token, and the CPU seconds llama-server,
 * Nereid and the pipe proxy used meanwhile.
 */
async function round(run, concurrency, seed) {
  const cpu = () => [cpuSeconds(enginePid), cpuSeconds(nereid.pid), cpuSeconds(proxy.pid)];
  const c0 = cpu();
  const t0 = performance.now();
  const rs = await Promise.all(Array.from({ length: concurrency }, (_, k) => run(seed * 10 + k)));
  const seconds = (performance.now() - t0) / 1000;
  const c1 = cpu();
  const tokens = rs.reduce((n, r) => n + r.tokens, 0);
  const firsts = rs.map((r) => r.first).sort((a, b) => a - b);
  return { tps: tokens / seconds, ttft: median(firsts), fastest: firsts[0], slowest: firsts[firsts.length - 1], tokens, engineCpu: c1[0] - c0[0], nereidCpu: c1[1] - c0[1], proxyCpu: c1[2] - c0[2] };
}
const sum = (xs) => xs.reduce((a, b) => a + b, 0);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

for (const [, run] of paths) await round(run, 2, 0); // warm-up
const load0 = loadavg();
console.log(`== gateway: ${TOKENS} tokens per stream, ${WIDTH > 0 ? `a random-weight model of width ${WIDTH} and ${arg("--model-layers", 8)} layers` : "tiny_llm"}, llama-server -t 1 -np ${SLOTS} started by Nereid; medians of ${ROUNDS} rounds, order rotating ==`);
/** The hop's own CPU on each path: none direct, the pipe proxy's, Nereid's. */
const hopCpu = { direct: () => 0, 'pipe proxy': (r) => r.proxyCpu, 'nereid openai': (r) => r.nereidCpu, 'nereid generate_stream': (r) => r.nereidCpu };
const table = [];
for (const c of [1, SLOTS]) {
  const results = new Map(paths.map(([name]) => [name, []]));
  for (let i = 0; i < ROUNDS; i++) {
    for (let k = 0; k < paths.length; k++) {
      const [name, run] = paths[(i + k) % paths.length];
      results.get(name).push(await round(run, c, i + 1));
    }
  }
  const d = { tps: median(results.get('direct').map((r) => r.tps)), ttft: median(results.get('direct').map((r) => r.ttft)) };
  for (const [name, rs] of results) {
    const tokens = sum(rs.map((r) => r.tokens));
    const tps = median(rs.map((r) => r.tps));
    const ttft = median(rs.map((r) => r.ttft));
    const off = rs.map((r) => r.tokens).filter((n) => n !== TOKENS * c);
    table.push({
      streams: c, path: name, 'tok/s': tps.toFixed(0), 'x direct': (tps / d.tps).toFixed(3), 'TTFT ms': ttft.toFixed(2), 'TTFT +ms': (ttft - d.ttft).toFixed(2),
      ...(c > 1 ? { 'TTFT fastest..slowest': `${median(rs.map((r) => r.fastest)).toFixed(0)}..${median(rs.map((r) => r.slowest)).toFixed(0)}` } : {}),
      'engine µs/tok': (1e6 * sum(rs.map((r) => r.engineCpu)) / tokens).toFixed(0), 'hop µs/tok': (1e6 * sum(rs.map(hopCpu[name])) / tokens).toFixed(0),
      goals: name === 'direct' ? '' : `${tps / d.tps >= 0.95 ? 'pass' : 'FAIL'} tok/s, ${ttft - d.ttft <= 1 ? 'pass' : 'FAIL'} TTFT${off.length ? `; ${off.length} rounds short of ${TOKENS * c} tokens` : ''}`,
    });
  }
}
console.table(table);
const load1 = loadavg();
console.log(`load average (1, 5, 15 min): ${load0.map((x) => x.toFixed(2)).join(' ')} before, ${load1.map((x) => x.toFixed(2)).join(' ')} after; ${cpus().length} CPUs`);
// Nereid stops the engine it started (SIGTERM, then its group): no llama-server is left behind.
nereid.kill('SIGTERM');
await new Promise((resolve) => nereid.once('exit', resolve));
process.exit(0);
