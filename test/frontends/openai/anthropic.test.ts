import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { EXAMPLES } from '../../helpers/paths.js';
import { postJson, request } from '../../helpers/http.js';
import { openAiUrl, spawnServer, type ServerProcess } from '../../helpers/server.js';
import { until } from '../../helpers/until.js';
import { writeKeysFile } from '../../helpers/api-keys.js';

// Anthropic's Messages API on the OpenAI port of `nereid serve`, called with the official @anthropic-ai/sdk
// over the example tiny_llm (llama.cpp, random weights). At temperature 0 a generation is greedy, so the same
// conversation gives the same text on /v1/messages and /v1/chat/completions: the same chat path.

const KEY = 'anthropic-test-key';
const READER_KEY = 'anthropic-test-reader';
let dir: string;
let p: ServerProcess;
let base: string;
let claude: Anthropic;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nereid-anthropic-'));
  const keys = await writeKeysFile(dir, [['admin', '*', KEY], ['reader', 'metadata', READER_KEY]]);
  p = await spawnServer(['--model-repository', EXAMPLES, '--model-control-mode=explicit', '--load-model=tiny_llm', '--openai-port=0', '--openai-address=127.0.0.1', `--api-keys-file=${keys}`, '--allow-metrics=true', '--metrics-port=0']);
  base = await openAiUrl(p);
  await until(async () => (await request(`${p.url}/v2/models/tiny_llm/ready`)).status === 200, 'tiny_llm');
  claude = new Anthropic({ apiKey: KEY, baseURL: base, maxRetries: 0 });
});

after(async () => {
  p?.child.kill('SIGTERM');
  if (p) assert.equal(await p.exited, 0, p.output());
  await rm(dir, { recursive: true, force: true });
});

const HELLO = [{ role: 'user' as const, content: 'Hello there' }];
/** temperature 0, which the server honours; this SDK's types no longer list the sampling fields, so it is spread in untyped. */
const GREEDY: object = { temperature: 0 };

/** The chat completion of the same conversation, at temperature 0. */
async function chatText(messages: { role: string; content: string }[], max_tokens: number): Promise<{ text: string; usage: { prompt_tokens: number; completion_tokens: number } }> {
  const r = await postJson(`${base}/v1/chat/completions`, { model: 'tiny_llm', messages, max_tokens, temperature: 0 }, { authorization: `Bearer ${KEY}` });
  assert.equal(r.status, 200, r.body.toString());
  const j = r.json();
  return { text: j.choices[0].message.content, usage: j.usage };
}

test('messages.create: a message in Anthropic\'s shape, the same text and token counts as the chat completion', async () => {
  const m = await claude.messages.create({ model: 'tiny_llm', max_tokens: 8, ...GREEDY, messages: HELLO, metadata: { user_id: 'u-1' } });
  assert.match(m.id, /^msg_/);
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  assert.equal(m.model, 'tiny_llm');
  assert.equal(m.content.length, 1);
  assert.equal(m.content[0]!.type, 'text');
  const chat = await chatText(HELLO, 8);
  assert.equal((m.content[0] as Anthropic.TextBlock).text, chat.text);
  assert.equal(m.usage.input_tokens, chat.usage.prompt_tokens);
  assert.equal(m.usage.output_tokens, chat.usage.completion_tokens);
  assert.equal(m.stop_reason, chat.usage.completion_tokens === 8 ? 'max_tokens' : 'end_turn');
  assert.equal(m.stop_sequence, null);
});

test('system as a string or as text blocks is the chat\'s system message', async () => {
  const system = 'You are terse.';
  const asString = await claude.messages.create({ model: 'tiny_llm', max_tokens: 6, ...GREEDY, system, messages: HELLO });
  const asBlocks = await claude.messages.create({ model: 'tiny_llm', max_tokens: 6, ...GREEDY, system: [{ type: 'text', text: 'You are ' }, { type: 'text', text: 'terse.' }], messages: HELLO });
  const chat = await chatText([{ role: 'system', content: system }, ...HELLO], 6);
  assert.equal((asString.content[0] as Anthropic.TextBlock).text, chat.text);
  assert.equal((asBlocks.content[0] as Anthropic.TextBlock).text, chat.text);
  assert.equal(asString.usage.input_tokens, chat.usage.prompt_tokens);
});

