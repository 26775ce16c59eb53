import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';
import { startOpenAiFrontend, type OpenAiFrontend } from '../../../src/frontends/openai/server.js';
import { createLogger } from '../../../src/observability/logger.js';
import { EXAMPLES } from '../../helpers/paths.js';
import { LLAMA_MODEL, llamaServer } from '../../helpers/llama-server.js';
import { postJson, request } from '../../helpers/http.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';

// The OpenAI frontend serves any text model, not only llama.cpp in process: here a gateway model (backend
// "openai") in front of llama.cpp's llama-server, beside the in-process tiny_llm. llama-server is built by
// scripts/build-llama-server.mjs before the tests run; without it this file skips, and fails under CI.

const MODEL = LLAMA_MODEL;
const { bin, skip, missing } = llamaServer();

let engine: ChildProcess | undefined;
let repo: string;
let s: TestServer;
let openai: OpenAiFrontend;
let base: string;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

before(async () => {
  if (skip) return;
  if (missing) throw new Error(missing);
  const port = await freePort();
  engine = spawn(bin, ['-m', MODEL, '--host', '127.0.0.1', '--port', String(port), '-t', '1', '-c', '1024', '-np', '2', '--no-webui', '--no-warmup'], { stdio: 'ignore' });
  for (let i = 0; !(await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)); i++) {
    if (i > 200) throw new Error('llama-server did not start');
    await sleep(100);
  }
  repo = await mkdtemp(join(tmpdir(), 'nereid-openai-gateway-'));
  await mkdir(join(repo, 'remote_llm', '1'), { recursive: true });
  await writeFile(join(repo, 'remote_llm', 'config.pbtxt'), `backend: "openai"
max_batch_size: 0
model_transaction_policy { decoupled: true }
parameters { key: "base_url" value { string_value: "http://127.0.0.1:${port}" } }
parameters { key: "model_id" value { string_value: "tiny" } }
`);
  s = await startTestServer({ modelRepositories: [repo, EXAMPLES], modelControlMode: 'explicit', loadModels: ['remote_llm', 'tiny_llm'] });
  const logger = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
  openai = await startOpenAiFrontend(s.server, { port: 0, address: '127.0.0.1' }, logger);
  base = `http://127.0.0.1:${openai.port}/v1`;
});

after(async () => {
  if (skip) return;
  await s.close();
  await openai.close();
  engine?.kill('SIGKILL');
  await rm(repo, { recursive: true, force: true });
});

test('/v1/models lists the gateway model beside the in-process one', { skip }, async () => {
  const ids = (await request(`${base}/models`)).json().data.map((m: { id: string }) => m.id);
  assert.deepEqual(ids, ['remote_llm', 'tiny_llm']);
});

test('completions and chat through the gateway: text, usage, stream ending in [DONE]', { skip }, async () => {
  const done = await postJson(`${base}/completions`, { model: 'remote_llm', prompt: 'Once upon a time', max_tokens: 6, ignore_eos: true, temperature: 0 });
  assert.equal(done.status, 200, done.body.toString());
  assert.equal(done.json().usage.completion_tokens, 6);
  assert.equal(done.json().choices[0].finish_reason, 'length');
  const chat = await postJson(`${base}/chat/completions`, { model: 'remote_llm', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 4, ignore_eos: true, stream: true, stream_options: { include_usage: true } });
  const events = chat.body.toString().split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));
  assert.equal(events.at(-1), '[DONE]');
  const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
  assert.equal(chunks[0].choices[0].delta.role, 'assistant');
  assert.equal(chunks.at(-1).usage.completion_tokens, 4);
  assert.ok(chunks.slice(1, -2).some((c) => typeof c.choices[0].delta.content === 'string' && c.choices[0].delta.content.length > 0));
});

