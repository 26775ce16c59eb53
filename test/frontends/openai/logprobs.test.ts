import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';
import type { ChatCompletionTokenLogprob } from 'openai/resources/chat/completions';
import { startOpenAiFrontend, type OpenAiFrontend } from '../../../src/frontends/openai/server.js';
import { createLogger } from '../../../src/observability/logger.js';
import { EXAMPLES } from '../../helpers/paths.js';
import { LLAMA_MODEL, llamaServer } from '../../helpers/llama-server.js';
import { postJson } from '../../helpers/http.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';

// Log probabilities and several choices (`logprobs`, `top_logprobs`, `n`) with the official openai client:
// against the example tiny_llm in process (llama.cpp, random weights) and, through the gateway, against
// llama.cpp's llama-server (built by scripts/build-llama-server.mjs; without it those tests skip, and fail
// under CI).

const { bin, skip, missing } = llamaServer();

let engine: ChildProcess | undefined;
let repo: string | undefined;
let s: TestServer;
let openai: OpenAiFrontend;
let client: OpenAI;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** llama-server on the example GGUF, and a gateway model (remote_llm) in front of it. */
async function startEngine(): Promise<string> {
  const port = await freePort();
  engine = spawn(bin, ['-m', LLAMA_MODEL, '--host', '127.0.0.1', '--port', String(port), '-t', '1', '-c', '1024', '-np', '2', '--no-webui', '--no-warmup'], { stdio: 'ignore' });
  for (let i = 0; !(await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)); i++) {
    if (i > 200) throw new Error('llama-server did not start');
    await sleep(100);
  }
  const dir = await mkdtemp(join(tmpdir(), 'nereid-logprobs-'));
  await mkdir(join(dir, 'remote_llm', '1'), { recursive: true });
  await writeFile(join(dir, 'remote_llm', 'config.pbtxt'), `backend: "openai"
max_batch_size: 0
model_transaction_policy { decoupled: true }
parameters { key: "base_url" value { string_value: "http://127.0.0.1:${port}" } }
parameters { key: "model_id" value { string_value: "tiny" } }
`);
  return dir;
}

before(async () => {
  if (!skip && missing) throw new Error(missing);
  if (!skip) repo = await startEngine();
  s = await startTestServer({ modelRepositories: repo ? [repo, EXAMPLES] : [EXAMPLES], modelControlMode: 'explicit', loadModels: repo ? ['tiny_llm', 'remote_llm'] : ['tiny_llm'] });
  const logger = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
  openai = await startOpenAiFrontend(s.server, { port: 0, address: '127.0.0.1' }, logger);
  client = new OpenAI({ baseURL: `http://127.0.0.1:${openai.port}/v1`, apiKey: 'unused', maxRetries: 0 });
});

after(async () => {
  await s.close();
  await openai.close();
  engine?.kill('SIGKILL');
  if (repo) await rm(repo, { recursive: true, force: true });
});

const messages = [{ role: 'user' as const, content: 'Tell me a story' }];
/** Nereid's ignore_eos (not in the client's types): every answer runs to max_tokens, so counts are exact. */
const EOS = { ignore_eos: true };

/**
 * One token's figures in OpenAI's shape: bytes are its text's UTF-8, its alternatives come likeliest first,
 * and they are probabilities of one distribution (their sum at most 1).
 */
function checkEntry(e: ChatCompletionTokenLogprob, top: number): void {
  assert.equal(typeof e.token, 'string');
  assert.ok(e.logprob <= 0, JSON.stringify(e));
  assert.deepEqual(e.bytes, [...Buffer.from(e.token, 'utf8')]);
  assert.equal(e.top_logprobs.length, top, JSON.stringify(e));
  let sum = 0;
  for (let i = 0; i < e.top_logprobs.length; i++) {
    const t = e.top_logprobs[i]!;
    assert.deepEqual(Object.keys(t).sort(), ['bytes', 'logprob', 'token']);
    if (i > 0) assert.ok(t.logprob <= e.top_logprobs[i - 1]!.logprob, JSON.stringify(e.top_logprobs));
    sum += Math.exp(t.logprob);
  }
  assert.ok(sum <= 1 + 1e-6, `alternatives sum to ${sum}`);
}

/** Under greedy decoding the chosen token is the likeliest: its figure is the first alternative's. */
function checkGreedy(content: readonly ChatCompletionTokenLogprob[]): void {
  for (const e of content) {
    assert.ok(Math.abs(e.logprob - e.top_logprobs[0]!.logprob) < 1e-4, JSON.stringify(e));
    assert.ok(e.logprob >= Math.max(...e.top_logprobs.map((t) => t.logprob)) - 1e-4);
  }
}

