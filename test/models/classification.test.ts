import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isNereidError } from '../../src/errors.js';
import { classify, MAX_CLASSIFICATION_ELEMENTS } from '../../src/models/classification.js';

// The classification extension's size limit, as Triton's qa/L0_parameters class_count_test.py pins it: an
// output of 1,000,001 elements per batch item is refused with "classification output tensor too large".

const tensor = (shape: number[]) => ({ name: 'OUTPUT0', datatype: 'FP32', shape, data: new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(1) }) as never;

test('classification ranks up to 1,000,000 elements per batch item and refuses more', () => {
  const ok = classify(tensor([1, MAX_CLASSIFICATION_ELEMENTS]), 5, {} as never, true);
  assert.deepEqual(ok.shape, [1, 5]);
  assert.throws(() => classify(tensor([1, MAX_CLASSIFICATION_ELEMENTS + 1]), 5, {} as never, true), (e: unknown) => {
    assert.ok(isNereidError(e));
    assert.equal(e.code, 'INVALID_ARG');
    assert.match(e.message, /^classification output tensor too large/);
    return true;
  });
});