test('messages.stream: Anthropic\'s event sequence; the text events and finalMessage() hold the whole message', async () => {
  const whole = await claude.messages.create({ model: 'tiny_llm', max_tokens: 10, ...GREEDY, messages: HELLO });
  const stream = claude.messages.stream({ model: 'tiny_llm', max_tokens: 10, ...GREEDY, messages: HELLO });
  const types: string[] = [];
  let text = '';
  stream.on('streamEvent', (e) => types.push(e.type));
  stream.on('text', (delta) => (text += delta));
  const final = await stream.finalMessage();
  const deltas = types.filter((t) => t === 'content_block_delta').length;
  assert.ok(deltas >= 1, types.join());
  assert.deepEqual(types, ['message_start', 'content_block_start', ...Array(deltas).fill('content_block_delta'), 'content_block_stop', 'message_delta', 'message_stop']);
  assert.equal(text, (whole.content[0] as Anthropic.TextBlock).text);
  assert.match(final.id, /^msg_/);
  assert.deepEqual(final.content.map((c) => c.type), ['text']);
  assert.equal((final.content[0] as Anthropic.TextBlock).text, text);
  assert.equal(final.stop_reason, whole.stop_reason);
  assert.deepEqual([final.usage.input_tokens, final.usage.output_tokens], [whole.usage.input_tokens, whole.usage.output_tokens]);
  // The wire: `event:` lines naming each event, as Anthropic sends them.
  const raw = await fetch(`${base}/v1/messages`, { method: 'POST', headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny_llm', max_tokens: 3, ...GREEDY, messages: HELLO, stream: true }) });
  assert.equal(raw.headers.get('content-type'), 'text/event-stream; charset=utf-8');
  const events = (await raw.text()).split('\n\n').filter((e) => e !== '');
  for (const e of events) assert.equal(/^event: (\w+)\ndata: (.*)$/s.exec(e)?.[1], JSON.parse(e.slice(e.indexOf('\ndata: ') + 7)).type, e);
});

test('stop_sequences: the text ends before the first stop string; stop_reason stop_sequence names it, also when streaming', async () => {
  const full = (await chatText(HELLO, 24)).text;
  assert.ok(full.length >= 4, `too short to cut: ${JSON.stringify(full)}`);
  const stop = full.slice(Math.floor(full.length / 2), Math.floor(full.length / 2) + 2);
  const m = await claude.messages.create({ model: 'tiny_llm', max_tokens: 24, ...GREEDY, messages: HELLO, stop_sequences: ['never-in-this-text', stop] });
  assert.equal(m.stop_reason, 'stop_sequence');
  assert.equal(m.stop_sequence, stop);
  assert.equal((m.content[0] as Anthropic.TextBlock).text, full.slice(0, full.indexOf(stop)));
  const streamed = await claude.messages.stream({ model: 'tiny_llm', max_tokens: 24, ...GREEDY, messages: HELLO, stop_sequences: [stop] }).finalMessage();
  assert.equal(streamed.stop_reason, 'stop_sequence');
  assert.equal(streamed.stop_sequence, stop);
  assert.equal((streamed.content[0] as Anthropic.TextBlock).text, full.slice(0, full.indexOf(stop)));
});

test('a streamed message\'s tokens count in nereid_*_token_count, as a chat completion\'s do', async () => {
  const sample = (text: string, name: string): number => {
    const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes('model="tiny_llm"'));
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
  };
  const metrics = async (): Promise<string> => (await request(`${base}/metrics`, { headers: { authorization: `Bearer ${KEY}` } })).body.toString();
  const before = await metrics();
  const m = await claude.messages.stream({ model: 'tiny_llm', max_tokens: 7, ...GREEDY, messages: HELLO }).finalMessage();
  const after = await metrics();
  assert.equal(sample(after, 'nereid_generated_token_count') - sample(before, 'nereid_generated_token_count'), m.usage.output_tokens);
  assert.equal(sample(after, 'nereid_prompt_token_count') - sample(before, 'nereid_prompt_token_count'), m.usage.input_tokens);
  assert.ok(m.usage.input_tokens > 0 && m.usage.output_tokens > 0);
});

test('count_tokens: the prompt tokens the chat path counts for the same conversation', async () => {
  const system = 'Be brief.';
  const counted = await claude.messages.countTokens({ model: 'tiny_llm', system, messages: HELLO });
  const chat = await chatText([{ role: 'system', content: system }, ...HELLO], 1);
  assert.equal(counted.input_tokens, chat.usage.prompt_tokens);
  assert.ok(counted.input_tokens > (await claude.messages.countTokens({ model: 'tiny_llm', messages: HELLO })).input_tokens);
});

test('a client that drops a stream cancels its generation, counted as a failure; the model serves the next requests', async () => {
  const inferenceStats = async (): Promise<any> => {
    const r = await request(`${p.url}/v2/models/tiny_llm/stats`, { headers: { authorization: `Bearer ${KEY}` } });
    return r.json().model_stats[0].inference_stats;
  };
  const before = await inferenceStats();
  // Four streams (as many as the model's parallel sequences); greedy, this conversation runs the whole 900
  // tokens (seconds), so each is still generating when its client leaves after three pieces of text.
  await Promise.all([1, 2, 3, 4].map(async () => {
    const stream = claude.messages.stream({ model: 'tiny_llm', max_tokens: 900, ...GREEDY, messages: HELLO });
    let pieces = 0;
    for await (const e of stream) {
      if (e.type === 'content_block_delta' && ++pieces === 3) break;
      assert.notEqual(e.type, 'message_stop', 'the stream ended before the client left');
    }
  }));
  // If a dropped generation kept its sequence, these would wait for one.
  const next = await Promise.all([1, 2, 3, 4].map(() => claude.messages.create({ model: 'tiny_llm', max_tokens: 2, ...GREEDY, messages: HELLO })));
  for (const m of next) assert.equal(m.usage.output_tokens, 2);
  let stats: any;
  await until(async () => {
    stats = await inferenceStats();
    return stats.fail.count - before.fail.count >= 4;
  }, 'the cancelled requests counted', 30_000);
  assert.equal(stats.fail.count - before.fail.count, 4);
  assert.equal(stats.success.count - before.success.count, 4);
});

/** The SDK's error for a request, which must be one. */
async function refused(call: Promise<unknown>): Promise<InstanceType<typeof Anthropic.APIError>> {
  const e = await call.then(() => assert.fail('expected an error'), (err: unknown) => err);
  assert.ok(e instanceof Anthropic.APIError, String(e));
  return e;
}

test('errors in Anthropic\'s shape: a missing max_tokens, an unknown model, fields and blocks refused by name', async () => {
  const missing = await refused(claude.messages.create({ model: 'tiny_llm', messages: HELLO } as unknown as Anthropic.MessageCreateParamsNonStreaming));
  assert.ok(missing instanceof Anthropic.BadRequestError);
  assert.deepEqual(missing.error, { type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: Field required' } });
  const unknown = await refused(claude.messages.create({ model: 'no-such-model', max_tokens: 4, messages: HELLO }));
  assert.ok(unknown instanceof Anthropic.NotFoundError);
  assert.equal((unknown.error as any).error.type, 'not_found_error');
  const tools = await refused(claude.messages.create({ model: 'tiny_llm', max_tokens: 4, messages: HELLO, tools: [{ type: 'web_search_20250305', name: 'web_search' }] }));
  assert.ok(tools instanceof Anthropic.BadRequestError);
  assert.match((tools.error as any).error.message, /^tools\.0\.type: tools of type "web_search_20250305" are not supported/);
  const image = await refused(claude.messages.create({ model: 'tiny_llm', max_tokens: 4, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }] }] }));
  assert.match((image.error as any).error.message, /^messages\.0\.content\.0\.type: content blocks of type "image" are not supported/);
  const meta = await refused(claude.messages.create({ model: 'tiny_llm', max_tokens: 4, messages: HELLO, metadata: { tenant: 'x' } as Anthropic.Metadata }));
  assert.match((meta.error as any).error.message, /^metadata\.tenant: not supported/);
  // A prompt and max_tokens past the model's context (1024 tokens), asked for whole or streamed.
  const tooLong = { model: 'tiny_llm', max_tokens: 1020, messages: HELLO };
  for (const call of [() => claude.messages.create(tooLong), () => claude.messages.stream(tooLong).finalMessage()]) {
    const big = await refused(call());
    assert.ok(big instanceof Anthropic.BadRequestError);
    assert.match((big.error as any).error.message, /context holds \d+ tokens/);
  }
  // An unknown path under /v1/messages is Anthropic's 404 too.
  const r = await postJson(`${base}/v1/messages/batches`, {}, { 'x-api-key': KEY });
  assert.equal(r.status, 404);
  assert.equal(r.json().error.type, 'not_found_error');
});

