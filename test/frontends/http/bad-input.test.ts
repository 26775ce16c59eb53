import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { EXAMPLES } from '../../helpers/paths.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { binaryBody, postJson, request } from '../../helpers/http.js';

// Every client mistake gets a 4xx with a clear {"error"}, and the server keeps serving.

let s: TestServer;
before(async () => {
  s = await startTestServer({ modelRepositories: [EXAMPLES] }, 64 * 1024);
});
after(() => s.close());

const range16 = Array.from({ length: 16 }, (_, i) => i);
const good = () => ({
  inputs: [
    { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: range16 },
    { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: range16 },
  ],
});

async function expectError(r: Promise<{ status: number; json(): any }>, status: number, pattern: RegExp): Promise<void> {
  const res = await r;
  assert.equal(res.status, status);
  const body = res.json();
  assert.equal(typeof body.error, 'string');
  assert.match(body.error, pattern);
}

const infer = (body: unknown) => postJson(`${s.url}/v2/models/simple/infer`, body);

describe('malformed requests', () => {
  test('malformed JSON and non-object JSON are 400', async () => {
    await expectError(request(`${s.url}/v2/models/simple/infer`, { body: '{"inputs": [' }), 400, /failed to parse the request JSON/);
    await expectError(request(`${s.url}/v2/models/simple/infer`, { body: '[1,2]' }), 400, /JSON object/);
    await expectError(request(`${s.url}/v2/models/simple/infer`, { body: '"x"' }), 400, /JSON object/);
    await expectError(infer({ inputs: 'x' }), 400, /inputs/);
    await expectError(infer({ inputs: [{ name: 'INPUT0', shape: '1,16', datatype: 'INT32', data: range16 }] }), 400, /shape/);
    await expectError(infer({ ...good(), id: 5 }), 400, /'id'/);
  });

  test('missing, duplicate and unknown inputs', async () => {
    await expectError(infer({ inputs: [good().inputs[0]] }), 400, /expected 2 inputs but got 1 .*missing required input\(s\) \['INPUT1'\]/);
    await expectError(infer({ inputs: [good().inputs[0], good().inputs[0]] }), 400, /already exists in request/);
    await expectError(infer({ inputs: [good().inputs[0], { ...good().inputs[0], name: 'EXTRA' }] }), 400, /unexpected inference input 'EXTRA'/);
    // More inputs than the model has: refused on the count, before the inputs are decoded, in Triton's words.
    await expectError(infer({ inputs: [good().inputs[0], good().inputs[0], good().inputs[1]] }), 400, /^expected 2 inputs but got 3 inputs for model 'simple'/);
    await expectError(infer({ inputs: [...good().inputs, { ...good().inputs[0], name: 'EXTRA' }] }), 400, /^expected 2 inputs but got 3 inputs for model 'simple'/);
  });

  test('unknown and duplicate outputs', async () => {
    await expectError(infer({ ...good(), outputs: [{ name: 'NOPE' }] }), 400, /unexpected inference output 'NOPE'/);
    await expectError(infer({ ...good(), outputs: [{ name: 'OUTPUT0' }, { name: 'OUTPUT0' }] }), 400, /more than once/);
  });

  test('wrong datatype, shape and element count', async () => {
    const g = good();
    await expectError(infer({ inputs: [{ ...g.inputs[0], datatype: 'FP32' }, g.inputs[1]] }), 400, /data-type is 'FP32', but model 'simple' expects 'INT32'/);
    await expectError(infer({ inputs: [{ ...g.inputs[0], datatype: 'FLOAT' }, g.inputs[1]] }), 400, /invalid datatype/);
    await expectError(infer({ inputs: [{ ...g.inputs[0], shape: [1, 8], data: range16.slice(0, 8) }, g.inputs[1]] }), 400, /unexpected shape for input 'INPUT0'.*Expected \[-1,16\], got \[1,8\]/);
    await expectError(infer({ inputs: [{ ...g.inputs[0], data: range16.slice(0, 15) }, g.inputs[1]] }), 400, /Unable to parse 'data': Shape does not match true shape of 'data' field/);
    await expectError(infer({ inputs: [{ ...g.inputs[0], data: [...range16.slice(0, 15), 'x'] }, g.inputs[1]] }), 400, /not a valid INT32/);
    await expectError(infer({ inputs: [{ ...g.inputs[0], data: [...range16.slice(0, 15), 2 ** 31] }, g.inputs[1]] }), 400, /not a valid INT32/);
  });

  test('values out of range for INT8', async () => {
    const bad = Array.from({ length: 16 }, (_, i) => (i === 3 ? 300 : 1));
    await expectError(postJson(`${s.url}/v2/models/simple_int8/infer`, {
      inputs: [
        { name: 'INPUT0', shape: [1, 16], datatype: 'INT8', data: bad },
        { name: 'INPUT1', shape: [1, 16], datatype: 'INT8', data: bad },
      ],
    }), 400, /300 is not a valid INT8/);
  });

  test('batch above max_batch_size', async () => {
    const rows = Array.from({ length: 9 }, () => range16);
    await expectError(infer({ inputs: [
      { name: 'INPUT0', shape: [9, 16], datatype: 'INT32', data: rows },
      { name: 'INPUT1', shape: [9, 16], datatype: 'INT32', data: rows },
    ] }), 400, /batch-size must be <= 8/);
  });

  test('unknown model and version', async () => {
    await expectError(postJson(`${s.url}/v2/models/nope/infer`, good()), 400, /unknown model: 'nope'/);
    // A version the model does not have is NOT_FOUND in Triton's model lifecycle.
    await expectError(postJson(`${s.url}/v2/models/simple/versions/7/infer`, good()), 404, /^Request for unknown model: 'simple' version 7 is not found$/);
  });

  test('reserved and badly typed parameters', async () => {
    await expectError(infer({ ...good(), parameters: { triton_x: 1 } }), 400, /reserved/);
    await expectError(infer({ ...good(), parameters: { x: { a: 1 } } }), 400, /has invalid type. It should be either 'int', 'bool', or 'string'/);
    await expectError(infer({ ...good(), parameters: { priority: -1 } }), 400, /unsigned integer/);
    await expectError(infer({ ...good(), parameters: { binary_data_output: 'yes' } }), 400, /boolean/);
  });

  test('FP16 in JSON is refused', async () => {
    await expectError(infer({ inputs: [{ name: 'INPUT0', shape: [1], datatype: 'FP16', data: [1] }] }), 400, /FP16 data via JSON is not supported/);
  });
});

