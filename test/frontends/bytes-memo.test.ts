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

/** A client whose every request differs: n requests, each looked up and then kept. */
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

test('a run of misses makes the memo rest: it neither looks nor remembers, then probes, resting longer each time', () => {
  const memo = new BytesMemo<number>(64, 4);
  const same = Buffer.from('the repeated request');
  memo.keep(same, 0, same.byteLength, null, -1);
  // MISS_RUN misses in a row: the first MISS_RUN - 1 are remembered, the one that completes the run is not.
  assert.equal(distinct(memo, 0, MISS_RUN).kept, MISS_RUN - 1);
  // Resting: not even the request it knew is found, and nothing is remembered.
  assert.equal(distinct(memo, 100, REST_FIRST).kept, 0);
  // The probe: its first lookup is remembered, a second miss rests again, twice as long.
  assert.equal(distinct(memo, 200, PROBE).kept, 1);
  assert.equal(distinct(memo, 300, 2 * REST_FIRST).kept, 0);
  assert.equal(distinct(memo, 400, PROBE).kept, 1);
  // A client that never repeats: one request in a long rest pays for being remembered.
  let kept = 0;
  for (let from = 1000; from < 1000 + 8 * REST_MAX; from += 1000) kept += distinct(memo, from, 1000).kept;
  assert.ok(kept <= 8 + 8 * PROBE, `${kept} kept over ${8 * REST_MAX} requests`);
});

test('a hit ends the rests: a probe that finds its bytes turns the memo back on', () => {
  const memo = new BytesMemo<number>(64, 4);
  distinct(memo, 0, MISS_RUN + REST_FIRST);
  const b = Buffer.from('the repeated request');
  // The probe's first lookup misses and remembers the request; its repeat is found, and the memo stays on.
  assert.equal(memo.find(b, 0, b.byteLength, null), undefined);
  memo.keep(b, 0, b.byteLength, null, 1);
  assert.equal(memo.find(b, 0, b.byteLength, null), 1);
  for (let i = 0; i < 10 * MISS_RUN; i++) {
    assert.equal(memo.find(b, 0, b.byteLength, null), 1);
    // Misses between hits never make a run.
    if (i % 2 === 0) assert.equal(memo.find(Buffer.from(`other-${i}`), 0, 8, null), undefined);
  }
  // A later run of misses rests for REST_FIRST again, not for the longer rest of before.
  distinct(memo, 50, MISS_RUN);
  assert.equal(distinct(memo, 100, REST_FIRST).kept, 0);
  assert.equal(distinct(memo, 200, 1).kept, 1);
});

test('deepFreeze freezes nested objects and arrays, leaving Maps and typed arrays as they are', () => {
  const o = deepFreeze({ a: [{ b: [1, 2] }], m: new Map([[1, 2]]), t: new Uint8Array(2) });
  assert.ok(Object.isFrozen(o) && Object.isFrozen(o.a) && Object.isFrozen(o.a[0]) && Object.isFrozen(o.a[0]!.b));
  o.m.set(3, 4);
  o.t[0] = 1;
  assert.equal(o.t[0], 1);
});
