import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_ENTRY_CHARS, MemoryTextStore } from '../../../src/frontends/openai/responses-store.js';

// The Responses API's in-memory store of responses, on a clock the test moves: its three bounds (entries,
// characters, time) and deletion.

function store(maxEntries: number, maxChars: number, ttlMs: number): { s: MemoryTextStore; advance(ms: number): void } {
  let now = 1_000_000;
  return { s: new MemoryTextStore({ maxEntries, maxChars, ttlMs }, () => now), advance: (ms) => void (now += ms) };
}

test('past maxEntries the oldest entries go first; storing a key again makes it the newest', async () => {
  const { s } = store(3, 1000, 60_000);
  for (const k of ['a', 'b', 'c']) await s.set(k, k);
  await s.set('a', 'a2');
  await s.set('d', 'd');
  assert.deepEqual(await Promise.all(['a', 'b', 'c', 'd'].map((k) => s.get(k))), ['a2', undefined, 'c', 'd']);
});

test('past maxChars the oldest entries go until the rest fit; a value larger than the whole store is not kept', async () => {
  const { s } = store(100, 10, 60_000);
  await s.set('a', 'xxxx');
  await s.set('b', 'xxxx');
  await s.set('c', 'xxxx');
  assert.deepEqual(await Promise.all(['a', 'b', 'c'].map((k) => s.get(k))), [undefined, 'xxxx', 'xxxx']);
  await s.set('big', 'x'.repeat(11));
  assert.equal(await s.get('big'), undefined);
  assert.equal(await s.get('c'), 'xxxx');
  assert.ok(MAX_ENTRY_CHARS < 64 * 1024 * 1024);
});

test('an entry lives ttlMs from when it was stored; delete says whether there was one', async () => {
  const { s, advance } = store(100, 1000, 1000);
  await s.set('a', '1');
  advance(600);
  await s.set('b', '2');
  advance(500);
  assert.equal(await s.get('a'), undefined);
  assert.equal(await s.get('b'), '2');
  assert.equal(await s.delete('b'), true);
  assert.equal(await s.delete('b'), false);
  assert.equal(await s.get('b'), undefined);
  // The characters of expired and deleted entries are free again.
  const { s: small } = store(100, 4, 1000);
  await small.set('a', 'xxxx');
  await small.delete('a');
  await small.set('b', 'yyyy');
  assert.equal(await small.get('b'), 'yyyy');
});