describe('binary extension mistakes', () => {
  const blob = Buffer.from(new Int32Array(range16).buffer);
  const header = (size0: number, size1: number) => ({
    inputs: [
      { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', parameters: { binary_data_size: size0 } },
      { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', parameters: { binary_data_size: size1 } },
    ],
  });

  test('sizes past the end, short, or leaving bytes over', async () => {
    const long = binaryBody(header(64, 128), [blob, blob]);
    await expectError(request(`${s.url}/v2/models/simple/infer`, long), 400, /unexpected size for input 'INPUT1', expecting 64 additional bytes for model 'simple'/);
    const short = binaryBody(header(60, 64), [blob.subarray(0, 60), blob]);
    await expectError(request(`${s.url}/v2/models/simple/infer`, short), 400, /^input byte size mismatch for input 'INPUT0' for model 'simple'\. Expected 64, got 60$/);
    const extra = binaryBody(header(64, 64), [blob, blob, Buffer.from([1, 2, 3])]);
    await expectError(request(`${s.url}/v2/models/simple/infer`, extra), 400, /additional input data/);
  });

  test('malformed Inference-Header-Content-Length', async () => {
    const b = binaryBody(header(64, 64), [blob, blob]);
    await expectError(request(`${s.url}/v2/models/simple/infer`, { body: b.body, headers: { 'Inference-Header-Content-Length': 'abc' } }), 400, /Inference-Header-Content-Length/);
    await expectError(request(`${s.url}/v2/models/simple/infer`, { body: b.body, headers: { 'Inference-Header-Content-Length': String(b.body.byteLength + 1) } }), 400, /Inference-Header-Content-Length/);
    await expectError(request(`${s.url}/v2/models/simple/infer`, { body: b.body, headers: { 'Inference-Header-Content-Length': '10' } }), 400, /failed to parse/);
  });

  test('data and binary_data_size together', async () => {
    await expectError(infer({ inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: range16, parameters: { binary_data_size: 64 } }] }), 400, /Input must set only one of the following fields/);
  });
});

describe('oversized bodies', () => {
  test('a declared Content-Length above --http-max-input-size is refused before the body is read', async () => {
    const status = await new Promise<string>((resolve, reject) => {
      const sock = connect(Number(new URL(s.url).port), '127.0.0.1', () => {
        sock.write('POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n{');
      });
      let data = '';
      sock.on('data', (b) => {
        data += b.toString();
        if (data.includes('\r\n\r\n')) {
          resolve(data.split('\r\n')[0]!);
          sock.destroy();
        }
      });
      sock.on('error', reject);
      setTimeout(() => reject(new Error('no answer: the server waited for the body')), 3000).unref();
    });
    assert.match(status, /^HTTP\/1\.1 400/);
  });

  test('a chunked body growing past the limit is refused', async () => {
    const big = JSON.stringify({ inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: range16 }], pad: 'x'.repeat(100 * 1024) });
    const stream = new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode(big)); c.close(); } });
    const res = await fetch(`${s.url}/v2/models/simple/infer`, { method: 'POST', body: stream, duplex: 'half' } as RequestInit);
    assert.equal(res.status, 400);
    assert.match(((await res.json()) as any).error, /exceeds the maximum allowed value/);
  });

  test('a compressed body that inflates past the limit is refused', async () => {
    const bomb = gzipSync(Buffer.alloc(10 * 1024 * 1024, 32));
    await expectError(request(`${s.url}/v2/models/simple/infer`, { body: bomb, headers: { 'Content-Encoding': 'gzip' } }), 400, /after decompression/);
  });
});

describe('repository API in a non-explicit mode', () => {
  test('load and unload are refused, and paths that leave the repository too', async () => {
    await expectError(postJson(`${s.url}/v2/repository/models/simple/load`, {}), 503, /not allowed/);
    await expectError(postJson(`${s.url}/v2/repository/models/simple/unload`, {}), 503, /not allowed/);
    await expectError(postJson(`${s.url}/v2/repository/myrepo/models/simple/load`, {}), 501, /repository_name/);
    const idx = await request(`${s.url}/v2/repository/index`, { method: 'POST', body: '' });
    assert.equal(idx.status, 200);
    assert.ok((idx.json() as any[]).some((m) => m.name === 'simple' && m.state === 'READY'));
    await expectError(postJson(`${s.url}/v2/repository/index`, { ready: 'yes' }), 400, /'ready'/);
  });
});

test('after all of that the server still answers', async () => {
  const r = await infer(good());
  assert.equal(r.status, 200);
});
