import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { startOpenAiFrontend, type OpenAiFrontend } from '../../../src/frontends/openai/server.js';
import { createLogger } from '../../../src/observability/logger.js';
import { EXAMPLES } from '../../helpers/paths.js';
import { postJson, request } from '../../helpers/http.js';
import { spawnServer, startTestServer, type TestServer } from '../../helpers/server.js';

// The OpenAI-compatible frontend over the example tiny_llm (llama.cpp, random weights): what an OpenAI client
// sends and reads, on a real socket.

let s: TestServer;
let openai: OpenAiFrontend;
let base: string;
before(async () => {
  s = await startTestServer({
    modelRepositories: [EXAMPLES], modelControlMode: 'explicit', loadModels: ['tiny_llm', 'simple'],
    metrics: { config: ['histogram_latencies=true'] },
  });
  const logger = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
  openai = await startOpenAiFrontend(s.server, { port: 0, address: '127.0.0.1' }, logger);
  base = `http://127.0.0.1:${openai.port}/v1`;
});
after(async () => {
  await s.close();
  await openai.close();
});

/** The data lines of a server-sent event stream, as text (the last one is [DONE]). */
function sse(text: string): string[] {
  return text.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));
}

const chat = (body: Record<string, unknown>) => postJson(`${base}/chat/completions`, { model: 'tiny_llm', messages: [{ role: 'user', content: 'Hello' }], ...body });
const complete = (body: Record<string, unknown>) => postJson(`${base}/completions`, { model: 'tiny_llm', prompt: 'Once upon a time', ...body });

test('GET /v1/models lists the text models only; /v1/models/{id} describes one', async () => {
  const r = await request(`${base}/models`);
  assert.equal(r.status, 200);
  const list = r.json();
  assert.equal(list.object, 'list');
  assert.deepEqual(list.data.map((m: any) => m.id), ['tiny_llm']);
  assert.equal(list.data[0].object, 'model');
  assert.equal(typeof list.data[0].created, 'number');
  const one = await request(`${base}/models/tiny_llm`);
  assert.equal(one.json().id, 'tiny_llm');
  const missing = await request(`${base}/models/nope`);
  assert.equal(missing.status, 404);
  assert.equal(missing.json().error.code, 'model_not_found');
});

test('an absolute-form target (RFC 9112 3.2.2) is routed by its path', async () => {
  // node:http's client sends a path as given, as it does through a proxy.
  const body = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: openai.port, path: `HTTP://127.0.0.1:${openai.port}/v1/models?x=1` }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, text }));
    });
    req.on('error', reject);
    req.end();
  });
  assert.equal(body.status, 200, body.text);
  assert.deepEqual(JSON.parse(body.text).data.map((m: { id: string }) => m.id), ['tiny_llm']);
});

test('completions: the text, finish_reason length and usage', async () => {
  const r = await complete({ max_tokens: 5, seed: 4, ignore_eos: true });
  assert.equal(r.status, 200, r.body.toString());
  const j = r.json();
  assert.match(j.id, /^cmpl-/);
  assert.equal(j.object, 'text_completion');
  assert.equal(j.model, 'tiny_llm');
  assert.equal(j.choices.length, 1);
  assert.equal(typeof j.choices[0].text, 'string');
  assert.equal(j.choices[0].finish_reason, 'length');
  assert.equal(j.usage.completion_tokens, 5);
  assert.ok(j.usage.prompt_tokens > 0);
  assert.equal(j.usage.total_tokens, j.usage.prompt_tokens + 5);
});