test('chat logprobs, whole and streamed: one entry per generated token, in OpenAI\'s shape; greedy picks the likeliest', async () => {
  const ask = { model: 'tiny_llm', messages, max_tokens: 6, temperature: 0, ignore_eos: true, logprobs: true, top_logprobs: 3 } as const;
  const r = await client.chat.completions.create(ask as OpenAI.ChatCompletionCreateParamsNonStreaming);
  const c = r.choices[0]!;
  const content = c.logprobs!.content!;
  assert.equal(c.logprobs!.refusal, null);
  assert.equal(content.length, r.usage!.completion_tokens);
  assert.equal(content.map((e) => e.token).join(''), c.message.content);
  for (const e of content) checkEntry(e, 3);
  checkGreedy(content);
  // Streamed, each chunk carries the figures of the text it carries; together the same as the whole answer's.
  const streamed: ChatCompletionTokenLogprob[] = [];
  let text = '';
  for await (const chunk of await client.chat.completions.create({ ...ask, stream: true } as OpenAI.ChatCompletionCreateParamsStreaming)) {
    const ch = chunk.choices[0];
    if (ch === undefined) continue;
    const piece = ch.delta.content ?? '';
    text += piece;
    const figures = ch.logprobs?.content ?? [];
    assert.equal(figures.map((e) => e.token).join(''), piece);
    streamed.push(...figures);
  }
  assert.equal(text, c.message.content);
  assert.deepEqual(streamed.map((e) => e.token), content.map((e) => e.token));
  streamed.forEach((e, i) => assert.ok(Math.abs(e.logprob - content[i]!.logprob) < 1e-4));
});

test('logprobs without top_logprobs: the chosen tokens alone; not asked, logprobs is null and the model reports none', async () => {
  const r = await client.chat.completions.create({ ...EOS, model: 'tiny_llm', messages, max_tokens: 4, seed: 5, logprobs: true });
  const content = r.choices[0]!.logprobs!.content!;
  assert.equal(content.length, 4);
  for (const e of content) checkEntry(e, 0);
  const plain = await client.chat.completions.create({ ...EOS, model: 'tiny_llm', messages, max_tokens: 4, seed: 5 });
  assert.equal(plain.choices[0]!.logprobs, null);
  assert.equal(plain.choices[0]!.message.content, r.choices[0]!.message.content);
  // KServe's generate carries them as the response parameter `logprobs` (JSON text), only when asked.
  const g = await postJson(`${s.url}/v2/models/tiny_llm/generate`, { text_input: 'Hi', max_tokens: 3, ignore_eos: true, temperature: 0, logprobs: true, top_logprobs: 2 });
  assert.equal(g.status, 200, g.body.toString());
  const figures = JSON.parse(g.json().logprobs) as ChatCompletionTokenLogprob[];
  assert.equal(figures.map((e) => e.token).join(''), g.json().text_output);
  figures.forEach((e) => checkEntry(e, 2));
  const none = await postJson(`${s.url}/v2/models/tiny_llm/generate`, { text_input: 'Hi', max_tokens: 3, ignore_eos: true, temperature: 0 });
  assert.equal(none.json().logprobs, undefined);
  assert.equal(none.json().text_output, g.json().text_output);
});

test('completions logprobs (0 to 5): tokens, token_logprobs, top_logprobs and text_offset, whole and streamed', async () => {
  const ask = { model: 'tiny_llm', prompt: 'Once upon a time', max_tokens: 5, temperature: 0, ignore_eos: true, logprobs: 2 };
  const r = await client.completions.create(ask);
  const c = r.choices[0]!;
  const lp = c.logprobs!;
  assert.equal(lp.tokens!.length, 5);
  assert.equal(lp.tokens!.join(''), c.text);
  assert.equal(lp.token_logprobs!.length, 5);
  let offset = 0;
  lp.tokens!.forEach((t, i) => {
    assert.equal(lp.text_offset![i], offset);
    offset += t.length;
    const top = Object.entries(lp.top_logprobs![i]!);
    assert.ok(top.length >= 1 && top.length <= 2, JSON.stringify(top));
    assert.ok(Math.abs(Math.max(...top.map(([, v]) => v)) - lp.token_logprobs![i]!) < 1e-4);
  });
  const tokens: string[] = [];
  const offsets: number[] = [];
  for await (const chunk of await client.completions.create({ ...ask, stream: true })) {
    tokens.push(...(chunk.choices[0]?.logprobs?.tokens ?? []));
    offsets.push(...(chunk.choices[0]?.logprobs?.text_offset ?? []));
  }
  assert.deepEqual(tokens, lp.tokens);
  assert.deepEqual(offsets, lp.text_offset);
});

test('a stop string ends the figures with the text: the stop string\'s tokens are not reported', async () => {
  const greedy = { model: 'tiny_llm', prompt: 'Once upon a time', max_tokens: 8, temperature: 0, ignore_eos: true, logprobs: 0 };
  const full = (await client.completions.create(greedy)).choices[0]!;
  const tokens = full.logprobs!.tokens!;
  // Stop at the start of the fourth token's text: three tokens remain.
  const stop = tokens[3]!.trim().slice(0, 3);
  const cut = (await client.completions.create({ ...greedy, stop })).choices[0]!;
  assert.ok(cut.text.length < full.text.length, `${JSON.stringify(stop)}: ${cut.text}`);
  assert.equal(cut.logprobs!.tokens!.join('').startsWith(cut.text), true, JSON.stringify([cut.text, cut.logprobs!.tokens]));
  assert.ok(cut.logprobs!.tokens!.length < tokens.length);
});

