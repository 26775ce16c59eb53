import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventReader } from '../../../src/backends/openai/sse.js';
import { engineRequest } from '../../../src/backends/openai/instance.js';
import type { BackendRequest } from '../../../src/backends/backend.js';

function collect(chunks: Array<string | Uint8Array>): string[] {
  const out: string[] = [];
  const reader = new EventReader((d) => out.push(d));
  for (const c of chunks) reader.push(typeof c === 'string' ? new TextEncoder().encode(c) : c);
  reader.end();
  return out;
}

test('server-sent events: split across chunks, \\r\\n and \\r line ends, several data lines, comments', () => {
  assert.deepEqual(collect(['data: {"a"', ':1}\n\ndata: [DONE]\n\n']), ['{"a":1}', '[DONE]']);
  assert.deepEqual(collect(['data: one\r\n', 'data: two\r\n\r\n', ': keep-alive\r\n\r\n']), ['one\ntwo']);
  assert.deepEqual(collect(['event: x\rdata:no-space\r', '\r']), ['no-space']);
  assert.deepEqual(collect(['data: last without a blank line']), ['last without a blank line']);
  // A multi-byte character split between chunks.
  const bytes = new TextEncoder().encode('data: é\n\n');
  assert.deepEqual(collect([bytes.subarray(0, 7), bytes.subarray(7)]), ['é']);
  // Events reach the callback as their blank line arrives, before the stream ends.
  const seen: string[] = [];
  const reader = new EventReader((d) => seen.push(d));
  reader.push(new TextEncoder().encode('data: 1\n\ndata: 2'));
  assert.deepEqual(seen, ['1']);
  reader.push(new TextEncoder().encode('\n\n'));
  assert.deepEqual(seen, ['1', '2']);
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