test('completions stream: text chunks, a finishing chunk, usage when asked, then [DONE]; same text as without stream', async () => {
  const body = { max_tokens: 8, seed: 9, ignore_eos: true, temperature: 0.7 };
  const r = await complete({ ...body, stream: true, stream_options: { include_usage: true } });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), 'text/event-stream; charset=utf-8');
  const events = sse(r.body.toString());
  assert.equal(events.at(-1), '[DONE]');
  const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
  const usage = chunks.at(-1);
  assert.deepEqual(usage.choices, []);
  assert.equal(usage.usage.completion_tokens, 8);
  const finish = chunks.at(-2);
  assert.equal(finish.choices[0].finish_reason, 'length');
  const text = chunks.slice(0, -2).map((c) => c.choices[0].text).join('');
  assert.ok(chunks.slice(0, -2).every((c) => c.object === 'text_completion' && c.choices[0].finish_reason === null));
  const whole = (await complete(body)).json();
  assert.equal(text, whole.choices[0].text);
  // Without include_usage, no usage chunk.
  const plain = sse((await complete({ ...body, stream: true })).body.toString());
  assert.ok(plain.slice(0, -1).every((e) => JSON.parse(e).usage === undefined));
});

test('chat completions: an assistant message, usage; seed gives the same text again', async () => {
  const r = await chat({ max_tokens: 6, seed: 3, ignore_eos: true });
  assert.equal(r.status, 200, r.body.toString());
  const j = r.json();
  assert.match(j.id, /^chatcmpl-/);
  assert.equal(j.object, 'chat.completion');
  assert.equal(j.choices[0].message.role, 'assistant');
  assert.equal(typeof j.choices[0].message.content, 'string');
  assert.equal(j.choices[0].finish_reason, 'length');
  assert.equal(j.usage.completion_tokens, 6);
  const again = (await chat({ max_tokens: 6, seed: 3, ignore_eos: true })).json();
  assert.equal(again.choices[0].message.content, j.choices[0].message.content);
  // Content as an array of text parts is the same conversation.
  const parts = (await chat({ max_tokens: 6, seed: 3, ignore_eos: true, messages: [{ role: 'user', content: [{ type: 'text', text: 'Hel' }, { type: 'text', text: 'lo' }] }] })).json();
  assert.equal(parts.choices[0].message.content, j.choices[0].message.content);
});

test('chat stream: the role first, content deltas, a finishing chunk, [DONE]', async () => {
  const r = await chat({ max_tokens: 4, seed: 8, ignore_eos: true, stream: true });
  const events = sse(r.body.toString());
  assert.equal(events.at(-1), '[DONE]');
  const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
  assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk'));
  assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '' });
  assert.deepEqual(chunks.at(-1).choices[0].delta, {});
  assert.equal(chunks.at(-1).choices[0].finish_reason, 'length');
  const text = chunks.slice(1, -1).map((c) => c.choices[0].delta.content).join('');
  const whole = (await chat({ max_tokens: 4, seed: 8, ignore_eos: true })).json();
  assert.equal(text, whole.choices[0].message.content);
});

test('max_tokens and stop', async () => {
  const full = (await complete({ max_tokens: 20, seed: 21, ignore_eos: true })).json().choices[0].text as string;
  const stop = full.slice(Math.floor(full.length / 2), Math.floor(full.length / 2) + 2);
  const cut = (await complete({ max_tokens: 20, seed: 21, ignore_eos: true, stop: [stop] })).json();
  assert.equal(cut.choices[0].text, full.slice(0, full.indexOf(stop)));
  assert.equal(cut.choices[0].finish_reason, 'stop');
  const one = (await complete({ max_tokens: 1, seed: 21, ignore_eos: true })).json();
  assert.equal(one.usage.completion_tokens, 1);
});

test('two streams at once both complete', async () => {
  const [a, b] = await Promise.all([1, 2].map((seed) => complete({ max_tokens: 30, seed, ignore_eos: true, stream: true, stream_options: { include_usage: true } })));
  for (const r of [a!, b!]) {
    const events = sse(r.body.toString());
    assert.equal(events.at(-1), '[DONE]');
    assert.equal(JSON.parse(events.at(-2)!).usage.completion_tokens, 30);
  }
});

