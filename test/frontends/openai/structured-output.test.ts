import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { Ajv } from 'ajv';
import { EXAMPLES } from '../../helpers/paths.js';
import { postJson } from '../../helpers/http.js';
import { openAiUrl, spawnServer, type ServerProcess } from '../../helpers/server.js';

// Structured output (response_format) with the official openai client against `nereid serve` and the example
// tiny_llm (random weights, real llama.cpp): whatever gibberish the model draws, the grammar lets it write only
// JSON the format accepts, so every finished answer parses and validates.

let p: ServerProcess;
let client: OpenAI;
before(async () => {
  p = await spawnServer(['--model-repository', EXAMPLES, '--model-control-mode=explicit', '--load-model=tiny_llm', '--openai-port=0', '--openai-address=127.0.0.1']);
  const openai = await openAiUrl(p);
  client = new OpenAI({ baseURL: `${openai}/v1`, apiKey: 'unused', maxRetries: 0 });
});
after(async () => {
  p.child.kill('SIGTERM');
  await p.exited;
});

const messages = [{ role: 'user' as const, content: 'Describe the weather as JSON.' }];

/** What OpenAI's strict mode takes: every property required, no others; with anyOf, $defs and $ref. */
const SCHEMA = {
  type: 'object',
  properties: {
    sky: { type: 'string', enum: ['clear', 'cloudy', 'rain'] },
    windy: { type: 'boolean' },
    hours: { type: 'array', items: { $ref: '#/$defs/hour' }, maxItems: 2 },
    note: { anyOf: [{ type: 'null' }, { type: 'string', maxLength: 6 }] },
  },
  required: ['sky', 'windy', 'hours', 'note'],
  additionalProperties: false,
  $defs: { hour: { type: 'integer', enum: [6, 12, 18] } },
} as const;
const validate = new Ajv().compile(SCHEMA);

test('json_schema (strict): every answer, whole or streamed, parses and validates against the schema', async () => {
  const format = { type: 'json_schema' as const, json_schema: { name: 'weather', schema: SCHEMA, strict: true } };
  for (const seed of [1, 2]) {
    const r = await client.chat.completions.create({ model: 'tiny_llm', messages, response_format: format, max_tokens: 200, seed });
    const c = r.choices[0]!;
    assert.equal(c.finish_reason, 'stop', c.message.content ?? '');
    const value = JSON.parse(c.message.content!);
    assert.ok(validate(value), `${c.message.content} ${JSON.stringify(validate.errors)}`);
    // The same draw streamed: the same text, in pieces.
    let streamed = '';
    for await (const chunk of await client.chat.completions.create({ model: 'tiny_llm', messages, response_format: format, max_tokens: 200, seed, stream: true })) {
      streamed += chunk.choices[0]?.delta.content ?? '';
    }
    assert.equal(streamed, c.message.content);
  }
});

test('json_object: a finished answer is a JSON object; one cut by max_tokens says length', async () => {
  let finished = 0;
  for (const seed of [1, 2, 3, 4]) {
    const r = await client.chat.completions.create({ model: 'tiny_llm', messages, response_format: { type: 'json_object' }, max_tokens: 48, seed });
    const c = r.choices[0]!;
    const text = c.message.content!;
    assert.match(text, /^\s*\{/, text);
    if (c.finish_reason === 'stop') {
      const value: unknown = JSON.parse(text);
      assert.ok(typeof value === 'object' && value !== null && !Array.isArray(value), text);
      finished++;
    } else {
      // The grammar does not close what max_tokens cuts short, as OpenAI does not.
      assert.equal(c.finish_reason, 'length');
      assert.equal(r.usage?.completion_tokens, 48);
    }
  }
  // Without the grammar, random weights write no JSON at all; with it, at least some answers close.
  assert.ok(finished > 0, 'no answer finished within max_tokens');
  // Completions take it too (as vLLM's do; the client's types know it only for chat).
  const c = await client.completions.create({ model: 'tiny_llm', prompt: 'JSON:', max_tokens: 48, seed: 1, response_format: { type: 'json_object' } } as never);
  const text = c.choices[0]!.text;
  assert.match(text, /^\s*\{/, text);
  if (c.choices[0]!.finish_reason === 'stop') assert.equal(typeof JSON.parse(text), 'object');
});

test('a schema keyword constrained decoding cannot honour is a 400 naming it; so is a malformed format', async () => {
  const refused = async (schema: Record<string, unknown>, words: RegExp): Promise<void> => {
    await assert.rejects(
      client.chat.completions.create({ model: 'tiny_llm', messages, max_tokens: 4, response_format: { type: 'json_schema', json_schema: { name: 'x', schema, strict: true } } }),
      (e: unknown) => e instanceof OpenAI.BadRequestError && words.test(e.message),
    );
  };
  await refused({ type: 'object', properties: { code: { type: 'string', pattern: '^[A-Z]+$' } } }, /'pattern' at #\/properties\/code/);
  await refused({ type: 'integer', minimum: 3 }, /'minimum'/);
  await refused({ type: 'object', properties: {}, required: ['a'] }, /'required'.*"a"/);
  await refused({ $ref: '#/definitions/a' }, /'\$ref'/);
  await refused({ properties: { a: { type: 'string' } } }, /'type' .* is missing/);
  await refused({ type: 'string', format: 'email' }, /'format'.*"email"/);
  await assert.rejects(
    client.chat.completions.create({ model: 'tiny_llm', messages, response_format: { type: 'json_schema' } as never }),
    (e: unknown) => e instanceof OpenAI.BadRequestError && e.param === 'response_format.json_schema',
  );
  // {"type": "text"} asks for nothing.
  const r = await client.chat.completions.create({ model: 'tiny_llm', messages, max_tokens: 3, response_format: { type: 'text' } });
  assert.equal(r.choices.length, 1);
});

test('generate takes response_format as a parameter (its JSON text), as the OpenAI port passes it on', async () => {
  const format = JSON.stringify({ type: 'json_schema', json_schema: { name: 'weather', schema: SCHEMA } });
  const r = await postJson(`${p.url}/v2/models/tiny_llm/generate`, { text_input: 'The weather:', parameters: { max_tokens: 200, seed: 5, response_format: format } });
  assert.equal(r.status, 200, r.body.toString());
  const j = r.json();
  assert.equal(j.finish_reason, 'stop', j.text_output);
  assert.ok(validate(JSON.parse(j.text_output)), j.text_output);
  const bad = await postJson(`${p.url}/v2/models/tiny_llm/generate`, { text_input: 'x', parameters: { response_format: JSON.stringify({ type: 'json_schema', json_schema: { schema: { not: {} } } }) } });
  assert.equal(bad.status, 400);
  assert.match(bad.json().error, /'not'/);
  // Once the JSON is complete only the end may follow, which ignore_eos forbids.
  const endless = await postJson(`${p.url}/v2/models/tiny_llm/generate`, { text_input: 'x', parameters: { ignore_eos: true, response_format: '{"type":"json_object"}' } });
  assert.equal(endless.status, 400);
  assert.match(endless.json().error, /'ignore_eos'/);
});
