import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lineDiff } from '../../../src/tools/report/analyze-report.js';

// The report's diff of the chosen config against the starting one reads as diff prints it: a changed line is
// the old one, then the new one.

const show = (a: string, b: string): string[] => lineDiff(a, b).map((d) => `${d.kind} ${d.text}`);

test('a changed line: the removed line comes before the added one', () => {
  assert.deepEqual(show('name: "m"\nmax_batch_size: 4\ninstance_group [ { count: 1 } ]', 'name: "m"\nmax_batch_size: 8\ninstance_group [ { count: 2 } ]'), [
    '  name: "m"',
    '- max_batch_size: 4',
    '- instance_group [ { count: 1 } ]',
    '+ max_batch_size: 8',
    '+ instance_group [ { count: 2 } ]',
  ]);
  assert.deepEqual(show('a\nb\nc', 'a\nB\nc'), ['  a', '- b', '+ B', '  c']);
});

test('lines only added or only removed, and none changed', () => {
  assert.deepEqual(show('a\nc', 'a\nb\nc'), ['  a', '+ b', '  c']);
  assert.deepEqual(show('a\nb\nc', 'a\nc'), ['  a', '- b', '  c']);
  assert.deepEqual(show('a\nb', 'a\nb\n'), ['  a', '  b']);
  assert.deepEqual(show('x', 'y'), ['- x', '+ y']);
});
