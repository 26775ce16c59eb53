#!/usr/bin/env node
// The llamacpp backend's cost, in two parts.
// 1. Streaming overhead: tokens/s and time to first token through Nereid's OpenAI endpoint (/v1/completions,
//    stream) vs node-llama-cpp called in this process (LlamaCompletion on a context sequence, as the backend
//    uses it), at concurrency 1 and 4, greedy, on the example tiny_llm. Goal: Nereid >= 0.95x node-llama-cpp.
//    The same completions without stream (one answer with the whole text) show the backend's cost apart from
//    one socket write per token.
// 2. Against llama.cpp's own llama-server (when built: node scripts/build-llama-server.mjs), with the same slots
//    (-np 4, the config's parallel) and threads (-t 1), with sampling as OpenAI's default (temperature 1, top_p 1,
//    the whole vocabulary: top_k 0 and llama-server's min_p 0) and with top_k 40: CPU per generated token of each
//    server's process (/proc utime + stime, client excluded) at 1 stream, and aggregate tokens/s at 8 streams.
//    Goals: CPU per token <= 1.5x llama-server's for the same sampling; tokens/s at 8 streams >= 0.6x.
// 3. The LLM APIs over the one chat path: CPU of Nereid's process per request for the same greedy generation of
//    a few tokens through /v1/chat/completions, Anthropic's /v1/messages and the Responses API's /v1/responses
//    (stored, as by default), streamed and whole, as ratios against chat completions: what each API's own
//    request checks, reply shaping and events cost.
// Each run generates a fixed number of tokens (end of sequence ignored). Rounds alternate the paths; figures
// are medians of the rounds; the load average is printed before and after, as two cores are easily shared.
// Nereid runs as `nereid serve` in its own process, as deployed; the client reads the streams with node:http.
// Usage: ./node_modules/.bin/tsc -p . && node bench/llm.mjs [--quick | --dry-run]
// --dry-run runs every part once with a few tokens, to check that the script works; its figures mean nothing.
import { execFileSync, spawn } from 'node:child_process';
import http from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { getLlama, LlamaCompletion, LlamaLogLevel, TokenBias } from 'node-llama-cpp';
import { llamaServerPath } from '../scripts/build-llama-server.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const QUICK = process.argv.includes('--quick');
const DRY = process.argv.includes('--dry-run');
const ROUNDS = DRY ? 1 : QUICK ? 3 : 9;
const TOKENS = DRY ? 8 : 256;
const EXAMPLES = join(ROOT, 'examples/model_repository');
const MODEL = join(EXAMPLES, 'tiny_llm/1/model.gguf');
// As examples/model_repository/tiny_llm/config.pbtxt: threads 1, parallel 4, context_size 1024.
const THREADS = 1;
const PARALLEL = 4;
const CONTEXT = 1024;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// --- node-llama-cpp in this process, set up as the backend sets itself up.
const llama = await getLlama({ gpu: false, build: 'never', usePrebuiltBinaries: true, skipDownload: true, progressLogs: false, maxThreads: 0, logLevel: LlamaLogLevel.warn });
const model = await llama.loadModel({ modelPath: MODEL, gpuLayers: 0 });
const context = await model.createContext({ sequences: PARALLEL, contextSize: CONTEXT, threads: THREADS });
const free = Array.from({ length: PARALLEL }, () => context.getSequence());
// As the backend's ignore_eos: TokenBias.set() skips end-of-generation tokens, so the entry goes in directly.
const noEos = new TokenBias(model.tokenizer);
noEos._biases.set(model.tokens.eos, -Infinity);

async function inProcess(i) {
  const sequence = free.pop();
  const completion = new LlamaCompletion({ contextSequence: sequence });
  const prompt = 1 + model.tokenize(`Story ${i}`, false, 'trimLeadingSpace').length; // with the BOS token
  const t0 = performance.now();
  let first = 0;
  const result = await completion.generateCompletionWithMeta(`Story ${i}`, {
    maxTokens: TOKENS, temperature: 0, tokenBias: noEos, repeatPenalty: false, disableContextShift: true,
    onTextChunk: () => (first ||= performance.now() - t0),
  });
  // Counted as the backend counts: the last token drawn is not evaluated into the sequence.
  const tokens = result.metadata.stopReason === 'maxTokens' ? TOKENS : sequence.contextTokens.length - prompt + 1;
  completion.dispose({ disposeSequence: false });
  await sequence.clearHistory();
  free.push(sequence);
  return { tokens, first };
}

