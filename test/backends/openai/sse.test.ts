import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readEvents } from '../../../src/backends/openai/sse.js';
import { engineRequest } from '../../../src/backends/openai/instance.js';
import type { BackendRequest } from '../../../src/backends/backend.js';

async function collect(chunks: string[]): Promise<string[]> {
  async function* body() {
    for (const c of chunks) yield new TextEncoder().encode(c);
  }
  const out: string[] = [];
  for await (const d of readEvents(body())) out.push(d);
  return out;
}

test('server-sent events: split across chunks, \\r\\n and \\r line ends, several data lines, comments', async () => {
  assert.deepEqual(await collect(['data: {"a"', ':1}\n\ndata: [DONE]\n\n']), ['{"a":1}', '[DONE]']);
  assert.deepEqual(await collect(['data: one\r\n', 'data: two\r\n\r\n', ': keep-alive\r\n\r\n']), ['one\ntwo']);
  assert.deepEqual(await collect(['event: x\rdata:no-space\r', '\r']), ['no-space']);
  assert.deepEqual(await collect(['data: last without a blank line']), ['last without a blank line']);
  // A multi-byte character split between chunks.
  const bytes = new TextEncoder().encode('data: é\n\n');
  async function* split() {
    yield bytes.subarray(0, 7);
    yield bytes.subarray(7);
  }
  const out: string[] = [];
  for await (const d of readEvents(split())) out.push(d);
  assert.deepEqual(out, ['é']);
});

const req = (parameters: Record<string, string | number | boolean>, text = 'hi'): BackendRequest => ({
  inputs: [{ name: 'text_input', datatype: 'BYTES', shape: [1], data: [new TextEncoder().encode(text)] }],
  outputs: ['text_output'], parameters, sender: { send() {}, fail() {} },
});

test('engine requests: sampling passes through, stop lists, chat messages, refusals', () => {
  assert.deepEqual(engineRequest(req({ max_tokens: 5, temperature: 0.5, seed: 3, other: 'x' })), { kind: 'completions', body: { max_tokens: 5, temperature: 0.5, seed: 3, prompt: 'hi' } });
  assert.deepEqual(engineRequest(req({ stop: '["a","b"]' })).body['stop'], ['a', 'b']);
  assert.equal(engineRequest(req({ stop: '\n' })).body['stop'], '\n');
  const chat = engineRequest(req({ messages: '[{"role":"user","content":"yo"}]' }, ''));
  assert.equal(chat.kind, 'chat');
  assert.deepEqual(chat.body['messages'], [{ role: 'user', content: 'yo' }]);
  assert.throws(() => engineRequest(req({}, '')), /empty/);
  assert.throws(() => engineRequest(req({ max_tokens: 0 })), /max_tokens/);
  assert.throws(() => engineRequest(req({ messages: 'not json' })), /messages/);
  assert.throws(() => engineRequest(req({ messages: '[]' })), /messages/);
});