test('a client that disconnects mid-stream cancels the generation; the model serves the next requests', async () => {
  const inferenceStats = (): any => structuredClone(s.server.statistics('tiny_llm').model_stats[0]!['inference_stats']);
  const before = inferenceStats();
  // Four streams (as many as the model's parallel sequences), each dropped after its first chunks.
  await Promise.all([1, 2, 3, 4].map((seed) => new Promise<void>((resolve, reject) => {
    const body = JSON.stringify({ model: 'tiny_llm', prompt: 'Keep going', max_tokens: 900, seed, ignore_eos: true, stream: true });
    const req = httpRequest(`${base}/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' } }, (res) => {
      let chunks = 0;
      res.on('data', () => {
        if (++chunks === 3) {
          req.destroy();
          resolve();
        }
      });
      res.on('end', () => reject(new Error('the stream ended before the client left')));
    });
    req.on('error', () => undefined);
    req.end(body);
  })));
  // If a dropped generation kept its sequence, these would wait for one.
  const after = await Promise.all([1, 2, 3, 4].map((seed) => complete({ max_tokens: 2, seed, ignore_eos: true })));
  for (const r of after) assert.equal(r.json().usage.completion_tokens, 2);
  // The cancelled requests count as failures, not successes.
  let stats: any;
  for (let i = 0; i < 50; i++) {
    stats = inferenceStats();
    if (stats.fail.count - before.fail.count >= 4) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.equal(stats.fail.count - before.fail.count, 4);
  assert.equal(stats.success.count - before.success.count, 4);
});

test('bad input answers in OpenAI\'s error shape with the right status', async () => {
  const cases: [string, unknown, number, string | null, RegExp][] = [
    ['/completions', { model: 'nope', prompt: 'x' }, 404, 'model', /does not exist/],
    ['/completions', { model: 'simple', prompt: 'x' }, 400, 'model', /not a text model/],
    ['/completions', { prompt: 'x' }, 400, 'model', /model/],
    ['/completions', { model: 'tiny_llm', prompt: '' }, 400, 'prompt', /empty/],
    ['/completions', { model: 'tiny_llm' }, 400, 'prompt', /prompt/],
    ['/completions', { model: 'tiny_llm', prompt: 'x', max_tokens: -5 }, 400, 'max_tokens', /max_tokens/],
    ['/completions', { model: 'tiny_llm', prompt: 'x', max_tokens: 1.5 }, 400, 'max_tokens', /integer/],
    ['/completions', { model: 'tiny_llm', prompt: 'x', max_tokens: 100_000 }, 400, 'prompt', /context holds/],
    ['/completions', { model: 'tiny_llm', prompt: 'x', temperature: 5 }, 400, 'temperature', /temperature/],
    ['/completions', { model: 'tiny_llm', prompt: 'x', n: 9 }, 400, 'n', /'n'/],
    ['/completions', { model: 'tiny_llm', prompt: 'x', stop: [1] }, 400, 'stop', /stop/],
    ['/completions', [1, 2], 400, null, /JSON object/],
    ['/chat/completions', { model: 'tiny_llm' }, 400, 'messages', /non-empty array/],
    ['/chat/completions', { model: 'tiny_llm', messages: [] }, 400, 'messages', /non-empty array/],
    ['/chat/completions', { model: 'tiny_llm', messages: ['hi'] }, 400, 'messages[0]', /object/],
    ['/chat/completions', { model: 'tiny_llm', messages: [{ role: 'wizard', content: 'x' }] }, 400, 'messages[0].role', /role/],
    ['/chat/completions', { model: 'tiny_llm', messages: [{ role: 'user', content: 42 }] }, 400, 'messages[0].content', /content/],
    ['/chat/completions', { model: 'tiny_llm', messages: [{ role: 'user', content: [{ type: 'image_url' }] }] }, 400, 'messages[0].content[0]', /text part/],
    ['/chat/completions', { model: 'tiny_llm', messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'function' }] }, 400, 'tools[0].function', /tools\[0\]\.function/],
  ];
  for (const [path, body, status, param, message] of cases) {
    const r = await postJson(`${base}${path}`, body);
    assert.equal(r.status, status, `${path} ${JSON.stringify(body)} → ${r.status} ${r.body.toString()}`);
    const e = r.json().error;
    assert.deepEqual(Object.keys(e).sort(), ['code', 'message', 'param', 'type']);
    assert.equal(e.type, 'invalid_request_error');
    assert.equal(e.param, param, JSON.stringify(body));
    assert.match(e.message, message);
  }
  const malformed = await request(`${base}/completions`, { body: '{"model": "tiny_llm", ', headers: { 'Content-Type': 'application/json' } });
  assert.equal(malformed.status, 400);
  assert.match(malformed.json().error.message, /parse the JSON/);
  const wrongMethod = await request(`${base}/completions`);
  assert.equal(wrongMethod.status, 405);
  const unknownPath = await request(`${base}/audio/speech`, { body: '{}' });
  assert.equal(unknownPath.status, 404);
  assert.equal(unknownPath.json().error.type, 'invalid_request_error');
});

test('metrics: time to first token in nv_inference_first_response_histogram_ms, tokens in nereid_*_token_count', async () => {
  const sample = (text: string, name: string): number => {
    const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes('model="tiny_llm"'));
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
  };
  const before = await s.server.metricsText();
  const r = await complete({ max_tokens: 7, seed: 1, ignore_eos: true, stream: true, stream_options: { include_usage: true } });
  const usage = JSON.parse(sse(r.body.toString()).at(-2)!).usage;
  const after = await s.server.metricsText();
  assert.equal(sample(after, 'nereid_generated_token_count') - sample(before, 'nereid_generated_token_count'), 7);
  assert.equal(sample(after, 'nereid_prompt_token_count') - sample(before, 'nereid_prompt_token_count'), usage.prompt_tokens);
  assert.equal(sample(after, 'nv_inference_first_response_histogram_ms_count') - sample(before, 'nv_inference_first_response_histogram_ms_count'), 1);
  assert.doesNotMatch(after, /nereid_generated_token_count\{[^}]*model="simple"/);
});

test('nereid serve --openai-port starts the frontend beside HTTP', async () => {
  const p = await spawnServer(['--model-repository', EXAMPLES, '--model-control-mode=explicit', '--load-model=tiny_llm', '--openai-port=0', '--openai-address=127.0.0.1']);
  try {
    // The OpenAI frontend starts after the HTTP one, which spawnServer waits for.
    let port = 0;
    for (let i = 0; i < 100 && port === 0; i++) {
      port = Number(/Started OpenAI-compatible service at 127\.0\.0\.1:(\d+)/.exec(p.output())?.[1] ?? 0);
      if (port === 0) await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(port > 0, p.output());
    const r = await postJson(`http://127.0.0.1:${port}/v1/completions`, { model: 'tiny_llm', prompt: 'Hi', max_tokens: 2, ignore_eos: true });
    assert.equal(r.json().usage.completion_tokens, 2);
  } finally {
    p.child.kill('SIGTERM');
    await p.exited;
  }
});

test('hostile bodies: millions of tiny values are refused off the event loop, an oversized body is 413 and counted', async () => {
  const small = await startOpenAiFrontend(s.server, { port: 0, address: '127.0.0.1', maxInputSize: 4 << 20 }, createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' }));
  const url = `http://127.0.0.1:${small.port}/v1/completions`;
  try {
    // 3 MB of empty objects: parsed in the worker, which refuses more JSON values than a request can need.
    const tiny = `{"model":"tiny_llm","prompt":"hi","user":[${new Array(750_000).fill('{}').join(',')}]}`;
    const r = await request(url, { body: tiny, headers: { 'Content-Type': 'application/json' } });
    assert.equal(r.status, 400);
    assert.match(r.json().error.message, /more than 100000 JSON values/);
    const before = /nereid_limit_refusal_count\{limit="http-max-input-size"\} (\d+)/.exec(await s.server.metricsText())?.[1] ?? '0';
    const big = await request(url, { body: Buffer.alloc(5 << 20, 0x20), headers: { 'Content-Type': 'application/json' } });
    assert.equal(big.status, 413);
    const after = /nereid_limit_refusal_count\{limit="http-max-input-size"\} (\d+)/.exec(await s.server.metricsText())?.[1];
    assert.equal(Number(after), Number(before) + 1);
    // The frontend still answers.
    const ok = await postJson(url, { model: 'tiny_llm', prompt: 'Hi', max_tokens: 2, ignore_eos: true });
    assert.equal(ok.json().usage.completion_tokens, 2);
  } finally {
    await small.close();
  }
});

test("Triton's OpenAI routes beside /v1: /health/ready (200 empty, 400 while unready) and /metrics; HEAD on every GET", async () => {
  const root = base.slice(0, -'/v1'.length);
  const ready = await request(`${root}/health/ready`);
  assert.equal(ready.status, 200);
  assert.equal(ready.body.length, 0);
  const release = s.server.holdReadiness();
  try {
    const unready = await request(`${root}/health/ready`);
    assert.equal(unready.status, 400);
    assert.deepEqual(unready.json(), { detail: 'Attached inference engine is not ready for inference requests.' });
  } finally {
    release();
  }
  const metrics = await request(`${root}/metrics`);
  assert.equal(metrics.status, 200);
  assert.match(metrics.headers.get('content-type')!, /^text\/plain/);
  assert.match(metrics.body.toString(), /nv_inference_request_success\{model="tiny_llm",version="1"\} \d+/);
  for (const path of ['/health/ready', '/metrics', '/v1/models', '/v1/models/tiny_llm']) {
    const get = await request(`${root}${path}`);
    const head = await request(`${root}${path}`, { method: 'HEAD' });
    assert.equal(head.status, 200, path);
    assert.equal(head.body.length, 0, path);
    // The metrics text changes between two scrapes (CPU and memory gauges), so its length is only checked given.
    if (path === '/metrics') assert.ok(Number(head.headers.get('content-length')) > 0, path);
    else assert.equal(head.headers.get('content-length'), get.headers.get('content-length'), path);
  }
  const post = await request(`${root}/metrics`, { body: '{}' });
  assert.equal(post.status, 405);
  assert.equal(post.headers.get('allow'), 'GET, HEAD');
  // Without --openai-cors-origin there are no CORS headers, and a preflight is not answered as one.
  const plain = await request(`${base}/models`, { headers: { Origin: 'http://localhost' } });
  assert.equal(plain.headers.get('access-control-allow-origin'), null);
  const preflight = await request(`${base}/completions`, { method: 'OPTIONS', headers: { Origin: 'http://localhost', 'Access-Control-Request-Method': 'POST' } });
  assert.equal(preflight.status, 405);
  assert.equal(preflight.headers.get('access-control-allow-origin'), null);
});

test('--openai-cors-origin: allowed origins get CORS headers on answers and errors, preflights 204; other origins none, their preflights 400', async () => {
  const logger = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
  const cors = await startOpenAiFrontend(s.server, { port: 0, address: '127.0.0.1', corsOrigins: ['https://app.example'] }, logger);
  const url = `http://127.0.0.1:${cors.port}/v1`;
  try {
    const preflight = await request(`${url}/chat/completions`, {
      method: 'OPTIONS', headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization, content-type, x-stainless-os' },
    });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers.get('access-control-allow-origin'), 'https://app.example');
    assert.equal(preflight.headers.get('access-control-allow-credentials'), 'true');
    assert.match(preflight.headers.get('access-control-allow-methods')!, /POST/);
    assert.equal(preflight.headers.get('access-control-allow-headers'), 'authorization, content-type, x-stainless-os');
    assert.equal(preflight.headers.get('vary'), 'Origin');
    const other = await request(`${url}/chat/completions`, { method: 'OPTIONS', headers: { Origin: 'https://evil.example', 'Access-Control-Request-Method': 'POST' } });
    assert.equal(other.status, 400);
    assert.equal(other.headers.get('access-control-allow-origin'), null);
    const ok = await postJson(`${url}/completions`, { model: 'tiny_llm', prompt: 'Hi', max_tokens: 2, ignore_eos: true, stream: true }, { Origin: 'https://app.example' });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get('access-control-allow-origin'), 'https://app.example');
    const bad = await postJson(`${url}/completions`, { model: 'nope', prompt: 'Hi' }, { Origin: 'https://app.example' });
    assert.equal(bad.status, 404);
    assert.equal(bad.headers.get('access-control-allow-origin'), 'https://app.example');
    const foreign = await request(`${url}/models`, { headers: { Origin: 'https://evil.example' } });
    assert.equal(foreign.status, 200);
    assert.equal(foreign.headers.get('access-control-allow-origin'), null);
    assert.equal(foreign.headers.get('vary'), 'Origin');
  } finally {
    await cors.close();
  }
});

test('min_p, presence, frequency and repetition penalties and logit_bias are honoured, the same on the OpenAI port and on generate', async () => {
  const generate = (body: Record<string, unknown>) => postJson(`${s.url}/v2/models/tiny_llm/generate`, { text_input: 'Once upon a time', ...body });
  const texts = async (body: Record<string, unknown>): Promise<[string, string]> => {
    const a = (await complete(body)).json().choices[0].text as string;
    // generate's parameters are scalars: logit_bias goes as its JSON text, as the OpenAI port passes it on.
    const g = await generate(body['logit_bias'] === undefined ? body : { ...body, logit_bias: JSON.stringify(body['logit_bias']) });
    assert.equal(g.status, 200, g.body.toString());
    return [a, g.json().text_output as string];
  };
  const base = { max_tokens: 12, ignore_eos: true, temperature: 1 };
  // min_p 1 keeps only the likeliest token: two seeds draw the same text, which they do not without it.
  const [free1, free1g] = await texts({ ...base, seed: 1 });
  const [free2] = await texts({ ...base, seed: 2 });
  assert.notEqual(free1, free2);
  assert.equal(free1g, free1);
  const [top1, top1g] = await texts({ ...base, seed: 1, min_p: 1 });
  const [top2, top2g] = await texts({ ...base, seed: 2, min_p: 1 });
  assert.equal(top1, top2);
  assert.equal(top1g, top1);
  assert.equal(top2g, top1);
  // logit_bias +100 on one token: that token every time (on generate, the object as JSON text).
  const one = (await complete({ ...base, seed: 5, max_tokens: 1, logit_bias: { 1000: 100 } })).json().choices[0].text as string;
  assert.ok(one.length > 0);
  const [biased, biasedG] = await texts({ ...base, seed: 5, max_tokens: 6, logit_bias: { 1000: 100 } });
  assert.equal(biased, one.repeat(6));
  assert.equal(biasedG, biased);
  // A token id past the vocabulary biases nothing (llama.cpp skips it).
  assert.equal((await complete({ ...base, max_tokens: 2, logit_bias: { 2147483647: 100 } })).status, 200);
  // A milder bias makes greedy decoding repeat that token; each penalty on tokens already chosen breaks the run.
  const greedy = { max_tokens: 12, ignore_eos: true, temperature: 0, logit_bias: { 1000: 9 } };
  const [plain] = await texts(greedy);
  assert.ok(plain.includes(one.repeat(4)), plain);
  for (const penalty of [{ frequency_penalty: 2 }, { presence_penalty: 2 }, { repetition_penalty: 5 }]) {
    const [penalised, penalisedG] = await texts({ ...greedy, ...penalty });
    assert.ok(!penalised.includes(one.repeat(4)), `${JSON.stringify(penalty)}: ${penalised}`);
    assert.equal(penalisedG, penalised, JSON.stringify(penalty));
  }
});

test('what cannot be honoured is refused with a 400 naming the field, on the OpenAI port and on generate', async () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ logprobs: 6 }, 'logprobs'],
    [{ top_logprobs: 3 }, 'top_logprobs'],
    [{ best_of: 2 }, 'best_of'],
    [{ logit_bias: { x: 1 } }, 'logit_bias'],
    [{ logit_bias: { 5: 500 } }, 'logit_bias'],
    [{ min_p: 2 }, 'min_p'],
    [{ repetition_penalty: 0 }, 'repetition_penalty'],
    [{ presence_penalty: 3 }, 'presence_penalty'],
  ];
  for (const [field, name] of cases) {
    const r = await complete({ max_tokens: 2, ...field });
    assert.equal(r.status, 400, `${JSON.stringify(field)}: ${r.body.toString()}`);
    assert.match(r.json().error.message, new RegExp(`'${name}'`));
    assert.equal(r.json().error.type, 'invalid_request_error');
    const body = typeof field['logit_bias'] === 'object' ? { logit_bias: JSON.stringify(field['logit_bias']) } : field;
    const g = await postJson(`${s.url}/v2/models/tiny_llm/generate`, { text_input: 'Hi', max_tokens: 2, ...body });
    assert.equal(g.status, 400, `generate ${JSON.stringify(body)}: ${g.body.toString()}`);
    assert.match(g.json().error, new RegExp(`'${name}'`));
  }
  // Several choices: the OpenAI port makes one request per choice; generate's one text_output cannot hold them.
  const several = await postJson(`${s.url}/v2/models/tiny_llm/generate`, { text_input: 'Hi', max_tokens: 2, n: 2 });
  assert.equal(several.status, 400);
  assert.match(several.json().error, /'n'/);
  const chatLogprobs = await chat({ max_tokens: 2, logprobs: true, top_logprobs: 21 });
  assert.equal(chatLogprobs.status, 400);
  assert.equal(chatLogprobs.json().error.param, 'top_logprobs');
  // Asking for none is no request at all.
  assert.equal((await complete({ max_tokens: 2, logprobs: 0, best_of: 1 })).status, 200);
  assert.equal((await chat({ max_tokens: 2, logprobs: false, top_logprobs: 0 })).status, 200);
  const noFigures = await postJson(`${s.url}/v2/models/tiny_llm/generate`, { text_input: 'Hi', max_tokens: 2, logprobs: 0 });
  assert.equal(noFigures.status, 200, noFigures.body.toString());
  assert.equal(noFigures.json().logprobs, undefined);
});

test("a prompt past the context answers OpenAI's context_length_exceeded, naming prompt or messages", async () => {
  const long = 'once upon a time '.repeat(800);
  const c = await complete({ prompt: long, max_tokens: 4 });
  assert.equal(c.status, 400, c.body.toString());
  const e = c.json().error;
  assert.deepEqual([e.type, e.param, e.code], ['invalid_request_error', 'prompt', 'context_length_exceeded']);
  assert.match(e.message, /context holds \d+ tokens/);
  const m = await chat({ messages: [{ role: 'user', content: long }], max_tokens: 4 });
  assert.equal(m.status, 400);
  assert.deepEqual([m.json().error.param, m.json().error.code], ['messages', 'context_length_exceeded']);
  // generate answers the same refusal as a 400.
  const g = await postJson(`${s.url}/v2/models/tiny_llm/generate`, { text_input: long, max_tokens: 4 });
  assert.equal(g.status, 400);
  assert.match(g.json().error, /context holds/);
});
