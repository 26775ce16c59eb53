import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { Ajv } from 'ajv';
import { EXAMPLES } from '../../helpers/paths.js';
import { postJson, request } from '../../helpers/http.js';
import { openAiUrl, spawnServer, type ServerProcess } from '../../helpers/server.js';
import { until } from '../../helpers/until.js';
import { REDIS_SKIP, freeRedisPort, startRedis } from '../../helpers/redis.js';
import { writeKeysFile } from '../../helpers/api-keys.js';

// OpenAI's Responses API on the OpenAI port of `nereid serve`, called with the official openai client over the
// example tiny_llm (llama.cpp, random weights: gibberish, so the tests check shapes, counts and limits). At
// temperature 0 a generation is greedy, so the same conversation gives the same text and prompt token count on
// /v1/responses and /v1/chat/completions: the same chat path.

const KEY = 'responses-test-key';
const OTHER_KEY = 'responses-test-other';
const READER_KEY = 'responses-test-reader';
let dir: string;
let p: ServerProcess;
let base: string;
let client: OpenAI;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nereid-responses-'));
  const keys = await writeKeysFile(dir, [['admin', '*', KEY], ['other', 'inference', OTHER_KEY], ['reader', 'metadata', READER_KEY]]);
  p = await spawnServer(['--model-repository', EXAMPLES, '--model-control-mode=explicit', '--load-model=tiny_llm', '--openai-port=0', '--openai-address=127.0.0.1', `--api-keys-file=${keys}`, '--allow-metrics=true', '--metrics-port=0']);
  base = await openAiUrl(p);
  await until(async () => (await request(`${p.url}/v2/models/tiny_llm/ready`)).status === 200, 'tiny_llm');
  client = new OpenAI({ apiKey: KEY, baseURL: `${base}/v1`, maxRetries: 0 });
});

after(async () => {
  p?.child.kill('SIGTERM');
  if (p) assert.equal(await p.exited, 0, p.output());
  await rm(dir, { recursive: true, force: true });
});

const HELLO = 'Hello there';

/** The chat completion of the same conversation, at temperature 0. */
async function chat(messages: { role: string; content: string }[], max_tokens: number): Promise<{ text: string; usage: { prompt_tokens: number; completion_tokens: number } }> {
  const r = await postJson(`${base}/v1/chat/completions`, { model: 'tiny_llm', messages, max_tokens, temperature: 0 }, { authorization: `Bearer ${KEY}` });
  assert.equal(r.status, 200, r.body.toString());
  const j = r.json();
  return { text: j.choices[0].message.content, usage: j.usage };
}

test('responses.create: a response in OpenAI\'s shape, the chat completion\'s text and token counts; output_text works', async () => {
  const r = await client.responses.create({ model: 'tiny_llm', input: HELLO, instructions: 'Be brief.', max_output_tokens: 64, temperature: 0, metadata: { tag: 'a' }, user: 'u-1' });
  assert.match(r.id, /^resp_/);
  assert.equal(r.object, 'response');
  assert.equal(r.model, 'tiny_llm');
  assert.ok(Number.isInteger(r.created_at));
  assert.equal(r.output.length, 1);
  const item = r.output[0] as OpenAI.Responses.ResponseOutputMessage;
  assert.equal(item.type, 'message');
  assert.match(item.id, /^msg_/);
  assert.equal(item.role, 'assistant');
  assert.deepEqual(item.content.map((c) => c.type), ['output_text']);
  const same = await chat([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: HELLO }], 64);
  assert.equal(r.output_text, same.text);
  assert.equal(r.usage!.input_tokens, same.usage.prompt_tokens);
  assert.equal(r.usage!.output_tokens, same.usage.completion_tokens);
  assert.equal(r.usage!.total_tokens, same.usage.prompt_tokens + same.usage.completion_tokens);
  assert.equal(r.status, same.usage.completion_tokens === 64 ? 'incomplete' : 'completed');
  // The request's fields, echoed.
  assert.equal(r.instructions, 'Be brief.');
  assert.equal(r.max_output_tokens, 64);
  assert.equal(r.temperature, 0);
  assert.deepEqual(r.metadata, { tag: 'a' });
  assert.equal(r.user, 'u-1');
  assert.equal((r as unknown as { store: boolean }).store, true);
  assert.deepEqual(r.text, { format: { type: 'text' } });
  assert.deepEqual(r.tools, []);
  assert.equal(r.error, null);
});

