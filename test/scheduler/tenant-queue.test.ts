import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TenantQueue } from '../../src/scheduler/tenant-queue.js';

test('tenants take turns, one item each, in the order they began waiting; each tenant keeps its own order', () => {
  const q = new TenantQueue<string>();
  for (const x of ['a1', 'a2', 'a3']) q.push(x, 'a');
  q.push('b1', 'b');
  q.push('a4', 'a');
  q.push('b2', 'b');
  q.push('n1', undefined);
  assert.equal(q.length, 7);
  assert.equal(q.peek(), 'a1');
  const out: string[] = [];
  for (let x = q.shift(); x !== undefined; x = q.shift()) out.push(x);
  assert.deepEqual(out, ['a1', 'b1', 'n1', 'a2', 'b2', 'a3', 'a4']);
  assert.equal(q.length, 0);
  assert.equal(q.peek(), undefined);
});

test('a tenant whose items ran out waits at the back when it comes again; one tenant alone is a FIFO', () => {
  const q = new TenantQueue<number>();
  q.push(1, 'a');
  q.push(2, 'b');
  assert.equal(q.shift(), 1);
  q.push(3, 'a');
  q.push(4, 'b');
  assert.deepEqual([q.shift(), q.shift(), q.shift()], [2, 3, 4]);
  for (let i = 0; i < 100; i++) q.push(i, undefined);
  const got: number[] = [];
  for (let i = 0; i < 50; i++) got.push(q.shift()!);
  for (let i = 100; i < 120; i++) q.push(i, undefined);
  for (let x = q.shift(); x !== undefined; x = q.shift()) got.push(x);
  assert.deepEqual(got, Array.from({ length: 120 }, (_, i) => i));
});