test('the API key: x-api-key or Authorization: Bearer; a wrong one is authentication_error, a missing scope permission_error', async () => {
  const bearer = new Anthropic({ authToken: KEY, apiKey: null, baseURL: base, maxRetries: 0 });
  const viaBearer = await bearer.messages.create({ model: 'tiny_llm', max_tokens: 2, messages: HELLO });
  assert.equal(viaBearer.type, 'message');
  const wrong = await refused(new Anthropic({ apiKey: 'not-a-key', baseURL: base, maxRetries: 0 }).messages.create({ model: 'tiny_llm', max_tokens: 2, messages: HELLO }));
  assert.ok(wrong instanceof Anthropic.AuthenticationError);
  assert.equal((wrong.error as any).error.type, 'authentication_error');
  const none = await fetch(`${base}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny_llm', max_tokens: 2, messages: HELLO }) });
  assert.equal(none.status, 401);
  assert.deepEqual(await none.json(), { type: 'error', error: { type: 'authentication_error', message: 'x-api-key header is required' } });
  const reader = await refused(new Anthropic({ apiKey: READER_KEY, baseURL: base, maxRetries: 0 }).messages.create({ model: 'tiny_llm', max_tokens: 2, messages: HELLO }));
  assert.ok(reader instanceof Anthropic.PermissionDeniedError);
  assert.equal((reader.error as any).error.type, 'permission_error');
});
