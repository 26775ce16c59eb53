import assert from 'node:assert/strict';
import { postJson } from './http.js';
import { connect, int32Bytes, int32s, unary } from './grpc.js';

// The example model `simple` (OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1, 16 INT32 each), inferred
// as a client would, over HTTP/JSON and over gRPC, with the answer checked.

const A = Array.from({ length: 16 }, (_, i) => i);
const B = A.map(() => 1);

export async function checkSimpleOverHttp(url: string): Promise<void> {
  const r = await postJson(`${url}/v2/models/simple/infer`, {
    inputs: [
      { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: A },
      { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: B },
    ],
  });
  assert.equal(r.status, 200, r.body.toString());
  const out = new Map<string, number[]>(r.json().outputs.map((o: { name: string; data: number[] }) => [o.name, o.data]));
  assert.deepEqual(out.get('OUTPUT0'), A.map((a) => a + 1));
  assert.deepEqual(out.get('OUTPUT1'), A.map((a) => a - 1));
}

export async function checkSimpleOverGrpc(port: number): Promise<void> {
  const client = connect(port);
  try {
    const r = await unary(client, 'ModelInfer', {
      model_name: 'simple',
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
      ],
      raw_input_contents: [int32Bytes(A), int32Bytes(B)],
    });
    const names: string[] = r.outputs.map((o: { name: string }) => o.name);
    assert.deepEqual(int32s(r.raw_output_contents[names.indexOf('OUTPUT0')]), A.map((a) => a + 1));
    assert.deepEqual(int32s(r.raw_output_contents[names.indexOf('OUTPUT1')]), A.map((a) => a - 1));
  } finally {
    client.close();
  }
}
