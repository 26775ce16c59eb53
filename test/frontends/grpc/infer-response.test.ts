import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeFramed, loadProtos } from '../../../src/frontends/grpc/proto.js';
import { encodeInferResponse, inferResponseFrame } from '../../../src/frontends/grpc/infer-response.js';
import type { InferenceResponse } from '../../../src/inference/index.js';

// The ModelInferResponse encoder written for the request path must put on the wire the very bytes protobufjs
// writes for the same response, framed, alone and inside a ModelStreamInferResponse.

const FINAL = { triton_final_response: { bool_param: true } };

function responses(): InferenceResponse[] {
  const int32 = new Int32Array([1, -2, 300000, 4]);
  return [
    { model: 'simple', version: 1, id: '', outputs: [{ name: 'OUTPUT0', datatype: 'INT32', shape: [1, 4], data: new Uint8Array(int32.buffer) }] },
    {
      model: 'm\u00e9t\u00e9o', version: 12, id: 'r\u00e9q-42',
      outputs: [{ name: 'OUT', datatype: 'FP32', shape: [2 ** 40, 0, 1], data: new Uint8Array(16) }, { name: 'S', datatype: 'BYTES', shape: [2], data: [Buffer.from('ab'), Buffer.from('c\u00e9')] }],
      parameters: { flag: true, n: -5, big: 2n ** 63n + 7n, neg: -(2n ** 62n), text: 'v\u00e9', ratio: 0.25, zero: 0, empty: '' },
    },
    { model: 'empty', version: 3, id: 'x', outputs: [{ name: 'SCALAR', datatype: 'INT64', shape: [], data: new Uint8Array(8) }] },
  ];
}

test('inferResponseFrame writes what protobufjs writes, framed', () => {
  const p = loadProtos();
  for (const res of responses()) {
    assert.deepEqual(inferResponseFrame(res), encodeFramed(p.type('inference.ModelInferResponse'), encodeInferResponse(res)), res.model);
    assert.deepEqual(inferResponseFrame(res, FINAL), encodeFramed(p.type('inference.ModelInferResponse'), encodeInferResponse(res, FINAL)), res.model);
    assert.deepEqual(
      inferResponseFrame(res, FINAL, true),
      encodeFramed(p.type('inference.ModelStreamInferResponse'), { error_message: '', infer_response: encodeInferResponse(res, FINAL) }),
      `${res.model}, streamed`,
    );
  }
});