test('n choices: indices 0..n-1, seeds reproducible and different across choices, usage counts the prompt once', async () => {
  const ask = { model: 'tiny_llm', messages, max_tokens: 8, temperature: 1, ignore_eos: true, seed: 11, n: 3 };
  const r = await client.chat.completions.create(ask);
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
  const texts = r.choices.map((c) => c.message.content);
  assert.ok(new Set(texts).size > 1, JSON.stringify(texts));
  const again = await client.chat.completions.create(ask);
  assert.deepEqual(again.choices.map((c) => c.message.content), texts);
  // Choice i draws with seed + i: choice 1 is what a single request with seed 12 draws.
  const single = await client.chat.completions.create({ ...ask, n: 1, seed: 12 });
  assert.equal(single.choices[0]!.message.content, texts[1]);
  assert.equal(r.usage!.prompt_tokens, single.usage!.prompt_tokens);
  assert.equal(r.usage!.completion_tokens, 24);
  assert.equal(r.usage!.total_tokens, r.usage!.prompt_tokens + 24);
  // Streamed: each chunk names its choice; each choice opens with the role and closes with its finish reason.
  const streamed = ['', '', ''];
  const finished: number[] = [];
  let usage: OpenAI.CompletionUsage | undefined;
  for await (const chunk of await client.chat.completions.create({ ...ask, stream: true, stream_options: { include_usage: true } })) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      streamed[c.index] += c.delta.content ?? '';
      if (c.finish_reason !== null) finished.push(c.index);
    }
  }
  assert.deepEqual(streamed, texts);
  assert.deepEqual(finished.sort(), [0, 1, 2]);
  assert.deepEqual(usage, r.usage);
});

test('n with logprobs on completions, and n out of bounds refused naming n', async () => {
  const r = await client.completions.create({ ...EOS, model: 'tiny_llm', prompt: 'Once upon a time', max_tokens: 3, seed: 2, n: 2, logprobs: 1 });
  assert.equal(r.choices.length, 2);
  for (const c of r.choices) assert.equal(c.logprobs!.tokens!.join(''), c.text);
  // A llama.cpp model reports no figures for a chat with tools: refused by name rather than ignored.
  const tools = await postJson(`http://127.0.0.1:${openai.port}/v1/chat/completions`, {
    model: 'tiny_llm', messages, max_tokens: 2, logprobs: true, tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }],
  });
  assert.equal(tools.status, 400, tools.body.toString());
  assert.match(tools.json().error.message, /'logprobs'/);
  for (const n of [0, 9]) {
    await assert.rejects(client.chat.completions.create({ model: 'tiny_llm', messages, max_tokens: 2, n }), (e: InstanceType<typeof OpenAI.APIError>) => {
      assert.equal(e.status, 400);
      assert.equal((e.error as { param?: string }).param, 'n');
      return true;
    });
  }
});

test('gateway: logprobs and top_logprobs reach llama-server and its figures come back, whole and streamed', { skip }, async () => {
  const ask = { model: 'remote_llm', messages, max_tokens: 5, temperature: 0, ignore_eos: true, logprobs: true, top_logprobs: 2 } as const;
  const r = await client.chat.completions.create(ask as OpenAI.ChatCompletionCreateParamsNonStreaming);
  const c = r.choices[0]!;
  const content = c.logprobs!.content!;
  assert.equal(content.length, 5);
  assert.equal(content.map((e) => e.token).join(''), c.message.content);
  for (const e of content) checkEntry(e, 2);
  checkGreedy(content);
  const streamed: ChatCompletionTokenLogprob[] = [];
  for await (const chunk of await client.chat.completions.create({ ...ask, stream: true } as OpenAI.ChatCompletionCreateParamsStreaming)) {
    streamed.push(...(chunk.choices[0]?.logprobs?.content ?? []));
  }
  assert.deepEqual(streamed.map((e) => e.token), content.map((e) => e.token));
  const legacy = await client.completions.create({ ...EOS, model: 'remote_llm', prompt: 'Once upon a time', max_tokens: 4, temperature: 0, logprobs: 2 });
  const lp = legacy.choices[0]!.logprobs!;
  assert.equal(lp.tokens!.length, 4);
  assert.equal(lp.tokens!.join(''), legacy.choices[0]!.text);
  assert.ok(lp.top_logprobs!.every((t) => Object.keys(t).length === 2));
  const several = await client.chat.completions.create({ ...EOS, model: 'remote_llm', messages, max_tokens: 6, temperature: 1, seed: 4, n: 2 });
  assert.deepEqual(several.choices.map((x) => x.index), [0, 1]);
  assert.equal(several.usage!.completion_tokens, 12);
});