test('input as message items (content strings and input_text / output_text parts) is the chat\'s conversation', async () => {
  const r = await client.responses.create({
    model: 'tiny_llm', max_output_tokens: 6, temperature: 0,
    input: [
      { role: 'developer', content: 'Answer in one word.' },
      { role: 'user', content: [{ type: 'input_text', text: 'Hello ' }, { type: 'input_text', text: 'there' }] },
      // An assistant's output sent back as input, as the SDK's types want it: with the id and status it came with.
      { type: 'message', id: 'msg_earlier', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Hi.', annotations: [] }] },
      { role: 'user', content: 'Again?' },
    ],
  });
  const same = await chat([{ role: 'developer', content: 'Answer in one word.' }, { role: 'user', content: HELLO }, { role: 'assistant', content: 'Hi.' }, { role: 'user', content: 'Again?' }], 6);
  assert.equal(r.output_text, same.text);
  assert.equal(r.usage!.input_tokens, same.usage.prompt_tokens);
});

test('max_output_tokens: the text stops there, status incomplete with reason max_output_tokens, whole and streamed', async () => {
  const r = await client.responses.create({ model: 'tiny_llm', input: HELLO, max_output_tokens: 3, temperature: 0 });
  assert.equal(r.status, 'incomplete');
  assert.deepEqual(r.incomplete_details, { reason: 'max_output_tokens' });
  assert.equal(r.usage!.output_tokens, 3);
  assert.equal((r.output[0] as OpenAI.Responses.ResponseOutputMessage).status, 'incomplete');
  const types: string[] = [];
  const stream = client.responses.stream({ model: 'tiny_llm', input: HELLO, max_output_tokens: 3, temperature: 0 });
  stream.on('event', (e) => types.push(e.type));
  const final = await stream.finalResponse();
  assert.equal(types.at(-1), 'response.incomplete');
  assert.equal(final.status, 'incomplete');
  assert.equal(final.output_text, r.output_text);
  assert.equal(final.usage!.output_tokens, 3);
});

test('responses.stream: the typed events in order with sequence numbers; the delta events and finalResponse() hold the text', async () => {
  const whole = await client.responses.create({ model: 'tiny_llm', input: HELLO, max_output_tokens: 12, temperature: 0 });
  const stream = client.responses.stream({ model: 'tiny_llm', input: HELLO, max_output_tokens: 12, temperature: 0 });
  const types: string[] = [];
  const sequence: number[] = [];
  let text = '';
  stream.on('event', (e) => {
    types.push(e.type);
    sequence.push(e.sequence_number);
  });
  stream.on('response.output_text.delta', (e) => (text += e.delta));
  const final = await stream.finalResponse();
  const deltas = types.filter((t) => t === 'response.output_text.delta').length;
  assert.ok(deltas >= 2, types.join());
  assert.deepEqual(types, [
    'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
    ...Array(deltas).fill('response.output_text.delta'),
    'response.output_text.done', 'response.content_part.done', 'response.output_item.done', whole.status === 'completed' ? 'response.completed' : 'response.incomplete',
  ]);
  assert.deepEqual(sequence, types.map((_, i) => i));
  assert.equal(text, whole.output_text);
  assert.equal(final.output_text, whole.output_text);
  assert.match(final.id, /^resp_/);
  assert.notEqual(final.id, whole.id);
  assert.deepEqual([final.usage!.input_tokens, final.usage!.output_tokens], [whole.usage!.input_tokens, whole.usage!.output_tokens]);
  // The wire: an `event:` line naming each event's type.
  const raw = await fetch(`${base}/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny_llm', input: HELLO, max_output_tokens: 3, stream: true }) });
  assert.equal(raw.headers.get('content-type'), 'text/event-stream; charset=utf-8');
  const events = (await raw.text()).split('\n\n').filter((e) => e !== '');
  for (const e of events) assert.equal(/^event: ([\w.]+)\ndata: (.*)$/s.exec(e)?.[1], JSON.parse(e.slice(e.indexOf('\ndata: ') + 7)).type, e);
});

/** What OpenAI's strict mode takes: every property required, no others. */
const SCHEMA = {
  type: 'object',
  properties: {
    sky: { type: 'string', enum: ['clear', 'cloudy', 'rain'] },
    windy: { type: 'boolean' },
    hours: { type: 'array', items: { type: 'integer', enum: [6, 12, 18] }, maxItems: 2 },
  },
  required: ['sky', 'windy', 'hours'],
  additionalProperties: false,
} as const;

test('text.format json_schema (strict) and json_object: every answer, whole or streamed, parses (and validates)', async () => {
  const validate = new Ajv().compile(SCHEMA);
  const format = { format: { type: 'json_schema' as const, name: 'weather', schema: SCHEMA, strict: true } };
  for (const temperature of [0, 1]) {
    const r = await client.responses.create({ model: 'tiny_llm', input: 'The weather as JSON.', text: format, max_output_tokens: 200, temperature });
    assert.equal(r.status, 'completed', r.output_text);
    assert.ok(validate(JSON.parse(r.output_text)), `${r.output_text} ${JSON.stringify(validate.errors)}`);
    assert.deepEqual(r.text, { format: { type: 'json_schema', name: 'weather', schema: SCHEMA, strict: true } });
    const streamed = await client.responses.stream({ model: 'tiny_llm', input: 'The weather as JSON.', text: format, max_output_tokens: 200, temperature }).finalResponse();
    assert.equal(streamed.status, 'completed', streamed.output_text);
    assert.ok(validate(JSON.parse(streamed.output_text)), streamed.output_text);
  }
  const object = await client.responses.create({ model: 'tiny_llm', input: 'JSON please.', text: { format: { type: 'json_object' } }, max_output_tokens: 300, temperature: 0 });
  if (object.status === 'completed') assert.equal(typeof JSON.parse(object.output_text), 'object');
  else assert.equal(object.incomplete_details?.reason, 'max_output_tokens');
});

test('store and previous_response_id: the earlier input and output come first; the prompt is the whole conversation\'s', async () => {
  const first = await client.responses.create({ model: 'tiny_llm', input: HELLO, max_output_tokens: 8, temperature: 0 });
  const second = await client.responses.create({ model: 'tiny_llm', input: 'And then?', previous_response_id: first.id, max_output_tokens: 8, temperature: 0, instructions: 'Be brief.' });
  assert.equal(second.previous_response_id, first.id);
  const same = await chat([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: HELLO }, { role: 'assistant', content: first.output_text }, { role: 'user', content: 'And then?' }], 8);
  assert.equal(second.usage!.input_tokens, same.usage.prompt_tokens);
  assert.ok(second.usage!.input_tokens > first.usage!.input_tokens + first.usage!.output_tokens);
  assert.equal(second.output_text, same.text);
  // A third turn, streamed, continues the second (instructions are not carried over, as in OpenAI's API).
  const third = await client.responses.stream({ model: 'tiny_llm', input: 'Why?', previous_response_id: second.id, max_output_tokens: 4, temperature: 0 }).finalResponse();
  const sameThird = await chat([{ role: 'user', content: HELLO }, { role: 'assistant', content: first.output_text }, { role: 'user', content: 'And then?' }, { role: 'assistant', content: second.output_text }, { role: 'user', content: 'Why?' }], 4);
  assert.equal(third.usage!.input_tokens, sameThird.usage.prompt_tokens);
  assert.equal(third.output_text, sameThird.text);
  const missing = await refused(client.responses.create({ model: 'tiny_llm', input: HELLO, previous_response_id: 'resp_nosuch' }));
  assert.ok(missing instanceof OpenAI.NotFoundError);
  assert.equal(missing.param, 'previous_response_id');
  assert.equal(missing.message, "404 Previous response with id 'resp_nosuch' not found.");
});

test('retrieve, input_items and delete; then the id is unknown: OpenAI\'s 404', async () => {
  const created = await client.responses.create({ model: 'tiny_llm', input: [{ role: 'user', content: 'One' }, { role: 'assistant', content: 'Two' }, { role: 'user', content: 'Three' }], max_output_tokens: 4, temperature: 0 });
  const got = await client.responses.retrieve(created.id);
  assert.deepEqual(got, created);
  const items = await client.responses.inputItems.list(created.id, { order: 'asc' });
  assert.deepEqual(items.data.map((i) => [(i as any).role, (i as any).content[0].type, (i as any).content[0].text]), [['user', 'input_text', 'One'], ['assistant', 'output_text', 'Two'], ['user', 'input_text', 'Three']]);
  for (const i of items.data) assert.match(i.id!, /^msg_/);
  const desc = await request(`${base}/v1/responses/${created.id}/input_items?limit=2`, { headers: { authorization: `Bearer ${KEY}` } });
  assert.deepEqual(desc.json().data.map((i: any) => i.content[0].text), ['Three', 'Two']);
  assert.equal(desc.json().has_more, true);
  const deleted = await request(`${base}/v1/responses/${created.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${KEY}` } });
  assert.deepEqual(deleted.json(), { id: created.id, object: 'response', deleted: true });
  const gone = await refused(client.responses.retrieve(created.id));
  assert.ok(gone instanceof OpenAI.NotFoundError);
  assert.deepEqual(gone.error, { message: `Response with id '${created.id}' not found.`, type: 'invalid_request_error', param: null, code: null });
  assert.ok(await refused(client.responses.delete(created.id)) instanceof OpenAI.NotFoundError);
  assert.ok(await refused(client.responses.retrieve('resp_never')) instanceof OpenAI.NotFoundError);
  assert.ok(await refused(client.responses.retrieve('not an id')) instanceof OpenAI.NotFoundError);
});

test('store: false keeps nothing; a stored response is another key\'s to see only if it made it', async () => {
  const unstored = await client.responses.create({ model: 'tiny_llm', input: HELLO, max_output_tokens: 2, store: false });
  assert.equal((unstored as unknown as { store: boolean }).store, false);
  assert.ok(await refused(client.responses.retrieve(unstored.id)) instanceof OpenAI.NotFoundError);
  const streamed = await client.responses.stream({ model: 'tiny_llm', input: HELLO, max_output_tokens: 2, store: false }).finalResponse();
  assert.ok(await refused(client.responses.retrieve(streamed.id)) instanceof OpenAI.NotFoundError);
  const mine = await client.responses.create({ model: 'tiny_llm', input: HELLO, max_output_tokens: 2 });
  const other = new OpenAI({ apiKey: OTHER_KEY, baseURL: `${base}/v1`, maxRetries: 0 });
  assert.ok(await refused(other.responses.retrieve(mine.id)) instanceof OpenAI.NotFoundError);
  assert.ok(await refused(other.responses.create({ model: 'tiny_llm', input: HELLO, previous_response_id: mine.id })) instanceof OpenAI.NotFoundError);
  assert.ok(await refused(other.responses.delete(mine.id)) instanceof OpenAI.NotFoundError);
  assert.equal((await client.responses.retrieve(mine.id)).id, mine.id);
  const reader = new OpenAI({ apiKey: READER_KEY, baseURL: `${base}/v1`, maxRetries: 0 });
  assert.ok(await refused(reader.responses.create({ model: 'tiny_llm', input: HELLO, max_output_tokens: 2 })) instanceof OpenAI.PermissionDeniedError);
});

test('responses.inputTokens.count: the prompt tokens /v1/responses counts for the same conversation, previous_response_id\'s included', async () => {
  const r = await client.responses.create({ model: 'tiny_llm', input: HELLO, instructions: 'Be brief.', max_output_tokens: 3, temperature: 0 });
  const counted = await client.responses.inputTokens.count({ model: 'tiny_llm', input: HELLO, instructions: 'Be brief.' });
  assert.deepEqual(counted, { object: 'response.input_tokens', input_tokens: r.usage!.input_tokens });
  const next = await client.responses.create({ model: 'tiny_llm', input: 'More?', previous_response_id: r.id, max_output_tokens: 2, temperature: 0 });
  assert.equal((await client.responses.inputTokens.count({ model: 'tiny_llm', input: 'More?', previous_response_id: r.id })).input_tokens, next.usage!.input_tokens);
  const e = await refused(client.responses.inputTokens.count({ model: 'tiny_llm', input: HELLO, max_output_tokens: 3 } as OpenAI.Responses.InputTokenCountParams));
  assert.equal(e.param, 'max_output_tokens');
});

/** The SDK's error for a request, which must be one. */
async function refused(call: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const e = await call.then(() => assert.fail('expected an error'), (err: unknown) => err);
  assert.ok(e instanceof OpenAI.APIError, String(e));
  return e;
}

test('fields refused by name, harmless values accepted, a conversation past the context refused as context_length_exceeded', async () => {
  const create = (extra: object): Promise<unknown> => client.responses.create({ model: 'tiny_llm', input: HELLO, max_output_tokens: 2, ...extra });
  const tools = await refused(create({ tools: [{ type: 'web_search' }] }));
  assert.ok(tools instanceof OpenAI.BadRequestError);
  assert.equal(tools.param, 'tools[0].type');
  assert.match(tools.message, /"web_search" is not supported by this server/);
  for (const [field, value] of [['reasoning', { effort: 'low' }], ['background', true], ['truncation', 'auto'], ['include', ['message.output_text.logprobs']], ['conversation', 'conv_1'], ['prompt', { id: 'p' }]] as const) {
    const e = await refused(create({ [field]: value }));
    assert.equal(e.param, field, e.message);
  }
  const image = await refused(create({ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://example.com/a.png', detail: 'auto' }] }] }));
  assert.equal(image.param, 'input[0].content[0].type');
  const call = await refused(create({ input: [{ type: 'reasoning', id: 'rs_1', summary: [] }] }));
  assert.equal(call.param, 'input[0].type');
  const name = await refused(create({ text: { format: { type: 'json_schema', name: 'no spaces allowed', schema: {} } } }));
  assert.equal(name.param, 'text.format.name');
  const metadata = await refused(create({ metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) }));
  assert.equal(metadata.param, 'metadata');
  const ok = await create({ tools: [], tool_choice: 'auto', parallel_tool_calls: true, background: false, truncation: 'disabled', include: [], reasoning: null, service_tier: 'auto' }) as OpenAI.Responses.Response;
  assert.equal(ok.usage!.output_tokens, 2);
  const tooLong = { model: 'tiny_llm', input: HELLO, max_output_tokens: 1020 };
  for (const c of [() => client.responses.create(tooLong), () => client.responses.stream(tooLong).finalResponse()]) {
    const big = await refused(c());
    assert.ok(big instanceof OpenAI.BadRequestError);
    assert.equal(big.code, 'context_length_exceeded');
    assert.equal(big.param, 'input');
  }
});

test('a response\'s tokens count in nereid_*_token_count, as a chat completion\'s do', async () => {
  const sample = (text: string, name: string): number => {
    const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes('model="tiny_llm"'));
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
  };
  const metrics = async (): Promise<string> => (await request(`${base}/metrics`, { headers: { authorization: `Bearer ${KEY}` } })).body.toString();
  const before = await metrics();
  const r = await client.responses.stream({ model: 'tiny_llm', input: HELLO, max_output_tokens: 7, temperature: 0 }).finalResponse();
  const after = await metrics();
  assert.equal(sample(after, 'nereid_generated_token_count') - sample(before, 'nereid_generated_token_count'), r.usage!.output_tokens);
  assert.equal(sample(after, 'nereid_prompt_token_count') - sample(before, 'nereid_prompt_token_count'), r.usage!.input_tokens);
  assert.ok(r.usage!.input_tokens > 0 && r.usage!.output_tokens > 0);
});

test('a client that drops a stream cancels its generation, counted as a failure; the model serves the next requests', async () => {
  const inferenceStats = async (): Promise<any> => {
    const r = await request(`${p.url}/v2/models/tiny_llm/stats`, { headers: { authorization: `Bearer ${KEY}` } });
    return r.json().model_stats[0].inference_stats;
  };
  const before = await inferenceStats();
  // Four streams (as many as the model's parallel sequences); greedy, this conversation runs the whole 900
  // tokens (seconds), so each is still generating when its client leaves after three pieces of text.
  const ids: string[] = [];
  await Promise.all([1, 2, 3, 4].map(async () => {
    const stream = client.responses.stream({ model: 'tiny_llm', input: HELLO, max_output_tokens: 900, temperature: 0 });
    let pieces = 0;
    for await (const e of stream) {
      if (e.type === 'response.created') ids.push(e.response.id);
      if (e.type === 'response.output_text.delta' && ++pieces === 3) break;
      assert.notEqual(e.type, 'response.completed', 'the stream ended before the client left');
    }
  }));
  // If a dropped generation kept its sequence, these would wait for one.
  const next = await Promise.all([1, 2, 3, 4].map(() => client.responses.create({ model: 'tiny_llm', input: HELLO, max_output_tokens: 2, temperature: 0 })));
  for (const r of next) assert.equal(r.usage!.output_tokens, 2);
  let stats: any;
  await until(async () => {
    stats = await inferenceStats();
    return stats.fail.count - before.fail.count >= 4;
  }, 'the cancelled requests counted', 30_000);
  assert.equal(stats.fail.count - before.fail.count, 4);
  assert.equal(stats.success.count - before.success.count, 4);
  // A dropped response is not stored.
  assert.equal(ids.length, 4);
  for (const id of ids) assert.ok(await refused(client.responses.retrieve(id)) instanceof OpenAI.NotFoundError);
});

describe('--openai-response-store redis://…: servers sharing one Redis see each other\'s stored responses', { skip: REDIS_SKIP }, () => {
  let redisPort: number;
  let redis: ChildProcess;
  let a: ServerProcess;
  let b: ServerProcess;
  const cli = (...args: string[]): string => spawnSync('redis-cli', ['-p', String(redisPort), '-n', '5', ...args], { encoding: 'utf8' }).stdout.trim();

  before(async () => {
    redisPort = await freeRedisPort();
    redis = await startRedis(redisPort);
    const store = `--openai-response-store=redis://127.0.0.1:${redisPort}/5`;
    // B loads no model: reading and deleting stored responses needs none.
    [a, b] = await Promise.all([
      spawnServer(['--model-repository', EXAMPLES, '--model-control-mode=explicit', '--load-model=tiny_llm', '--openai-port=0', '--openai-address=127.0.0.1', store]),
      spawnServer(['--model-repository', EXAMPLES, '--model-control-mode=explicit', '--openai-port=0', '--openai-address=127.0.0.1', store]),
    ]);
  });

  after(async () => {
    for (const s of [a, b]) s?.child.kill('SIGTERM');
    for (const s of [a, b]) if (s) assert.equal(await s.exited, 0, s.output());
    redis?.kill();
  });

  test('stored on one, retrieved, continued and deleted through the other; kept in Redis with a TTL', async () => {
    const [onA, onB] = await Promise.all([a, b].map(async (s) => new OpenAI({ apiKey: 'unused', baseURL: `${await openAiUrl(s)}/v1`, maxRetries: 0 })));
    await until(async () => (await request(`${a.url}/v2/models/tiny_llm/ready`)).status === 200, 'tiny_llm');
    const first = await onA!.responses.create({ model: 'tiny_llm', input: HELLO, max_output_tokens: 4, temperature: 0 });
    assert.deepEqual(await onB!.responses.retrieve(first.id), first);
    const pttl = Number(cli('pttl', `nereid:resp:${first.id}`));
    assert.ok(pttl > 23 * 3600 * 1000 && pttl <= 24 * 3600 * 1000, String(pttl));
    const second = await onA!.responses.stream({ model: 'tiny_llm', input: 'And then?', previous_response_id: first.id, max_output_tokens: 4, temperature: 0 }).finalResponse();
    assert.ok(second.usage!.input_tokens > first.usage!.input_tokens + first.usage!.output_tokens);
    assert.equal((await onB!.responses.inputItems.list(second.id)).data.length, 1);
    await onB!.responses.delete(first.id);
    assert.ok(await refused(onA!.responses.retrieve(first.id)) instanceof OpenAI.NotFoundError);
    assert.equal(cli('exists', `nereid:resp:${first.id}`), '0');
    const unstored = await onA!.responses.create({ model: 'tiny_llm', input: HELLO, max_output_tokens: 2, store: false });
    assert.equal(cli('exists', `nereid:resp:${unstored.id}`), '0');
  });

  test('a Redis gone: storing fails a whole response as 503 and a stream with the error and response.failed events', async () => {
    const onA = new OpenAI({ apiKey: 'unused', baseURL: `${await openAiUrl(a)}/v1`, maxRetries: 0 });
    redis.kill();
    await new Promise((r) => redis.once('exit', r));
    const whole = await refused(onA.responses.create({ model: 'tiny_llm', input: HELLO, max_output_tokens: 2 }));
    assert.equal(whole.status, 503);
    assert.match(whole.message, /the response store \(--openai-response-store redis:\/\/127\.0\.0\.1:\d+\/5\) did not answer/);
    // The text streams, then the response cannot be stored: the stream ends in an error, never in response.completed.
    const raw = await fetch(`${await openAiUrl(a)}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny_llm', input: HELLO, max_output_tokens: 3, stream: true }) });
    const events = (await raw.text()).split('\n\n').filter((e) => e !== '').map((e) => JSON.parse(e.slice(e.indexOf('\ndata: ') + 7)));
    const types = events.map((e) => e.type);
    assert.deepEqual(types.slice(-2), ['error', 'response.failed'], types.join());
    assert.ok(types.includes('response.output_text.delta'));
    assert.ok(!types.includes('response.completed'));
    assert.equal(events.at(-2).code, 'service_unavailable');
    assert.equal(events.at(-1).response.status, 'failed');
    assert.deepEqual(Object.keys(events.at(-1).response.error), ['code', 'message']);
    assert.equal(events.at(-1).response.error.code, 'server_error');
    // The SDK's stream helper rejects with the error.
    const streamed = await refused(onA.responses.stream({ model: 'tiny_llm', input: HELLO, max_output_tokens: 2 }).finalResponse());
    assert.match(streamed.message, /did not answer/);
  });
});
