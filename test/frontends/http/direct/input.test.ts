import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Input } from '../../../../src/frontends/http/direct/input.js';

test('a lone chunk is kept as it is; later chunks join it; taken views stay as they were while more arrives', () => {
  const input = new Input();
  const chunk = Buffer.from('GET / HTTP/1.1\r\n');
  input.push(chunk);
  assert.equal(input.view().buffer, chunk.buffer, 'no copy of a lone chunk');
  input.push(Buffer.from('\r\nbody'));
  assert.equal(input.view().toString(), 'GET / HTTP/1.1\r\n\r\nbody');
  assert.notEqual(input.view().buffer, chunk.buffer);
  input.skip(18);
  const body = input.take(4);
  assert.equal(body.toString(), 'body');
  assert.equal(input.length, 0);
  assert.equal(input.take(0).byteLength, 0);
  // The next request's bytes never land on a body handed out.
  input.push(Buffer.from('next'));
  input.push(Buffer.from('-more'));
  assert.equal(body.toString(), 'body');
  assert.equal(input.view().toString(), 'next-more');
});

test('bytes arriving one at a time are appended into room that doubles, not copied whole each time', () => {
  const input = new Input();
  const text = 'x'.repeat(20_000);
  const stores = new Set<ArrayBufferLike>();
  for (const ch of text) {
    input.push(Buffer.from(ch));
    stores.add(input.view().buffer);
  }
  assert.equal(input.view().toString(), text);
  // One store per doubling (from 4 KiB), besides the first chunk's own.
  assert.ok(stores.size <= 6, `${stores.size} stores`);
  const kept = input.take(10);
  input.push(Buffer.from('y'));
  assert.equal(kept.toString(), 'x'.repeat(10));
  assert.equal(input.length, 20_000 - 10 + 1);
});
