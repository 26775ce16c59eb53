import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, request as httpRequest, type Server } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { LLAMA_MODEL, llamaServer } from '../../helpers/llama-server.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { postJson, request } from '../../helpers/http.js';
import { until } from '../../helpers/until.js';

// The gateway backend ("openai") against a real OpenAI-compatible engine that this project did not write:
// llama.cpp's llama-server, built from the llama.cpp source node-llama-cpp ships (scripts/build-llama-server.mjs,
// run before the tests by scripts/run-tests.mjs, cached outside the checkout), serving the tiny example LLM.
// Plus the engine's failure modes: down, and answering garbage.

const { bin, skip, missing } = llamaServer();
const MODEL = LLAMA_MODEL;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** What each engine has logged, so a test can read what the engine itself saw. */
const engineLog = new Map<ChildProcess, string>();

async function startEngine(port: number, extra: string[] = []): Promise<ChildProcess> {
  const child = spawn(bin, ['-m', MODEL, '--host', '127.0.0.1', '--port', String(port), '-t', '1', '-c', '1024', '-np', '2', '--no-webui', '--no-warmup', ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
  engineLog.set(child, '');
  const keep = (b: Buffer): void => void engineLog.set(child, (engineLog.get(child)! + b.toString()).slice(-1_000_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  for (let i = 0; i < 200; i++) {
    const ok = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false);
    if (ok) return child;
    if (child.exitCode !== null) break;
    await sleep(100);
  }
  child.kill('SIGKILL');
  throw new Error('llama-server did not become healthy');
}

let enginePort: number;
let keyedPort: number;
let engine: ChildProcess | undefined;
let keyed: ChildProcess | undefined;
let garbage: Server | undefined;
let plain: Server | undefined;
let s: TestServer;
let repo: string;

async function gatewayModel(dir: string, name: string, baseUrl: string, opts: { decoupled?: boolean; extra?: string } = {}): Promise<void> {
  await mkdir(join(dir, name, '1'), { recursive: true });
  await writeFile(join(dir, name, 'config.pbtxt'), `name: "${name}"
backend: "openai"
max_batch_size: 0
model_transaction_policy { decoupled: ${opts.decoupled ?? true} }
parameters { key: "base_url" value { string_value: "${baseUrl}" } }
parameters { key: "model_id" value { string_value: "tiny" } }
parameters { key: "max_retries" value { string_value: "1" } }
${opts.extra ?? ''}
`);
}

before(async () => {
  if (skip) return;
  if (missing) throw new Error(missing);
  enginePort = await freePort();
  keyedPort = await freePort();
  [engine, keyed] = await Promise.all([startEngine(enginePort), startEngine(keyedPort, ['--api-key', 'sesame'])]);
  garbage = createHttpServer((req, res) => {
    if (req.url === '/health') return res.end('ok');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"this is": not json');
  });
  await new Promise<void>((r) => garbage!.listen(0, '127.0.0.1', () => r()));
  const garbagePort = (garbage.address() as { port: number }).port;
  // An engine (or a proxy in front of one) that ignores `stream` and answers one whole JSON completion.
  plain = createHttpServer((req, res) => {
    if (req.url === '/health') return res.end('ok');
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify({ choices: [{ index: 0, text: 'one whole answer', finish_reason: 'length' }], usage: { prompt_tokens: 3, completion_tokens: 4 } }));
  });
  await new Promise<void>((r) => plain!.listen(0, '127.0.0.1', () => r()));
  const plainPort = (plain.address() as { port: number }).port;
  const { mkdtemp } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  repo = await mkdtemp(join(tmpdir(), 'nereid-gateway-'));
  await gatewayModel(repo, 'llm', `http://127.0.0.1:${enginePort}/v1`);
  await gatewayModel(repo, 'llm_whole', `http://127.0.0.1:${enginePort}`, { decoupled: false });
  await gatewayModel(repo, 'llm_keyed', `http://127.0.0.1:${keyedPort}`, { decoupled: false, extra: 'parameters { key: "api_key_env" value { string_value: "NEREID_TEST_ENGINE_KEY" } }' });
  await gatewayModel(repo, 'llm_badkey', `http://127.0.0.1:${keyedPort}`, { decoupled: false, extra: 'parameters { key: "api_key_env" value { string_value: "NEREID_TEST_ENGINE_WRONG_KEY" } }' });
  await gatewayModel(repo, 'llm_garbage', `http://127.0.0.1:${garbagePort}`, { decoupled: false });
  await gatewayModel(repo, 'llm_down', `http://127.0.0.1:${await freePort()}`, { decoupled: false });
  await gatewayModel(repo, 'llm_plain', `http://127.0.0.1:${plainPort}`);
  // An embedding model on an engine started without --embeddings.
  await gatewayModel(repo, 'llm_no_embeddings', `http://127.0.0.1:${enginePort}`, { decoupled: false, extra: 'parameters { key: "embedding" value { string_value: "true" } }' });
  process.env['NEREID_TEST_ENGINE_KEY'] = 'sesame';
  process.env['NEREID_TEST_ENGINE_WRONG_KEY'] = 'not-it';
  s = await startTestServer({ modelRepositories: [repo] });
});

after(async () => {
  if (skip) return;
  await s?.close();
  engine?.kill('SIGKILL');
  keyed?.kill('SIGKILL');
  garbage?.close();
  plain?.close();
  const { rm } = await import('node:fs/promises');
  await rm(repo, { recursive: true, force: true });
});

const events = (text: string): any[] => text.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => JSON.parse(e.slice(6)));

test('generate: the engine\'s whole completion as text_output, with usage and finish reason', { skip }, async () => {
  const r = await postJson(`${s.url}/v2/models/llm_whole/generate`, { text_input: 'Hello there', max_tokens: 8, seed: 7, temperature: 0 });
  assert.equal(r.status, 200, r.body.toString());
  const j = r.json();
  assert.equal(typeof j.text_output, 'string');
  assert.ok(j.text_output.length > 0);
  assert.equal(j.completion_tokens, 8);
  assert.ok(j.prompt_tokens > 0);
  assert.equal(j.finish_reason, 'length');
  // Same seed and greedy sampling: the same text.
  const again = await postJson(`${s.url}/v2/models/llm_whole/generate`, { text_input: 'Hello there', max_tokens: 8, seed: 7, temperature: 0 });
  assert.equal(again.json().text_output, j.text_output);
});

test('generate_stream: the engine\'s tokens stream through as events; their text is the whole completion', { skip }, async () => {
  const whole = (await postJson(`${s.url}/v2/models/llm_whole/generate`, { text_input: 'Once upon', max_tokens: 12, temperature: 0 })).json().text_output;
  const r = await postJson(`${s.url}/v2/models/llm/generate_stream`, { text_input: 'Once upon', max_tokens: 12, temperature: 0 });
  assert.equal(r.status, 200);
  const ev = events(r.body.toString());
  assert.ok(ev.length >= 3, `only ${ev.length} events`);
  assert.equal(ev.map((e) => e.text_output).join(''), whole);
  assert.equal(ev[ev.length - 1].completion_tokens, 12);
  assert.ok(ev.every((e) => e.model_name === 'llm'));
});

test('generate on the streaming model: one whole response, the streamed pieces joined, as Triton\'s vLLM backend answers stream false', { skip }, async () => {
  const body = { text_input: 'Once upon', max_tokens: 12, temperature: 0, ignore_eos: true };
  const streamed = events((await postJson(`${s.url}/v2/models/llm/generate_stream`, body)).body.toString());
  for (const stream of [false, undefined]) {
    const r = await postJson(`${s.url}/v2/models/llm/generate`, stream === undefined ? body : { ...body, stream });
    assert.equal(r.status, 200, r.body.toString());
    const j = r.json();
    assert.equal(j.model_name, 'llm');
    assert.equal(j.text_output, streamed.map((e) => e.text_output).join(''));
    assert.equal(j.completion_tokens, 12);
    assert.equal(j.finish_reason, 'length');
    assert.ok(j.prompt_tokens > 0);
  }
});

test('chat: messages as a request parameter go to /v1/chat/completions with the model\'s template', { skip }, async () => {
  const messages = JSON.stringify([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }]);
  const r = await postJson(`${s.url}/v2/models/llm_whole/generate`, { text_input: '', messages, max_tokens: 5 });
  assert.equal(r.status, 200, r.body.toString());
  assert.equal(r.json().completion_tokens, 5);
  const bad = await postJson(`${s.url}/v2/models/llm_whole/generate`, { text_input: '', messages: '[{"content": "no role"}]' });
  assert.equal(bad.status, 400);
  assert.match(bad.json().error, /messages/);
});

