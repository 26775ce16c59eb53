import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serializeBytes, deserializeBytes, utf8 } from '../../src/tensor/bytes.js';
import { isNereidError } from '../../src/errors.js';

test('BYTES round-trip keeps empty and non-empty elements', () => {
  const els = [utf8('a'), utf8(''), utf8('héllo')];
  const buf = serializeBytes(els);
  assert.equal(buf.byteLength, 4 + 1 + 4 + 0 + 4 + 6);
  const back = deserializeBytes(buf, 3, 'X');
  assert.deepEqual(back.map((b) => Buffer.from(b).toString()), ['a', '', 'héllo']);
});

test('BYTES with a length past the end is an INVALID_ARG error', () => {
  const buf = Buffer.from([10, 0, 0, 0, 1, 2]);
  assert.throws(() => deserializeBytes(buf, 1, 'X'), (e) => isNereidError(e) && e.code === 'INVALID_ARG');
});

test('BYTES with bytes left over is an error', () => {
  const buf = Buffer.concat([serializeBytes([utf8('a')]), Buffer.from([0])]);
  assert.throws(() => deserializeBytes(buf, 1, 'X', 'm'), /^NereidError: unexpected number of string elements 2 for inference input 'X' for model 'm', expecting 1$/);
  assert.throws(() => deserializeBytes(serializeBytes([utf8('a')]), 2, 'X', 'm'), /^NereidError: expected 2 string elements for inference input 'X' for model 'm', got 1$/);
});
