import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BytesMemo, deepFreeze } from '../../src/frontends/bytes-memo.js';

test('found by the same bytes and the same key object only; the bytes are a copy of the buffer they came from', () => {
  const memo = new BytesMemo<string>(16, 2);
  const key = {};
  const buf = Buffer.from('abcdefgh-rest');
  assert.ok(memo.keep(buf, 8, key, 'v1'));
  assert.equal(memo.find(Buffer.from('abcdefgh-other'), 8, key), 'v1');
  assert.equal(memo.find(buf, 8, {}), undefined);
  assert.equal(memo.find(buf, 7, key), undefined);
  assert.equal(memo.find(Buffer.from('abcdefgX'), 8, key), undefined);
  // The buffer is reused for the next request: what was kept does not change with it.
  buf.write('zzzzzzzz');
  assert.equal(memo.find(buf, 8, key), undefined);
  assert.equal(memo.find(Buffer.from('abcdefgh'), 8, key), 'v1');
});

test('at most maxBytes per entry and `entries` entries, the oldest replaced first', () => {
  const memo = new BytesMemo<number>(4, 2);
  const key = {};
  assert.equal(memo.keep(Buffer.from('12345'), 5, key, 0), false);
  assert.equal(memo.find(Buffer.from('12345'), 5, key), undefined);
  for (const [i, s] of ['aaaa', 'bbbb', 'cccc'].entries()) memo.keep(Buffer.from(s), 4, key, i);
  assert.equal(memo.find(Buffer.from('aaaa'), 4, key), undefined);
  assert.equal(memo.find(Buffer.from('bbbb'), 4, key), 1);
  assert.equal(memo.find(Buffer.from('cccc'), 4, key), 2);
});

test('deepFreeze freezes nested objects and arrays, leaving Maps and typed arrays as they are', () => {
  const o = deepFreeze({ a: [{ b: [1, 2] }], m: new Map([[1, 2]]), t: new Uint8Array(2) });
  assert.ok(Object.isFrozen(o) && Object.isFrozen(o.a) && Object.isFrozen(o.a[0]) && Object.isFrozen(o.a[0]!.b));
  o.m.set(3, 4);
  o.t[0] = 1;
  assert.equal(o.t[0], 1);
});