test('min_p and logit_bias reach the engine from the OpenAI port as from generate_stream; several choices and malformed log probability fields are refused', { skip }, async () => {
  const complete = async (body: Record<string, unknown>): Promise<string> => {
    const r = await postJson(`${base}/completions`, { model: 'remote_llm', prompt: 'Once upon a time', max_tokens: 12, ignore_eos: true, temperature: 1, ...body });
    assert.equal(r.status, 200, r.body.toString());
    return r.json().choices[0].text;
  };
  // llama-server keeps only the likeliest token under min_p 1: two seeds draw the same text, which they do not without it.
  assert.notEqual(await complete({ seed: 1 }), await complete({ seed: 2 }));
  assert.equal(await complete({ seed: 1, min_p: 1 }), await complete({ seed: 2, min_p: 1 }));
  const one = await complete({ seed: 3, max_tokens: 1, logit_bias: { 1000: 100 } });
  assert.ok(one.length > 0);
  assert.equal(await complete({ seed: 3, max_tokens: 5, logit_bias: { 1000: 100 } }), one.repeat(5));
  const g = await postJson(`${s.url}/v2/models/remote_llm/generate`, { text_input: 'Once upon a time', max_tokens: 5, ignore_eos: true, logit_bias: '{"1000": 100}' });
  assert.equal(g.json().text_output, one.repeat(5));
  for (const field of [{ logprobs: 2 }, { top_logprobs: 21 }, { n: 2 }]) {
    const r = await postJson(`${s.url}/v2/models/remote_llm/generate`, { text_input: 'Hi', max_tokens: 2, ...field });
    assert.equal(r.status, 400, r.body.toString());
    assert.match(r.json().error, new RegExp(`'${Object.keys(field)[0]}'`));
  }
});

test("a prompt past the engine's context answers OpenAI's context_length_exceeded", { skip }, async () => {
  const long = 'once upon a time '.repeat(400);
  const r = await postJson(`${base}/completions`, { model: 'remote_llm', prompt: long, max_tokens: 4 });
  assert.equal(r.status, 400, r.body.toString());
  assert.deepEqual([r.json().error.param, r.json().error.code], ['prompt', 'context_length_exceeded'], r.body.toString());
  const c = await postJson(`${base}/chat/completions`, { model: 'remote_llm', messages: [{ role: 'user', content: long }], max_tokens: 4 });
  assert.equal(c.status, 400, c.body.toString());
  assert.deepEqual([c.json().error.param, c.json().error.code], ['messages', 'context_length_exceeded']);
});

test('response_format reaches the engine unchanged', { skip }, async () => {
  // llama-server builds a grammar from it. With tiny_llm's chat template its grammar sampler fails to start
  // (its own limitation, the same when asked directly), so its refusal, absent without the field, is what
  // shows that the field arrived.
  const ask = (extra: Record<string, unknown>) => postJson(`${base}/chat/completions`, { model: 'remote_llm', messages: [{ role: 'user', content: 'Weather?' }], max_tokens: 4, ...extra });
  assert.equal((await ask({})).status, 200);
  const schema = { type: 'object', properties: { windy: { type: 'boolean' } }, required: ['windy'], additionalProperties: false };
  for (const format of [{ type: 'json_object' }, { type: 'json_schema', json_schema: { name: 'weather', schema, strict: true } }]) {
    const r = await ask({ response_format: format });
    assert.equal(r.status, 400, r.body.toString());
    assert.match(r.json().error.message, /^engine .* refused the request \(400\): .*samplers/, r.body.toString());
  }
});

test('the Responses API through the gateway: the chat completion\'s text and counts, whole and streamed', { skip }, async () => {
  const client = new OpenAI({ apiKey: 'unused', baseURL: base, maxRetries: 0 });
  const chat = await postJson(`${base}/chat/completions`, { model: 'remote_llm', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 5, temperature: 0 });
  const expected = chat.json();
  const whole = await client.responses.create({ model: 'remote_llm', input: 'Hello', max_output_tokens: 5, temperature: 0 });
  assert.equal(whole.output_text, expected.choices[0].message.content);
  assert.deepEqual([whole.usage!.input_tokens, whole.usage!.output_tokens], [expected.usage.prompt_tokens, expected.usage.completion_tokens]);
  assert.equal(whole.status, expected.choices[0].finish_reason === 'length' ? 'incomplete' : 'completed');
  const streamed = await client.responses.stream({ model: 'remote_llm', input: 'Hello', max_output_tokens: 5, temperature: 0, previous_response_id: whole.id }).finalResponse();
  assert.ok(streamed.usage!.input_tokens > whole.usage!.input_tokens + whole.usage!.output_tokens);
});
