import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { EXAMPLES } from '../../helpers/paths.js';
import { failure, int32Bytes, startGrpcTestServer, unary, type GrpcTestServer } from '../../helpers/grpc.js';

// BYTES inputs whose shape declares more elements than their raw data can hold (each element takes at least
// its 4-byte length): INVALID_ARGUMENT in Triton's words at once, past 2^32 elements too, and the server
// keeps serving. The check is in the tensor layer, shared with HTTP.

let s: GrpcTestServer;
before(async () => {
  s = await startGrpcTestServer({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit', loadModels: ['simple', 'simple_string'] });
});
after(() => s.close());

const bytesRequest = (shape: (number | string)[], raw: Buffer) => ({
  model_name: 'simple_string',
  inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape }, { name: 'INPUT1', datatype: 'BYTES', shape }],
  raw_input_contents: [raw, raw],
});

const CASES: { name: string; shape: (number | string)[]; raw: Buffer; details: RegExp }[] = [
  { name: '30 million elements, no data', shape: [1, 30_000_000], raw: Buffer.alloc(0), details: /^expected 30000000 string elements for inference input 'INPUT0' for model 'simple_string', got 0$/ },
  { name: '2^32 + 1 elements, no data', shape: [1, String(2 ** 32 + 1)], raw: Buffer.alloc(0), details: /^expected 4294967297 string elements for inference input 'INPUT0' for model 'simple_string', got 0$/ },
  { name: '2^32 + 1 elements, one element of data', shape: [1, String(2 ** 32 + 1)], raw: Buffer.from([1, 0, 0, 0, 97]), details: /^expected 4294967297 string elements .* got 1$/ },
];

for (const c of CASES) {
  test(`BYTES shape of ${c.name}: INVALID_ARGUMENT`, async () => {
    const e = await failure(unary(s.client, 'ModelInfer', bytesRequest(c.shape, c.raw)));
    assert.equal(e.code, grpc.status.INVALID_ARGUMENT, e.details);
    assert.match(e.details, c.details);
  });
}

test('a normal inference on simple is still answered correctly', async () => {
  const IN0 = Array.from({ length: 16 }, (_, i) => i);
  const res = await unary(s.client, 'ModelInfer', {
    model_name: 'simple',
    inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }],
    raw_input_contents: [int32Bytes(IN0), int32Bytes(IN0.map(() => 1))],
  });
  assert.deepEqual([...new Int32Array(new Uint8Array(res.raw_output_contents[0]).buffer)], IN0.map((v) => v + 1));
});
