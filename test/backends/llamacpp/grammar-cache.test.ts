import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startLlama } from '../../../src/backends/llamacpp/engine.js';
import { GrammarCache } from '../../../src/backends/llamacpp/grammar-cache.js';

// A model's grammars for response_format, on the real llama.cpp binding: built once per distinct schema and
// shared, bounded, and nothing kept for a format that is refused.

const schemaFormat = (n: number): string => JSON.stringify({ type: 'json_schema', json_schema: { name: 's', schema: { type: 'object', properties: { [`k${n}`]: { type: 'boolean' } } } } });

test('a schema sent again gets the grammar built the first time; plain text gets none', async () => {
  const cache = new GrammarCache(await startLlama());
  const first = cache.grammarFor(schemaFormat(1));
  assert.ok(first !== null);
  assert.equal(cache.grammarFor(schemaFormat(1)), first);
  const grammar = await first;
  assert.match(grammar.grammar, /k1/);
  assert.equal(cache.grammarFor('{"type":"json_object"}'), cache.grammarFor('{"type":"json_object"}'));
  assert.equal(cache.grammarFor('{"type":"text"}'), null);
});

test('at most 32 schemas are kept, the least recently used leaving first; a refused one is not kept', async () => {
  const cache = new GrammarCache(await startLlama());
  const kept = cache.grammarFor(schemaFormat(0));
  const built: unknown[] = [];
  for (let i = 1; i < 40; i++) {
    built[i] = cache.grammarFor(schemaFormat(i));
    cache.grammarFor(schemaFormat(0)); // used again each time: stays
  }
  assert.equal(cache.grammarFor(schemaFormat(0)), kept);
  assert.equal(cache.grammarFor(schemaFormat(39)), built[39]);
  // The oldest left: built again, once, then kept.
  const again = cache.grammarFor(schemaFormat(1));
  assert.notEqual(again, built[1]);
  assert.equal(cache.grammarFor(schemaFormat(1)), again);
  assert.equal((cache as unknown as { grammars: Map<string, unknown> }).grammars.size, 32);
  const bad = JSON.stringify({ type: 'json_schema', json_schema: { schema: { type: 'string', pattern: 'a' } } });
  assert.throws(() => cache.grammarFor(bad), /'pattern'/);
  assert.equal((cache as unknown as { grammars: Map<string, unknown> }).grammars.size, 32);
  await Promise.all([...(cache as unknown as { grammars: Map<string, Promise<unknown>> }).grammars.values()]);
});
