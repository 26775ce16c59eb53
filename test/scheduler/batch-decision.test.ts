import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decideBatch, type PendingBatch } from '../../src/scheduler/dynamic.js';
import { DeadlineHeap } from '../../src/scheduler/deadline-heap.js';

// Triton's batch decision (GetDynamicBatch) as a table: the pending batch the cursor found, the clock, the queue
// delay and the largest preferred size → requests to send now (0: none pending, -1: wait).

const p = (count: number, rows: number, markCount = 0, sendNow = false, oldestMs = 0): PendingBatch => ({ count, rows, markCount, sendNow, oldestMs });

const cases: [string, PendingBatch, number, number, number, number][] = [
  // name, pending, now, delay, max preferred, expected
  ['nothing pending', p(0, 0), 10, 0, 8, 0],
  ['no delay: everything pending goes', p(3, 3), 10, 0, 8, 3],
  ['no delay, a preferred size reached: that cut goes', p(5, 5, 2), 10, 0, 4, 2],
  ['delay, below every preferred size, young: wait', p(2, 2, 0, false, 5), 10, 100, 4, -1],
  ['delay, below every preferred size, old enough: everything goes', p(2, 2, 0, false, 0), 100, 100, 4, 2],
  ['delay, a preferred size reached: it goes at once', p(4, 4, 4, false, 5), 10, 100, 4, 4],
  ['delay over with a preferred cut: everything pending goes', p(6, 6, 4, false, 0), 200, 100, 4, 6],
  ['delay, the largest preferred size filled', p(3, 8, 0, false, 5), 10, 100, 8, 3],
  ['delay, cannot grow (max_batch_size or other shapes): goes', p(2, 2, 0, true, 5), 10, 100, 4, 2],
  ['multi-row requests that pass the largest preferred size: cut before', p(3, 6, 2, true, 5), 10, 100, 4, 2],
];

for (const [name, pending, now, delay, maxPreferred, want] of cases) {
  test(`batch decision: ${name}`, () => {
    assert.equal(decideBatch(pending, now, delay, maxPreferred), want);
  });
}

test('deadline heap: pops in deadline order; removed items leave at once', () => {
  const heap = new DeadlineHeap<{ deadlineMs: number; heapIndex: number; id: number }>();
  const items = Array.from({ length: 200 }, (_, id) => ({ deadlineMs: (id * 7919) % 101, heapIndex: -1, id }));
  for (const x of items) heap.push(x);
  const removed = new Set<number>();
  for (const x of items) {
    if (x.id % 3 === 0) {
      heap.remove(x);
      removed.add(x.id);
      assert.equal(x.heapIndex, -1);
    }
  }
  assert.equal(heap.size, items.length - removed.size);
  let last = -Infinity;
  const seen: number[] = [];
  for (let x = heap.pop(); x; x = heap.pop()) {
    assert.ok(x.deadlineMs >= last);
    last = x.deadlineMs;
    seen.push(x.id);
  }
  assert.deepEqual(seen.sort((a, b) => a - b), items.filter((x) => !removed.has(x.id)).map((x) => x.id));
});
