import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startHttpFrontend, type HttpFrontend } from '../../../src/frontends/http/server.js';
import { bytesToOrtString, ortStringToBytes } from '../../../src/backends/onnxruntime/strings.js';
import { deserializeBytes, serializeBytes } from '../../../src/tensor/bytes.js';
import { FIXTURES } from '../../helpers/paths.js';
import { binaryBody, request, splitBinary } from '../../helpers/http.js';
import { failure, startGrpcTestServer, unary, type GrpcTestServer } from '../../helpers/grpc.js';

// BYTES through ONNX Runtime string tensors: UTF-8 reaches the model as it is, other bytes come back exactly,
// and an element with a NUL byte (which ORT would cut short) is refused with a clear 400 / INVALID_ARGUMENT.

const utf8 = new TextEncoder();

test('UTF-8 elements become the strings they encode, a leading byte-order mark included', () => {
  for (const text of ['hello', '', 'héllo wörld', '日本語', '😀 emoji', '\ufeffwith BOM']) {
    assert.equal(bytesToOrtString(utf8.encode(text)), text);
    assert.deepEqual(ortStringToBytes(text), utf8.encode(text));
  }
});

test('any bytes round-trip exactly through the string mapping, and ORT always gets valid UTF-8', () => {
  const cases: Uint8Array[] = [
    Uint8Array.of(0xff, 0xfe, 0x80), Uint8Array.of(0x61, 0xc3), Uint8Array.of(0xe2, 0x82), Uint8Array.of(0xed, 0xa0, 0x80),
    Uint8Array.of(0xc0, 0xaf), Uint8Array.of(0xf4, 0x90, 0x80, 0x80), utf8.encode('\u{10ff80}x\u{10ffff}'), Uint8Array.of(0x68, 0xe9, 0x6c),
  ];
  let seed = 7;
  for (let n = 0; n < 200; n++) {
    const b = new Uint8Array(n % 23);
    for (let i = 0; i < b.length; i++) b[i] = ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 16) & 0xff || 1;
    cases.push(b);
  }
  const strict = new TextDecoder('utf-8', { fatal: true });
  for (const b of cases) {
    const s = bytesToOrtString(b);
    // What onnxruntime-node hands ORT is the string's UTF-8 encoding: it must decode back to the same string.
    assert.equal(strict.decode(utf8.encode(s)), s);
    assert.deepEqual(ortStringToBytes(s), b, `bytes ${Buffer.from(b).toString('hex')}`);
  }
});

let s: GrpcTestServer;
let http: HttpFrontend;
let url: string;

before(async () => {
  s = await startGrpcTestServer({ modelRepositories: [join(FIXTURES, 'dtypes')], modelControlMode: 'explicit', loadModels: ['identity_string'] });
  http = await startHttpFrontend(s.server, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20 }, s.logger);
  url = `http://127.0.0.1:${http.port}`;
});
after(async () => {
  await s.close();
  await http.close();
});

const ELEMENTS = [Buffer.from([0xff, 0xfe, 0x80, 0x41]), Buffer.from('héllo', 'utf8'), Buffer.from([0xc3]), Buffer.from('\ufeffbom', 'utf8')];

test('an ONNX identity model with a string input returns non-UTF-8 bytes exactly, over HTTP and gRPC', async () => {
  const data = serializeBytes(ELEMENTS);
  const { body, headers } = binaryBody({
    inputs: [{ name: 'INPUT0', shape: [1, 4], datatype: 'BYTES', parameters: { binary_data_size: data.byteLength } }],
    outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
  }, [data]);
  const r = await request(`${url}/v2/models/identity_string/infer`, { body, headers });
  assert.equal(r.status, 200, r.body.toString());
  const out = deserializeBytes(splitBinary(r).blobs.get('OUTPUT0')!, 4, 'OUTPUT0');
  assert.deepEqual(out.map((e) => Buffer.from(e)), ELEMENTS);

  const res = await unary(s.client, 'ModelInfer', {
    model_name: 'identity_string', inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [1, 4] }], raw_input_contents: [data],
  });
  assert.deepEqual(deserializeBytes(res.raw_output_contents[0], 4, 'OUTPUT0').map((e) => Buffer.from(e)), ELEMENTS);
});

test('an element with a NUL byte is refused before it runs, naming the input and the element', async () => {
  const elements = [Buffer.from('fine'), Buffer.from('he\x00llo')];
  const data = serializeBytes(elements);
  const { body, headers } = binaryBody({ inputs: [{ name: 'INPUT0', shape: [1, 2], datatype: 'BYTES', parameters: { binary_data_size: data.byteLength } }] }, [data]);
  const r = await request(`${url}/v2/models/identity_string/infer`, { body, headers });
  assert.equal(r.status, 400);
  const message = "element 1 of input 'INPUT0' for model 'identity_string' contains a NUL byte, which ONNX Runtime string tensors cannot carry (the element would end there)";
  assert.deepEqual(r.json(), { error: message });
  const err = await failure(unary(s.client, 'ModelInfer', {
    model_name: 'identity_string', inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [1, 2] }], raw_input_contents: [data],
  }));
  assert.equal(err.code, 3); // INVALID_ARGUMENT
  assert.equal(err.details, message);
  // Refused before the model: not an execution.
  const stats = s.server.statistics('identity_string').model_stats[0] as any;
  assert.equal(stats.inference_stats.fail.count, 2);
  assert.equal(stats.execution_count, 2); // the two exact round trips above only
});
