import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { int32Bytes, int32s, startGrpcTestServer, type GrpcTestServer } from '../../helpers/grpc.js';
import { startTestServer } from '../../helpers/server.js';
import { postJson } from '../../helpers/http.js';
import { PYTHON_FIXTURES, pythonSkip } from './helpers.js';

// How a Python model's responses reach a client, as Triton's python_backend answers them: zero-element outputs,
// a FINAL flag sent on its own, a response sent after execute() has returned.

const skip = pythonSkip();

/** The responses of one ModelStreamInfer request with the given MODE, empty final responses asked for. */
async function stream(s: GrpcTestServer, model: string, mode: number): Promise<any[]> {
  const responses: any[] = [];
  const status = await new Promise<grpc.StatusObject>((resolve) => {
    const call = s.client.ModelStreamInfer(new grpc.Metadata());
    call.on('data', (r: any) => responses.push(r));
    call.on('error', () => {});
    call.on('status', resolve);
    call.write({
      model_name: model, id: `m${mode}`, parameters: { triton_enable_empty_final_response: { bool_param: true } },
      inputs: [{ name: 'MODE', datatype: 'INT32', shape: [1] }], raw_input_contents: [int32Bytes([mode])],
    });
    call.end();
  });
  assert.equal(status.code, grpc.status.OK, status.details);
  return responses;
}

const isFinal = (r: any): boolean => r.infer_response.parameters.triton_final_response?.bool_param === true;

// Triton's python_backend hands back a tensor of no bytes like any other: the output is there with shape [0]
// and no data.
test('a model that is not decoupled returns a zero-element output', { skip }, async () => {
  const s = await startTestServer({ modelRepositories: [PYTHON_FIXTURES], modelControlMode: 'explicit', loadModels: ['sender_plain'] });
  try {
    const r = await postJson(`${s.url}/v2/models/sender_plain/infer`, { inputs: [{ name: 'MODE', shape: [1], datatype: 'INT32', data: [0] }] });
    assert.equal(r.status, 200, r.body.toString());
    const out = r.json().outputs[0];
    assert.deepEqual([out.name, out.datatype, out.shape, out.data], ['OUT', 'INT32', [0], []]);
  } finally {
    await s.close();
  }
});

test('a decoupled model sends a zero-element output with FINAL: the request completes with it', { skip }, async () => {
  const s = await startGrpcTestServer({ modelRepositories: [PYTHON_FIXTURES], modelControlMode: 'explicit', loadModels: ['sender_decoupled'] });
  try {
    const responses = await stream(s, 'sender_decoupled', 0);
    assert.equal(responses.length, 1);
    const r = responses[0].infer_response;
    assert.equal(responses[0].error_message, '');
    assert.deepEqual(r.outputs.map((o: any) => [o.name, o.shape.map(Number)]), [['OUT', [0]]]);
    assert.ok(isFinal(responses[0]));
  } finally {
    await s.close();
  }
});

// As Triton's L0_backend_python/response_sender tests (response_sender_test.py, the non-decoupled cases with
// responses after return): execute() returns None for the request and a thread answers it later.
test('a model that is not decoupled answers through its response sender after execute() has returned', { skip }, async () => {
  const s = await startTestServer({ modelRepositories: [PYTHON_FIXTURES], modelControlMode: 'explicit', loadModels: ['sender_plain'] });
  try {
    const r = await postJson(`${s.url}/v2/models/sender_plain/infer`, { inputs: [{ name: 'MODE', shape: [1], datatype: 'INT32', data: [1] }] });
    assert.equal(r.status, 200, r.body.toString());
    assert.deepEqual(r.json().outputs[0].data, [5]);
  } finally {
    await s.close();
  }
});

// python_backend's ResponseSender refuses a FINAL flag before any response in a model that is not decoupled;
// uncaught in execute(), the request fails with its words.
test('a model that is not decoupled sending FINAL before a response gets Triton\'s error', { skip }, async () => {
  const s = await startTestServer({ modelRepositories: [PYTHON_FIXTURES], modelControlMode: 'explicit', loadModels: ['sender_plain'] });
  try {
    const r = await postJson(`${s.url}/v2/models/sender_plain/infer`, { inputs: [{ name: 'MODE', shape: [1], datatype: 'INT32', data: [2] }] });
    assert.equal(r.status, 500, r.body.toString());
    assert.match(r.json().error, /Unable to send response\. Non-decoupled model cannot send complete final before sending a response\./);
  } finally {
    await s.close();
  }
});