test('concurrent streams share the engine and all complete', { skip }, async () => {
  const rs = await Promise.all([1, 2, 3, 4].map((i) => postJson(`${s.url}/v2/models/llm/generate_stream`, { text_input: `Story ${i}`, max_tokens: 10, temperature: 0 })));
  for (const r of rs) assert.equal(events(r.body.toString()).at(-1).completion_tokens, 10);
});

test('the API key comes from the environment variable the config names; a wrong key is a clear 400', { skip }, async () => {
  const ok = await postJson(`${s.url}/v2/models/llm_keyed/generate`, { text_input: 'Hi', max_tokens: 2 });
  assert.equal(ok.status, 200, ok.body.toString());
  const bad = await postJson(`${s.url}/v2/models/llm_badkey/generate`, { text_input: 'Hi', max_tokens: 2 });
  assert.equal(bad.status, 400);
  assert.match(bad.json().error, /refused the request \(401\)/);
});

test('bad input: empty prompt, bad max_tokens, engine refusals — clear 400s', { skip }, async () => {
  const cases: [unknown, RegExp][] = [
    [{ text_input: '', max_tokens: 4 }, /prompt .*empty/],
    [{ text_input: 'x', max_tokens: -3 }, /max_tokens must be a positive integer/],
    [{ text_input: 'x', max_tokens: 2.5 }, /max_tokens must be a positive integer/],
  ];
  for (const [body, pattern] of cases) {
    const r = await postJson(`${s.url}/v2/models/llm_whole/generate`, body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.match(r.json().error, pattern);
  }
  const huge = await postJson(`${s.url}/v2/models/llm_whole/generate`, { text_input: 'x', max_tokens: 10_000_000 });
  assert.ok(huge.status === 200 || huge.status === 400, `a huge max_tokens is the engine's call: ${huge.status}`);
});

test('an engine that is down: the model is not ready and requests fail at once as UNAVAILABLE', { skip }, async () => {
  assert.equal((await request(`${s.url}/v2/models/llm_down/ready`)).status, 400);
  assert.equal((await request(`${s.url}/v2/models/llm/ready`)).status, 200);
  const r = await postJson(`${s.url}/v2/models/llm_down/generate`, { text_input: 'x', max_tokens: 2 });
  assert.equal(r.status, 503);
  assert.match(r.json().error, /unreachable/);
});

test('an engine that answers garbage: a clear error naming the engine; other models unaffected', { skip }, async () => {
  const r = await postJson(`${s.url}/v2/models/llm_garbage/generate`, { text_input: 'x', max_tokens: 2 });
  assert.equal(r.status, 500);
  assert.match(r.json().error, /engine http:\/\/127\.0\.0\.1:\d+ \(model 'tiny'\) answered something that is not JSON/);
  assert.equal((await postJson(`${s.url}/v2/models/llm_whole/generate`, { text_input: 'x', max_tokens: 2 })).status, 200);
});

test('an engine that answers a stream request with one whole JSON completion: its text as one event, then usage', { skip }, async () => {
  const r = await postJson(`${s.url}/v2/models/llm_plain/generate_stream`, { text_input: 'x', max_tokens: 4 });
  assert.equal(r.status, 200);
  const all = events(r.body.toString());
  assert.equal(all.map((e) => e.text_output).join(''), 'one whole answer');
  const last = all.at(-1);
  assert.equal(last.finish_reason, 'length');
  assert.equal(last.completion_tokens, 4);
  const whole = await postJson(`${s.url}/v2/models/llm_plain/generate`, { text_input: 'x', max_tokens: 4 });
  assert.equal(whole.json().text_output, 'one whole answer');
});

test('an engine without the feature asked (llama-server without --embeddings, 501): UNSUPPORTED in the engine\'s words, not an internal error', { skip }, async () => {
  const r = await postJson(`${s.url}/v2/models/llm_no_embeddings/infer`, { inputs: [{ name: 'text_input', datatype: 'BYTES', shape: [1], data: ['hello'] }] });
  assert.equal(r.status, 501);
  assert.match(r.json().error, /engine http:\/\/127\.0\.0\.1:\d+ \(model 'tiny'\) does not support this request \(501\): .*--embeddings/);
  assert.equal((await postJson(`${s.url}/v2/models/llm_whole/generate`, { text_input: 'x', max_tokens: 2 })).status, 200);
});

test('a client that leaves mid-stream cancels the engine request', { skip }, async () => {
  const cancelsBefore = engineLog.get(engine!)!.match(/cancel task, id_task/g)?.length ?? 0;
  const u = new URL(`${s.url}/v2/models/llm/generate_stream`);
  await new Promise<void>((resolve, reject) => {
    const req = httpRequest({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      res.once('data', () => {
        req.destroy();
        resolve();
      });
    });
    req.once('error', reject);
    req.end(JSON.stringify({ text_input: 'A long story', max_tokens: 1000, ignore_eos: true }));
  });
  // llama-server logs "cancel task" when the client of an unfinished task goes away (a task that ends by
  // itself logs nothing of the kind): the engine's own word that the request was cancelled, not finished.
  const cancels = (): number => engineLog.get(engine!)!.match(/cancel task, id_task/g)?.length ?? 0;
  await until(() => cancels() === cancelsBefore + 1, 'llama-server to log the cancelled task');
  let st: any;
  for (let i = 0; i < 50; i++) {
    st = (await request(`${s.url}/v2/models/llm/stats`)).json().model_stats[0].inference_stats;
    if (st.fail.count > 0) break;
    await sleep(50);
  }
  assert.equal(st.fail.count, 1, 'the cancelled stream is counted as a failed (cancelled) request');
  // The engine is free again: its slots were released, so a new request completes.
  const r = await postJson(`${s.url}/v2/models/llm_whole/generate`, { text_input: 'x', max_tokens: 3 });
  assert.equal(r.json().completion_tokens, 3);
});
