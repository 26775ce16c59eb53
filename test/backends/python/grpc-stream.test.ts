import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { int32Bytes, int32s, startGrpcTestServer } from '../../helpers/grpc.js';
import { PYTHON_EXAMPLES, pythonSkip } from './helpers.js';

// A decoupled Python model (Triton's square_int32) through gRPC ModelStreamInfer, as Triton's stream clients
// read it: one message per response, the final flag on the last message.

const skip = pythonSkip();

test('square_int32 streams through gRPC ModelStreamInfer with the final flag', { skip }, async () => {
  const s = await startGrpcTestServer({ modelRepositories: [PYTHON_EXAMPLES], modelControlMode: 'explicit', loadModels: ['square_int32'] });
  try {
    const responses: any[] = [];
    const status = await new Promise<grpc.StatusObject>((resolve) => {
      const call = s.client.ModelStreamInfer(new grpc.Metadata());
      call.on('data', (r: any) => responses.push(r));
      call.on('error', () => {});
      call.on('status', resolve);
      call.write({
        model_name: 'square_int32', id: 'sq', parameters: { triton_enable_empty_final_response: { bool_param: true } },
        inputs: [{ name: 'IN', datatype: 'INT32', shape: [1] }], raw_input_contents: [int32Bytes([3])],
      });
      call.end();
    });
    assert.equal(status.code, grpc.status.OK, status.details);
    // Three responses of 3, then the model's flag-only send as an empty fourth response (asked for here) that
    // alone carries the final flag, as Triton's stream writes a FINAL sent without a response.
    const withOutputs = responses.filter((r) => r.infer_response.outputs.length > 0);
    assert.deepEqual(withOutputs.map((r) => int32s(r.infer_response.raw_output_contents[0])[0]), [3, 3, 3]);
    assert.equal(responses.length, 4, `${responses.length} responses`);
    const finals = responses.map((r) => r.infer_response.parameters.triton_final_response?.bool_param);
    assert.deepEqual(finals, responses.map((_, i) => i === responses.length - 1));
    for (const r of responses) assert.equal(r.infer_response.id, 'sq');
  } finally {
    await s.close();
  }
});
