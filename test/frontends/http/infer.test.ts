import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { gzipSync, deflateSync, gunzipSync } from 'node:zlib';
import { EXAMPLES } from '../../helpers/paths.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { binaryBody, postJson, request, splitBinary } from '../../helpers/http.js';
import { serializeBytes } from '../../../src/tensor/bytes.js';

// The requests Triton's own Python client examples send (src/python/examples in the client repository), and
// the checks they make, against the bundled example repository.

let s: TestServer;
before(async () => {
  s = await startTestServer({ modelRepositories: [EXAMPLES] });
});
after(() => s.close());

const range16 = Array.from({ length: 16 }, (_, i) => i);
const ones16 = Array.from({ length: 16 }, () => 1);

describe('simple (simple_http_infer_client.py)', () => {
  test('JSON inputs, OUTPUT0 binary and OUTPUT1 JSON', async () => {
    const r = await postJson(`${s.url}/v2/models/simple/infer`, {
      inputs: [
        { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: range16 },
        { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: ones16 },
      ],
      outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }, { name: 'OUTPUT1', parameters: { binary_data: false } }],
    });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'application/octet-stream');
    const { header, blobs } = splitBinary(r);
    assert.equal(header.model_name, 'simple');
    assert.equal(header.model_version, '1');
    const out0 = new Int32Array(new Uint8Array(blobs.get('OUTPUT0')!).buffer);
    assert.deepEqual([...out0], range16.map((v) => v + 1));
    const out1 = header.outputs.find((o: any) => o.name === 'OUTPUT1');
    assert.deepEqual(out1.shape, [1, 16]);
    assert.equal(out1.datatype, 'INT32');
    assert.deepEqual(out1.data, range16.map((v) => v - 1));
  });

  test('a JSON answer with text beyond ASCII: Content-Length counts its UTF-8 bytes, and the id comes back whole', async () => {
    const id = 'é-中文-😀';
    const r = await postJson(`${s.url}/v2/models/simple/infer`, {
      id,
      inputs: [
        { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: range16 },
        { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: ones16 },
      ],
    }, { 'Accept-Encoding': 'identity' }); // fetch asks for gzip otherwise, and the length would be the compressed one
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'application/json');
    assert.equal(r.headers.get('content-encoding'), null);
    assert.equal(Number(r.headers.get('content-length')), r.body.byteLength);
    assert.ok(r.body.byteLength > r.body.toString('utf8').length, 'the body holds multi-byte characters');
    const j = r.json();
    assert.equal(j.id, id);
    assert.deepEqual(j.outputs.find((o: any) => o.name === 'OUTPUT0').data, range16.map((v) => v + 1));
  });

  test('binary inputs and binary_data_output with no outputs listed', async () => {
    const a = Buffer.from(new Int32Array(range16).buffer);
    const b = Buffer.from(new Int32Array(ones16).buffer);
    const { body, headers } = binaryBody({
      id: 'req-7',
      inputs: [
        { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', parameters: { binary_data_size: 64 } },
        { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', parameters: { binary_data_size: 64 } },
      ],
      parameters: { binary_data_output: true },
    }, [a, b]);
    const r = await request(`${s.url}/v2/models/simple/infer`, { body, headers });
    assert.equal(r.status, 200);
    const { header, blobs } = splitBinary(r);
    assert.equal(header.id, 'req-7');
    assert.equal(blobs.size, 2);
    assert.deepEqual([...new Int32Array(new Uint8Array(blobs.get('OUTPUT1')!).buffer)], range16.map((v) => v - 1));
  });

  test('all JSON when nothing asks for binary; a specific version in the path', async () => {
    const r = await postJson(`${s.url}/v2/models/simple/versions/1/infer`, {
      inputs: [
        { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: [range16] },
        { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: [ones16] },
      ],
    });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'application/json');
    const j = r.json();
    assert.deepEqual(j.outputs.map((o: any) => o.name).sort(), ['OUTPUT0', 'OUTPUT1']);
    assert.ok(!('id' in j));
  });

  test('gzip and deflate request bodies; gzip response when accepted', async () => {
    const payload = JSON.stringify({ inputs: [
      { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: range16 },
      { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: ones16 },
    ] });
    for (const [enc, body] of [['gzip', gzipSync(payload)], ['deflate', deflateSync(payload)]] as const) {
      const r = await request(`${s.url}/v2/models/simple/infer`, { body, headers: { 'Content-Encoding': enc } });
      assert.equal(r.status, 200, enc);
    }
    const res = await fetch(`${s.url}/v2/models/simple/infer`, { method: 'POST', body: payload, headers: { 'Accept-Encoding': 'gzip' } });
    assert.equal(res.headers.get('content-encoding'), 'gzip');
    // fetch inflates transparently; the body must be the JSON response
    const j = (await res.json()) as any;
    assert.equal(j.model_name, 'simple');
    void gunzipSync;
  });

  test('a false compression claim is a 400, an unknown encoding a 415 naming the encodings (as Triton)', async () => {
    const r = await request(`${s.url}/v2/models/simple/infer`, { body: '{"inputs":[]}', headers: { 'Content-Encoding': 'gzip' } });
    assert.equal(r.status, 400);
    assert.match(r.json().error, /decompress/);
    const r2 = await request(`${s.url}/v2/models/simple/infer`, { body: '{}', headers: { 'Content-Encoding': 'br' } });
    assert.equal(r2.status, 415);
    assert.equal(r2.headers.get('accept-encoding'), 'gzip, deflate');
    assert.match(r2.json().error, /Unsupported compression type 'br'/);
  });
});

