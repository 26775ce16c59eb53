import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BytesMemo, deepFreeze, MISS_RUN, PROBE, REST_FIRST, REST_MAX } from '../../src/frontends/bytes-memo.js';

test('found by the same bytes and the same key only; the bytes are a copy of the buffer they came from', () => {
  const memo = new BytesMemo<string>(16, 2);
  const key = {};
  const buf = Buffer.from('abcdefgh-rest');
  memo.keep(buf, 0, 8, key, 'v1');
  assert.equal(memo.find(Buffer.from('abcdefgh-other'), 0, 8, key), 'v1');
  assert.equal(memo.find(Buffer.from('--abcdefgh'), 2, 8, key), 'v1');
  assert.equal(memo.find(buf, 0, 8, {}), undefined);
  assert.equal(memo.find(buf, 0, 7, key), undefined);
  assert.equal(memo.find(Buffer.from('abcdefgX'), 0, 8, key), undefined);
  // The buffer is reused for the next request: what was kept does not change with it.
  buf.write('zzzzzzzz');
  assert.equal(memo.find(buf, 0, 8, key), undefined);
  assert.equal(memo.find(Buffer.from('abcdefgh'), 0, 8, key), 'v1');
  // Keys other than objects (a table's state) compare by value; bytes past the loop's length by memcmp.
  const long = Buffer.from('head' + 'x'.repeat(40));
  const wide = new BytesMemo<string>(64, 1);
  wide.keep(long, 4, 40, 7, 'v2');
  assert.equal(wide.find(Buffer.from('x'.repeat(44)), 0, 40, 7), 'v2');
  assert.equal(wide.find(Buffer.from('x'.repeat(44)), 0, 40, 8), undefined);
  assert.equal(wide.find(Buffer.from('x'.repeat(39) + 'y'), 0, 40, 7), undefined);
});

test('findAtStart: bytes the buffer begins with, whatever follows them', () => {
  const memo = new BytesMemo<string>(16, 1);
  memo.keep(Buffer.from('HEAD|body'), 0, 5, null, 'head');
  assert.equal(memo.findAtStart(Buffer.from('HEAD|other body'), null), 'head');
  assert.equal(memo.findAtStart(Buffer.from('HEAD'), null), undefined);
  assert.equal(memo.findAtStart(Buffer.from('HEAX|body'), null), undefined);
});

test('at most maxBytes per entry and `entries` entries, the oldest replaced first', () => {
  const memo = new BytesMemo<number>(4, 2);
  const key = {};
  assert.equal(memo.wants(5), false);
  memo.keep(Buffer.from('12345'), 0, 5, key, 0);
  assert.equal(memo.find(Buffer.from('12345'), 0, 5, key), undefined);
  for (const [i, s] of ['aaaa', 'bbbb', 'cccc'].entries()) memo.keep(Buffer.from(s), 0, 4, key, i);
  assert.equal(memo.find(Buffer.from('aaaa'), 0, 4, key), undefined);
  assert.equal(memo.find(Buffer.from('bbbb'), 0, 4, key), 1);
  assert.equal(memo.find(Buffer.from('cccc'), 0, 4, key), 2);
});

/** A client whose every request differs: n requests, each looked up, then kept when the memo wants it. */
function distinct(memo: BytesMemo<number>, from: number, n: number): { kept: number } {
  let kept = 0;
  for (let i = from; i < from + n; i++) {
    const b = Buffer.from(`req-${String(i).padStart(6, '0')}`);
    assert.equal(memo.find(b, 0, b.byteLength, null), undefined);
    if (memo.wants(b.byteLength)) kept++;
    memo.keep(b, 0, b.byteLength, null, i);
  }
  return { kept };
}

test('entries never found make the memo stop remembering for a rest, then probe, resting longer each time', () => {
  const memo = new BytesMemo<number>(64, 4);
  // MISS_RUN entries kept in a row and never found: the memo rests.
  assert.equal(distinct(memo, 0, MISS_RUN).kept, MISS_RUN);
  assert.equal(distinct(memo, 100, REST_FIRST).kept, 0);
  // The probe: PROBE requests remembered; not found either, a rest twice as long.
  assert.equal(distinct(memo, 200, PROBE).kept, PROBE);
  assert.equal(distinct(memo, 300, 2 * REST_FIRST).kept, 0);
  assert.equal(distinct(memo, 400, PROBE).kept, PROBE);
  // A client that never repeats: over a long run, one request in a long rest pays for being remembered.
  let kept = 0;
  for (let from = 1000; from < 1000 + 8 * REST_MAX; from += 1000) kept += distinct(memo, from, 1000).kept;
  assert.ok(kept <= 8 + 8 * PROBE, `${kept} kept over ${8 * REST_MAX} requests`);
});

test('a hit in a probe ends the rests: the memo looks and remembers again, and rests as briefly as at first', () => {
  const memo = new BytesMemo<number>(64, 4);
  distinct(memo, 0, MISS_RUN + REST_FIRST);
  // Resting, the memo does not even look: the request the probe remembers is found the next time.
  const repeated = Buffer.from('the repeated request');
  assert.equal(memo.find(repeated, 0, repeated.byteLength, null), undefined);
  memo.keep(repeated, 0, repeated.byteLength, null, 1);
  assert.equal(memo.find(repeated, 0, repeated.byteLength, null), 1);
  assert.equal(distinct(memo, 200, MISS_RUN).kept, MISS_RUN);
  assert.equal(distinct(memo, 300, REST_FIRST).kept, 0, 'resting as long as the first time');
  assert.equal(distinct(memo, 400, 1).kept, 1);
});

test('misses of what is not remembered count for nothing: a memo a client reuses keeps working beside them', () => {
  const memo = new BytesMemo<number>(64, 4);
  const repeated = Buffer.from('the repeated request');
  memo.find(repeated, 0, repeated.byteLength, null);
  memo.keep(repeated, 0, repeated.byteLength, null, 1);
  for (let i = 0; i < 10 * REST_MAX; i++) {
    // Another client's requests that are never kept (JSON with tensor data, say): looked up, missed, not kept.
    const other = Buffer.from(`other-${i}`);
    assert.equal(memo.find(other, 0, other.byteLength, null), undefined);
    if (i % 1000 === 0) assert.equal(memo.find(repeated, 0, repeated.byteLength, null), 1);
  }
  assert.equal(memo.wants(repeated.byteLength), true);
});

test('deepFreeze freezes nested objects and arrays, leaving Maps and typed arrays as they are', () => {
  const o = deepFreeze({ a: [{ b: [1, 2] }], m: new Map([[1, 2]]), t: new Uint8Array(2) });
  assert.ok(Object.isFrozen(o) && Object.isFrozen(o.a) && Object.isFrozen(o.a[0]) && Object.isFrozen(o.a[0]!.b));
  o.m.set(3, 4);
  o.t[0] = 1;
  assert.equal(o.t[0], 1);
});
