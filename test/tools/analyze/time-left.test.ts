import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TimeLeft } from '../../../src/tools/analyze/time-left.js';

// The time left in a config search, shown on every progress line, only ever falls, even when a config takes
// longer than those before it (a slower candidate, a busy machine).

test('the time left never rises when later configs take longer', () => {
  const left = new TimeLeft(0, 4);
  assert.equal(left.at(5_000, 0), undefined, 'no estimate before the first config');
  const shown: number[] = [];
  // Configs end at 10 s, 40 s and 90 s: each takes longer than the one before, so a fresh projection from
  // the mean rises (30 s left at 10 s, 40 s at 40 s, 30 s at 90 s).
  for (const [now, done] of [[10_000, 1], [20_000, 1], [40_000, 2], [60_000, 2], [90_000, 3], [95_000, 3]] as const) {
    const ms = left.at(now, done);
    if (ms !== undefined) shown.push(ms);
  }
  for (let i = 1; i < shown.length; i++) assert.ok(shown[i]! <= shown[i - 1]!, `${shown.join(', ')}: rose at ${i}`);
  assert.equal(shown[0], 30_000);
});

test('past its projection the search shows no time left rather than a time that rises', () => {
  const left = new TimeLeft(0, 2);
  assert.equal(left.at(10_000, 1), 10_000);
  assert.equal(left.at(25_000, 1), undefined);
  assert.equal(left.at(30_000, 1), undefined);
});

test('configs that go faster bring the end closer', () => {
  const left = new TimeLeft(0, 4);
  assert.equal(left.at(20_000, 1), 60_000);
  assert.equal(left.at(25_000, 2), 25_000);
});