describe('simple_string (simple_http_string_infer_client.py)', () => {
  test('BYTES inputs as JSON and as binary', async () => {
    const in0 = range16.map(String);
    const in1 = ones16.map(String);
    const r = await postJson(`${s.url}/v2/models/simple_string/infer`, {
      inputs: [
        { name: 'INPUT0', shape: [1, 16], datatype: 'BYTES', data: in0 },
        { name: 'INPUT1', shape: [1, 16], datatype: 'BYTES', data: in1 },
      ],
    });
    assert.equal(r.status, 200, r.body.toString());
    const out = r.json().outputs;
    const o0 = out.find((o: any) => o.name === 'OUTPUT0');
    assert.equal(o0.datatype, 'BYTES');
    assert.deepEqual(o0.data.map(Number), range16.map((v) => v + 1));

    const enc = (a: string[]) => serializeBytes(a.map((x) => Buffer.from(x)));
    const b0 = enc(in0);
    const b1 = enc(in1);
    const { body, headers } = binaryBody({
      inputs: [
        { name: 'INPUT0', shape: [1, 16], datatype: 'BYTES', parameters: { binary_data_size: b0.byteLength } },
        { name: 'INPUT1', shape: [1, 16], datatype: 'BYTES', parameters: { binary_data_size: b1.byteLength } },
      ],
      outputs: [{ name: 'OUTPUT1', parameters: { binary_data: true } }],
    }, [b0, b1]);
    const rb = await request(`${s.url}/v2/models/simple_string/infer`, { body, headers });
    assert.equal(rb.status, 200, rb.body.toString());
    const blob = splitBinary(rb).blobs.get('OUTPUT1')!;
    const strings: string[] = [];
    for (let at = 0; at < blob.byteLength;) {
      const n = blob.readUInt32LE(at);
      strings.push(blob.subarray(at + 4, at + 4 + n).toString());
      at += 4 + n;
    }
    assert.deepEqual(strings.map(Number), range16.map((v) => v - 1));
  });
});

describe('health and metadata (simple_http_health_metadata.py)', () => {
  test('live, ready, metadata', async () => {
    assert.equal((await request(`${s.url}/v2/health/live`)).status, 200);
    assert.equal((await request(`${s.url}/v2/health/ready`)).status, 200);
    assert.equal((await request(`${s.url}/v2/models/simple/ready`)).status, 200);
    const meta = (await request(`${s.url}/v2`)).json();
    assert.equal(meta.name, 'triton');
    assert.ok(meta.extensions.includes('binary_tensor_data'));
    const mm = (await request(`${s.url}/v2/models/simple`)).json();
    assert.equal(mm.name, 'simple');
    assert.deepEqual(mm.versions, ['1']);
    assert.equal(mm.platform, 'onnxruntime_onnx');
    assert.deepEqual(mm.inputs.find((i: any) => i.name === 'INPUT0'), { name: 'INPUT0', datatype: 'INT32', shape: [-1, 16] });
    const cfg = (await request(`${s.url}/v2/models/simple/config`)).json();
    assert.equal(cfg.name, 'simple');
    assert.equal(cfg.max_batch_size, 8);
    assert.deepEqual(cfg.input[0].dims, [16]);
  });

  test('unknown model and not-ready version answer as Triton does', async () => {
    const r = await request(`${s.url}/v2/models/nope/ready`);
    assert.equal(r.status, 400);
    const r2 = await postJson(`${s.url}/v2/models/nope/infer`, { inputs: [] });
    assert.equal(r2.status, 400);
    assert.equal(r2.json().error, "Request for unknown model: 'nope' is not found");
    const r3 = await request(`${s.url}/v2/models/simple/versions/abc`);
    assert.equal(r3.status, 404);
    assert.deepEqual(r3.json(), { error: 'Not Found' });
    const r4 = await request(`${s.url}/v2/health/live`, { method: 'POST', body: '' });
    assert.equal(r4.status, 405);
  });
});

void join;