let engine;

// --- Nereid: `nereid serve` in its own process, as it is deployed, with the OpenAI frontend on a free port.
const nereidProcess = spawn(process.execPath, [join(ROOT, 'bin/nereid.js'), 'serve', '--model-repository', EXAMPLES, '--model-control-mode=explicit',
  '--load-model=tiny_llm', '--http-port=0', '--http-address=127.0.0.1', '--allow-grpc=false', '--allow-metrics=false', '--openai-port=0'], { stdio: ['ignore', 'pipe', 'pipe'] });
// The servers this script starts go with it, also when it fails half-way.
process.on('exit', () => {
  nereidProcess.kill('SIGKILL');
  engine?.kill('SIGKILL');
});
const openAiPort = await new Promise((resolve, reject) => {
  let out = '';
  const onData = (b) => {
    out += b.toString();
    const m = /Started OpenAI-compatible service at [^:]+:(\d+)/.exec(out);
    if (m) resolve(Number(m[1]));
  };
  nereidProcess.stdout.on('data', onData);
  nereidProcess.stderr.on('data', onData);
  nereidProcess.once('exit', (code) => reject(new Error(`nereid exited with ${code}:\n${out}`)));
});

// A connection per stream, as each server closes idle ones its own way.

/**
 * Streams one OpenAI completion over node:http (lighter than fetch, so that the client's own work weighs as
 * little as it can on two cores); its generated tokens (from the usage chunk) and the time to the first text.
 */
function openAiStream(port, body, path = '/v1/completions') {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let first = 0;
    let tail = '';
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        first ||= performance.now() - t0;
        tail = (tail + chunk).slice(-4000);
      });
      res.on('end', () => {
        // The last count: a stream of Anthropic's events says 0 in message_start before the real count.
        const m = [...tail.matchAll(/"(?:completion|output)_tokens":\s*(\d+)/g)].at(-1);
        resolve({ tokens: m ? Number(m[1]) : 0, first });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const completionBody = (modelName, i) => ({ model: modelName, prompt: `Story ${i}`, max_tokens: TOKENS, ignore_eos: true, temperature: 0, stream: true, stream_options: { include_usage: true } });
const nereid = (i) => openAiStream(openAiPort, completionBody('tiny_llm', i));
// The same without stream: one answer with the whole text, so no write per token; its "TTFT" is the whole time.
const nereidWhole = (i) => openAiStream(openAiPort, { ...completionBody('tiny_llm', i), stream: false, stream_options: undefined });

// --- llama-server, when built.
let llamaServer;
let llamaServerPort;
const { bin } = llamaServerPath();
if (existsSync(bin)) {
  const port = await new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const p = srv.address().port;
      srv.close(() => resolve(p));
    });
  });
  engine = spawn(bin, ['-m', MODEL, '--host', '127.0.0.1', '--port', String(port), '-t', String(THREADS), '-c', String(CONTEXT * PARALLEL), '-np', String(PARALLEL), '--no-webui'], { stdio: 'ignore' });
  for (let i = 0; ; i++) {
    if (await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)) break;
    if (i > 300) throw new Error('llama-server did not start');
    await sleep(100);
  }
  llamaServer = (i) => openAiStream(port, completionBody('tiny', i));
  llamaServerPort = port;
}

/** tokens/s of `concurrency` streams at once, and their median time to first token. */
async function round(run, concurrency, seed) {
  const t0 = performance.now();
  const rs = await Promise.all(Array.from({ length: concurrency }, (_, k) => run(seed * 10 + k)));
  const seconds = (performance.now() - t0) / 1000;
  const tokens = rs.reduce((n, r) => n + r.tokens, 0);
  return { tps: tokens / seconds, ttft: median(rs.map((r) => r.first)), tokens };
}

