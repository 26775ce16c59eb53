import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { FIXTURES } from '../../helpers/paths.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { binaryBody, postJson, request, splitBinary } from '../../helpers/http.js';
import { serializeBytes } from '../../../src/tensor/bytes.js';

// Every Triton data type ONNX Runtime supports goes through an identity model and back, as JSON (where the
// protocol allows) and as binary tensors.

let s: TestServer;
before(async () => {
  s = await startTestServer({ modelRepositories: [join(FIXTURES, 'dtypes')] });
});
after(() => s.close());

const CASES: { dt: string; model: string; json?: unknown[]; bytes: Buffer }[] = [
  { dt: 'BOOL', model: 'identity_bool', json: [true, false, true], bytes: Buffer.from([1, 0, 1]) },
  { dt: 'UINT8', model: 'identity_uint8', json: [0, 7, 255], bytes: Buffer.from([0, 7, 255]) },
  { dt: 'UINT16', model: 'identity_uint16', json: [0, 7, 65535], bytes: Buffer.from(new Uint16Array([0, 7, 65535]).buffer) },
  { dt: 'UINT32', model: 'identity_uint32', json: [0, 7, 4294967295], bytes: Buffer.from(new Uint32Array([0, 7, 4294967295]).buffer) },
  { dt: 'UINT64', model: 'identity_uint64', json: [0, 7, 2 ** 53 - 1], bytes: Buffer.from(new BigUint64Array([0n, 7n, 2n ** 64n - 1n]).buffer) },
  { dt: 'INT8', model: 'identity_int8', json: [-128, 0, 127], bytes: Buffer.from(new Int8Array([-128, 0, 127]).buffer) },
  { dt: 'INT16', model: 'identity_int16', json: [-32768, 0, 32767], bytes: Buffer.from(new Int16Array([-32768, 0, 32767]).buffer) },
  { dt: 'INT32', model: 'identity_int32', json: [-2147483648, 0, 2147483647], bytes: Buffer.from(new Int32Array([-2147483648, 0, 2147483647]).buffer) },
  { dt: 'INT64', model: 'identity_int64', json: [-(2 ** 53) + 1, 0, 2 ** 53 - 1], bytes: Buffer.from(new BigInt64Array([-(2n ** 63n), 0n, 2n ** 63n - 1n]).buffer) },
  { dt: 'FP16', model: 'identity_fp16', bytes: Buffer.from(new Uint16Array([0x3c00, 0xc000, 0x7bff]).buffer) },
  { dt: 'FP32', model: 'identity_fp32', json: [1.5, -2.25, 1e30], bytes: Buffer.from(new Float32Array([1.5, -2.25, 1e30]).buffer) },
  { dt: 'FP64', model: 'identity_fp64', json: [1.5, -2.25, 1e300], bytes: Buffer.from(new Float64Array([1.5, -2.25, 1e300]).buffer) },
  { dt: 'BYTES', model: 'identity_string', json: ['a', '', 'héllo'], bytes: serializeBytes(['a', '', 'héllo'].map((x) => Buffer.from(x))) },
];

for (const c of CASES) {
  test(`${c.dt} round-trips as binary`, async () => {
    const { body, headers } = binaryBody({
      inputs: [{ name: 'INPUT0', shape: [1, 3], datatype: c.dt, parameters: { binary_data_size: c.bytes.byteLength } }],
      outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
    }, [c.bytes]);
    const r = await request(`${s.url}/v2/models/${c.model}/infer`, { body, headers });
    assert.equal(r.status, 200, r.body.toString());
    const { header, blobs } = splitBinary(r);
    assert.equal(header.outputs[0].datatype, c.dt);
    assert.deepEqual(header.outputs[0].shape, [1, 3]);
    assert.deepEqual(blobs.get('OUTPUT0'), c.bytes);
  });
  if (c.json) {
    test(`${c.dt} round-trips as JSON`, async () => {
      const r = await postJson(`${s.url}/v2/models/${c.model}/infer`, { inputs: [{ name: 'INPUT0', shape: [1, 3], datatype: c.dt, data: c.json }] });
      assert.equal(r.status, 200, r.body.toString());
      // FP32 values travel as the doubles they widen to, as Triton writes them; they read back exactly.
      const data = r.json().outputs[0].data as unknown[];
      const f32 = (xs: unknown[]) => xs.map((v) => Math.fround(v as number));
      if (c.dt === 'FP32') assert.deepEqual(f32(data), f32(c.json!));
      else assert.deepEqual(data, c.json);
    });
  }
}

test('FP16 outputs travel as binary even when JSON was asked for by default', async () => {
  const c = CASES.find((x) => x.dt === 'FP16')!;
  const { body, headers } = binaryBody({ inputs: [{ name: 'INPUT0', shape: [1, 3], datatype: 'FP16', parameters: { binary_data_size: 6 } }] }, [c.bytes]);
  const r = await request(`${s.url}/v2/models/${c.model}/infer`, { body, headers });
  assert.equal(r.status, 200);
  assert.deepEqual(splitBinary(r).blobs.get('OUTPUT0'), c.bytes);
});
