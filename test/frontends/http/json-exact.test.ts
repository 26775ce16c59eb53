import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseExactJson } from '../../../src/frontends/http/json-exact.js';

// The exact parse gives what JSON.parse gives, but integers past 2^53 as bigints.

test('the same values as JSON.parse for JSON without big integers', () => {
  const texts = [
    '{}', '[]', ' 0 ', '-0', '1.5e-3', '"a\\"b\\\\"', '"\\u00e9\\n"', 'true', 'false', 'null',
    '{"a":[1,{"b":[]},"x",null],"c":{},"d":-2.5E+3,"a2":[[],[[]]]}',
    '{"k":1,"k":2}',
    ' { "sp" : [ 1 , 2 ] } ',
    '{"__proto__":{"x":1},"y":2}',
  ];
  for (const t of texts) assert.deepEqual(parseExactJson(t), JSON.parse(t), t);
  const proto = parseExactJson('{"__proto__":{"x":1}}') as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(proto), Object.prototype);
  assert.deepEqual(Object.keys(proto), ['__proto__']);
});

test('integer literals past 2^53 become bigints; fractions and exponents stay numbers', () => {
  assert.deepEqual(parseExactJson('[9007199254740991,9007199254740992,-9007199254740993,18446744073709551615,1e19,9007199254740993.0]'),
    [9007199254740991, 9007199254740992n, -9007199254740993n, 18446744073709551615n, 1e19, 9007199254740992]);
});

test('deep nesting does not overflow the stack; text that is not JSON throws SyntaxError', () => {
  const depth = 200_000;
  const deep = parseExactJson(`${'['.repeat(depth)}${']'.repeat(depth)}`);
  assert.ok(Array.isArray(deep));
  for (const bad of ['', '[1,]', '{"a"}', '[1 2]', 'tru', '{"a":1', '"x', '1 2', '01', '[-]']) {
    assert.throws(() => parseExactJson(bad), SyntaxError, bad);
  }
});