const paths = [['node-llama-cpp', inProcess], ['Nereid OpenAI', nereid], ['Nereid OpenAI no stream', nereidWhole], ...(llamaServer ? [['llama-server', llamaServer]] : [])];
for (const [, run] of paths) await round(run, 2, 0); // warm-up
console.log(`load average before: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
console.log(`== llamacpp backend: ${TOKENS} tokens per stream, tiny_llm, ${THREADS} thread, ${PARALLEL} sequences; medians of ${ROUNDS} alternating rounds ==`);
if (!llamaServer) console.log('(llama-server not built: node scripts/build-llama-server.mjs to add it)');
for (const c of [1, 4]) {
  const results = new Map(paths.map(([name]) => [name, []]));
  for (let i = 0; i < ROUNDS; i++) {
    const order = i % 2 === 0 ? paths : [...paths].reverse();
    for (const [name, run] of order) results.get(name).push(await round(run, c, i + 1));
  }
  const summary = new Map([...results].map(([name, rs]) => [name, { tps: median(rs.map((r) => r.tps)), ttft: median(rs.map((r) => r.ttft)) }]));
  const base = summary.get('node-llama-cpp');
  const line = [...summary].map(([name, s]) => `${name} ${s.tps.toFixed(0)} tok/s (TTFT ${s.ttft.toFixed(2)} ms)`).join(', ');
  const ratio = summary.get('Nereid OpenAI').tps / base.tps;
  console.log(`c=${c}: ${line}`);
  console.log(`  Nereid / node-llama-cpp: ${ratio.toFixed(3)} ${ratio >= 0.95 ? 'pass' : 'FAIL'} (goal >= 0.95); TTFT ${(summary.get('Nereid OpenAI').ttft - base.ttft).toFixed(2)} ms more`);
  console.log(`  Nereid without stream / node-llama-cpp: ${(summary.get('Nereid OpenAI no stream').tps / base.tps).toFixed(3)}`);
  if (summary.has('llama-server')) console.log(`  Nereid / llama-server: ${(summary.get('Nereid OpenAI').tps / summary.get('llama-server').tps).toFixed(3)}`);
  for (const [name, rs] of results) {
    const off = rs.map((r) => r.tokens).filter((n) => n !== TOKENS * c);
    if (off.length > 0) console.log(`  note: ${name} rounds streamed ${off.join(', ')} tokens instead of ${TOKENS * c}`);
  }
}

// --- Part 2: sampling settings against llama-server, CPU per token of each server's own process.
const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
/** CPU milliseconds a process has used (user + system), from /proc: the server's own work, not the client's. */
function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}
const SAMPLINGS = [
  ['whole vocabulary', { temperature: 1, top_p: 1, top_k: 0, min_p: 0 }],
  ['top_k 40', { temperature: 1, top_p: 1, top_k: 40, min_p: 0 }],
];
const sampled = (port, modelName, settings) => (i) => openAiStream(port, { ...completionBody(modelName, i), ...settings, seed: i });

/** A round of `concurrency` streams: tokens/s, and the server process's CPU milliseconds per token. */
async function cpuRound(run, pid, concurrency, seed) {
  const c0 = cpuMs(pid);
  const r = await round(run, concurrency, seed);
  return { ...r, cpu: (cpuMs(pid) - c0) / r.tokens };
}

if (llamaServer) {
  console.log(`== against llama-server: ${PARALLEL} slots, ${THREADS} thread; CPU per token of each server process; medians of ${ROUNDS} alternating rounds ==`);
  for (const [label, settings] of SAMPLINGS) {
    const servers = [['Nereid', sampled(openAiPort, 'tiny_llm', settings), nereidProcess.pid], ['llama-server', sampled(llamaServerPort, 'tiny', settings), engine.pid]];
    for (const [, run] of servers) await round(run, 2, 0); // warm-up
    for (const c of [1, 8]) {
      const results = new Map(servers.map(([name]) => [name, []]));
      for (let i = 0; i < ROUNDS; i++) {
        const order = i % 2 === 0 ? servers : [...servers].reverse();
        for (const [name, run, pid] of order) results.get(name).push(await cpuRound(run, pid, c, i + 1));
      }
      const m = new Map([...results].map(([name, rs]) => [name, { tps: median(rs.map((r) => r.tps)), cpu: median(rs.map((r) => r.cpu)), ttft: median(rs.map((r) => r.ttft)) }]));
      const n = m.get('Nereid');
      const l = m.get('llama-server');
      const cpuRatio = n.cpu / l.cpu;
      const tpsRatio = n.tps / l.tps;
      console.log(`${label}, c=${c}: Nereid ${n.tps.toFixed(0)} tok/s, ${n.cpu.toFixed(3)} ms CPU/token (TTFT ${n.ttft.toFixed(1)} ms); llama-server ${l.tps.toFixed(0)} tok/s, ${l.cpu.toFixed(3)} ms CPU/token (TTFT ${l.ttft.toFixed(1)} ms)`);
      const goal = c === 1 ? `CPU/token ${cpuRatio.toFixed(2)}x ${cpuRatio <= 1.5 ? 'pass' : 'FAIL'} (goal <= 1.5x)` : `CPU/token ${cpuRatio.toFixed(2)}x`;
      const tpsGoal = c === 8 ? ` ${tpsRatio >= 0.6 ? 'pass' : 'FAIL'} (goal >= 0.6x)` : '';
      console.log(`  Nereid / llama-server: ${goal}; tokens/s ${tpsRatio.toFixed(2)}x${tpsGoal}`);
    }
  }
}

// --- Part 3: the LLM APIs over the same chat path, CPU of Nereid's process per request.
const API_TOKENS = DRY ? 4 : 16;
const API_REQUESTS = DRY ? 2 : 40;
const conversation = (i) => [{ role: 'user', content: `Story ${i}` }];
const APIS = [
  ['chat/completions', '/v1/chat/completions', (i, stream) => ({ model: 'tiny_llm', messages: conversation(i), max_tokens: API_TOKENS, temperature: 0, stream, ...(stream ? { stream_options: { include_usage: true } } : {}) })],
  ['messages', '/v1/messages', (i, stream) => ({ model: 'tiny_llm', messages: conversation(i), max_tokens: API_TOKENS, temperature: 0, stream })],
  ['responses', '/v1/responses', (i, stream) => ({ model: 'tiny_llm', input: `Story ${i}`, max_output_tokens: API_TOKENS, temperature: 0, stream })],
];

/** API_REQUESTS requests one after the other: the server's CPU milliseconds per request, and tokens per request. */
async function apiRound(path, body, stream, seed) {
  const c0 = cpuMs(nereidProcess.pid);
  let tokens = 0;
  for (let k = 0; k < API_REQUESTS; k++) tokens += (await openAiStream(openAiPort, body(seed * 100 + k, stream), path)).tokens;
  return { cpu: (cpuMs(nereidProcess.pid) - c0) / API_REQUESTS, tokens: tokens / API_REQUESTS };
}

console.log(`== the LLM APIs: ${API_TOKENS} tokens at most per request (greedy, the same conversation), ${API_REQUESTS} requests a round; CPU of Nereid's process per request; medians of ${ROUNDS} alternating rounds ==`);
for (const stream of [true, false]) {
  for (const [, path, body] of APIS) await apiRound(path, body, stream, 0); // warm-up
  const results = new Map(APIS.map(([name]) => [name, []]));
  for (let i = 0; i < ROUNDS; i++) {
    const order = i % 2 === 0 ? APIS : [...APIS].reverse();
    for (const [name, path, body] of order) results.get(name).push(await apiRound(path, body, stream, i % 2));
  }
  const m = new Map([...results].map(([name, rs]) => [name, { cpu: median(rs.map((r) => r.cpu)), tokens: median(rs.map((r) => r.tokens)) }]));
  const chat = m.get('chat/completions');
  const line = [...m].map(([name, r]) => `${name} ${r.cpu.toFixed(3)} ms (${r.tokens.toFixed(1)} tokens)${name === 'chat/completions' ? '' : ` ${(r.cpu / chat.cpu).toFixed(3)}x`}`).join(', ');
  console.log(`${stream ? 'streamed' : 'whole'}: CPU per request ${line}`);
}
console.log(`load average after: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
nereidProcess.kill('SIGTERM');
engine?.kill('SIGKILL');
await context.dispose();
await model.dispose();
