import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bytesOf, pooledElements, typedView } from '../../src/tensor/view.js';

test('typedView: a view when aligned, a copy with the same values when not', () => {
  const values = new Float64Array([1.5, -2, 3e300]);
  const aligned = typedView('FP64', bytesOf(values));
  assert.equal(aligned.buffer, values.buffer);
  // The same bytes at an odd offset: a typed array cannot start there.
  const shifted = new Uint8Array(values.byteLength + 1);
  shifted.set(bytesOf(values), 1);
  const copy = typedView('FP64', shifted.subarray(1));
  assert.notEqual(copy.buffer, shifted.buffer);
  assert.deepEqual([...copy], [...values]);
  assert.equal(copy.byteOffset % 8, 0);
});

test('pooledElements: aligned arrays of the asked length, small ones sharing the pool, large ones of their own', () => {
  for (const [dt, size] of [['INT8', 1], ['INT32', 4], ['INT64', 8], ['FP64', 8]] as const) {
    for (const count of [1, 3, 16, 1000]) {
      const a = pooledElements(dt, count);
      assert.equal(a.length, count);
      assert.equal(a.byteOffset % size, 0, `${dt} × ${count} is aligned`);
    }
  }
  const small = pooledElements('INT32', 16);
  assert.ok(small.buffer.byteLength > small.byteLength, 'a small one is a slice of the pool');
  const large = pooledElements('FP32', 1 << 20);
  assert.equal(large.buffer.byteLength, large.byteLength, 'a large one has its own memory');
});
