#!/usr/bin/env node
// The gateway backend's cost: tokens/s streaming through Nereid (backend "openai", generate_stream) vs straight
// to the same llama-server (/v1/completions, stream), at concurrency 1 and 4, on the tiny example LLM with a
// fixed number of generated tokens (end of sequence ignored, greedy), one thread, 4 parallel slots. Rounds
// alternate between the two paths; the figures are medians of the rounds and their ratio. Goal: ≥ 0.95×.
// Needs llama-server (node scripts/build-llama-server.mjs).
// Usage: ./node_modules/.bin/tsc -p . && node bench/gateway.mjs [--quick]
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { InferenceServer } from '../dist/src/index.js';
import { startHttpFrontend } from '../dist/src/frontends/http/server.js';
import { createLogger } from '../dist/src/observability/logger.js';
import { llamaServerPath } from '../scripts/build-llama-server.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const QUICK = process.argv.includes('--quick');
const ROUNDS = QUICK ? 3 : 7;
const TOKENS = 64;
const MODEL = join(ROOT, 'examples/model_repository/tiny_llm/1/model.gguf');

const { bin } = llamaServerPath();
if (!existsSync(bin)) {
  console.error(`llama-server is not built: node scripts/build-llama-server.mjs`);
  process.exit(1);
}

async function freePort() {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const port = await freePort();
const engine = spawn(bin, ['-m', MODEL, '--host', '127.0.0.1', '--port', String(port), '-t', '1', '-c', '2048', '-np', '4', '--no-webui'], { stdio: 'ignore' });
for (let i = 0; ; i++) {
  if (await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)) break;
  if (i > 300) throw new Error('llama-server did not start');
  await sleep(100);
}

const repo = mkdtempSync(join(tmpdir(), 'nereid-bench-gateway-'));
mkdirSync(join(repo, 'llm', '1'), { recursive: true });
writeFileSync(join(repo, 'llm', 'config.pbtxt'), `name: "llm"
backend: "openai"
max_batch_size: 0
model_transaction_policy { decoupled: true }
parameters { key: "base_url" value { string_value: "http://127.0.0.1:${port}" } }
parameters { key: "model_id" value { string_value: "tiny" } }
`);
const logger = createLogger({ info: false, warning: true, error: true, verbose: 0, format: 'default', file: '' });
const server = await InferenceServer.create({ modelRepositories: [repo] }, { logger });
const http = await startHttpFrontend(server, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20 }, logger);

/** Streams one completion; resolves with its generated tokens (from the usage it ends with) and the time to the first text. */
async function stream(url, body) {
  const t0 = performance.now();
  const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  let events = 0;
  let tokens = 0;
  let first = 0;
  let pending = '';
  const decoder = new TextDecoder();
  for await (const chunk of r.body) {
    pending += decoder.decode(chunk, { stream: true });
    let i;
    while ((i = pending.indexOf('\n\n')) >= 0) {
      const ev = pending.slice(0, i);
      pending = pending.slice(i + 2);
      if (!ev.startsWith('data: ') || ev === 'data: [DONE]') continue;
      const j = JSON.parse(ev.slice(6));
      const text = j.text_output ?? j.choices?.[0]?.text;
      tokens = j.completion_tokens ?? j.usage?.completion_tokens ?? tokens;
      if (text) {
        if (events === 0) first = performance.now() - t0;
        events++;
      }
    }
  }
  return { events: tokens || events, first };
}

const direct = (i) => stream(`http://127.0.0.1:${port}/v1/completions`, { model: 'tiny', prompt: `Story ${i}`, max_tokens: TOKENS, ignore_eos: true, temperature: 0, stream: true, stream_options: { include_usage: true } });
const proxied = (i) => stream(`http://127.0.0.1:${http.port}/v2/models/llm/generate_stream`, { text_input: `Story ${i}`, max_tokens: TOKENS, ignore_eos: true, temperature: 0 });

/** tokens/s of `concurrency` streams at once, and their median time to first token. */
async function round(run, concurrency, seed) {
  const t0 = performance.now();
  const rs = await Promise.all(Array.from({ length: concurrency }, (_, k) => run(seed * 10 + k)));
  const seconds = (performance.now() - t0) / 1000;
  const tokens = rs.reduce((n, r) => n + r.events, 0);
  return { tps: tokens / seconds, ttft: median(rs.map((r) => r.first)), tokens };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
await round(direct, 2, 0);
await round(proxied, 2, 0);
console.log(`== gateway: ${TOKENS} tokens per stream, tiny_llm, llama-server -t 1 -np 4; medians of ${ROUNDS} alternating rounds ==`);
for (const c of [1, 4]) {
  const d = [];
  const p = [];
  for (let i = 0; i < ROUNDS; i++) {
    const order = i % 2 === 0 ? [[direct, d], [proxied, p]] : [[proxied, p], [direct, d]];
    for (const [run, out] of order) out.push(await round(run, c, i + 1));
  }
  const dt = median(d.map((r) => r.tps));
  const pt = median(p.map((r) => r.tps));
  const df = median(d.map((r) => r.ttft));
  const pf = median(p.map((r) => r.ttft));
  const ratio = pt / dt;
  console.log(`c=${c}: direct ${dt.toFixed(0)} tok/s (TTFT ${df.toFixed(2)} ms), through Nereid ${pt.toFixed(0)} tok/s (TTFT ${pf.toFixed(2)} ms); ratio ${ratio.toFixed(3)} ${ratio >= 0.95 ? 'pass' : 'FAIL'} (goal >= 0.95)`);
  if (d.some((r) => r.tokens !== TOKENS * c) || p.some((r) => r.tokens !== TOKENS * c)) console.log(`  note: a round streamed a different number of tokens than ${TOKENS * c}`);
}
await server.close();
await http.close();
engine.kill('SIGKILL');
rmSync(repo, { recursive: true, force: true });
