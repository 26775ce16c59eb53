import { test } from 'node:test';
import assert from 'node:assert/strict';
import { firstRepeatedKey } from '../../../src/frontends/http/json-repeated-key.js';

const all = (): boolean => true;

test('the first repeated key at the top level or in parameters; keys deeper down or in strings do not count', () => {
  assert.equal(firstRepeatedKey(Buffer.from('{"A":1,"B":{"A":2},"C":"\\"A\\":","A":3}'), all), 'A');
  assert.equal(firstRepeatedKey(Buffer.from('{"A":1,"parameters":{"B":1,"B":2}}'), all), 'B');
  assert.equal(firstRepeatedKey(Buffer.from('{"A":[{"B":1},{"B":2}],"x":{"y":{"z":1,"z":2}}}'), all), undefined);
});

test('a body nested a million levels deep is scanned without keeping its levels', () => {
  const deep = '{"A":' + '['.repeat(1_000_000) + ']'.repeat(1_000_000) + ',"A":1}';
  assert.equal(firstRepeatedKey(Buffer.from(deep), all), 'A');
});
