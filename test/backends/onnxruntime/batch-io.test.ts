import { test } from 'node:test';
import assert from 'node:assert/strict';
import { batchInputTensor, scatterShape } from '../../../src/backends/onnxruntime/batch-io.js';
import type { BatchInputKind } from '../../../src/config/types.js';

// The batch inputs Triton's backends make from a formed batch (backend common's BackendInputCollector), from
// the source input's shape in each request. The item-shape cases are the examples in model_config.proto.

const ints = (data: Uint8Array): number[] => [...new Int32Array(data.buffer, data.byteOffset, data.byteLength / 4)];
const floats = (data: Uint8Array): number[] => [...new Float32Array(data.buffer, data.byteOffset, data.byteLength / 4)];

const cases: [BatchInputKind, number[][], number[], number[]][] = [
  ['BATCH_ELEMENT_COUNT', [[1, 2], [1, 3], [1, 1]], [3], [2, 3, 1]],
  ['BATCH_ACCUMULATED_ELEMENT_COUNT', [[1, 2], [1, 3], [1, 1]], [3], [2, 5, 6]],
  ['BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO', [[1, 2], [1, 3], [1, 1]], [4], [0, 2, 5, 6]],
  ['BATCH_MAX_ELEMENT_COUNT_AS_SHAPE', [[1, 2], [2, 3], [1, 1]], [6], [0, 0, 0, 0, 0, 0]],
  ['BATCH_ITEM_SHAPE', [[2, 3, 1], [1, 2, 2]], [3, 2], [3, 1, 3, 1, 2, 2]],
  ['BATCH_ITEM_SHAPE_FLATTEN', [[2, 3, 1], [1, 2, 2]], [6], [3, 1, 3, 1, 2, 2]],
];

for (const [kind, shapes, shape, values] of cases) {
  test(`batch input ${kind}`, () => {
    const i = batchInputTensor(kind, 'INT32', shapes);
    assert.deepEqual(i.shape, shape);
    assert.deepEqual(ints(i.data), values);
    const f = batchInputTensor(kind, 'FP32', shapes);
    assert.deepEqual(f.shape, shape);
    assert.deepEqual(floats(f.data), values);
  });
}

test('batch output BATCH_SCATTER_WITH_INPUT_SHAPE: each -1 of the output shape from the request\'s source input', () => {
  assert.deepEqual(scatterShape([-1, -1], [1, 3]), [1, 3]);
  assert.deepEqual(scatterShape([-1, 4], [2, 9]), [2, 4]);
});
