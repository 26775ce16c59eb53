import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { startTestServer, tempRepository, type TestServer } from '../../helpers/server.js';
import { request, splitBinary } from '../../helpers/http.js';

// Raw binary requests (Inference-Header-Content-Length: 0), checked as Triton's L0_http http_test.py checks them
// (test_raw_binary, test_raw_binary_longer, test_byte, test_byte_too_many_elements,
// test_multi_variable_dimensions, test_multi_inputs), with identity models shaped like the ones it uses.

let repo: { dir: string; remove(): Promise<void> };
let s: TestServer;

const tensor = (name: string, type: string, dims: string): string => `{ name: "${name}" data_type: ${type} dims: ${dims} }`;

async function model(name: string, maxBatch: number, inputs: string[], outputs: string[]): Promise<void> {
  await mkdir(join(repo.dir, name, '1'), { recursive: true });
  await writeFile(join(repo.dir, name, 'config.pbtxt'),
    `name: "${name}"\nbackend: "identity"\nmax_batch_size: ${maxBatch}\ninput [\n${inputs.join(',\n')}\n]\noutput [\n${outputs.join(',\n')}\n]\n`);
}

before(async () => {
  repo = await tempRepository([]);
  await model('raw_fp32', 8, [tensor('INPUT0', 'TYPE_FP32', '[ -1 ]')], [tensor('OUTPUT0', 'TYPE_FP32', '[ -1 ]')]);
  await model('raw_int32_unbatched', 0, [tensor('INPUT0', 'TYPE_INT32', '[ 2, -1 ]')], [tensor('OUTPUT0', 'TYPE_INT32', '[ 2, -1 ]')]);
  await model('raw_bytes_one', 8, [tensor('INPUT0', 'TYPE_STRING', '[ 1 ]')], [tensor('OUTPUT0', 'TYPE_STRING', '[ 1 ]')]);
  await model('raw_bytes_many', 8, [tensor('INPUT0', 'TYPE_STRING', '[ -1 ]')], [tensor('OUTPUT0', 'TYPE_STRING', '[ -1 ]')]);
  await model('raw_fp32_two_variable', 8, [tensor('INPUT0', 'TYPE_FP32', '[ -1, -1 ]')], [tensor('OUTPUT0', 'TYPE_FP32', '[ -1, -1 ]')]);
  const three = ['INPUT0', 'INPUT1', 'INPUT2'].map((n) => tensor(n, 'TYPE_FP32', '[ -1 ]'));
  await model('raw_three_inputs', 8, three, three.map((t) => t.replace('INPUT', 'OUTPUT')));
  s = await startTestServer({ modelRepositories: [repo.dir] });
});
after(async () => {
  await s.close();
  await repo.remove();
});

const RAW = { 'Inference-Header-Content-Length': '0' };
const raw = (model: string, body: Buffer | string) => request(`${s.url}/v2/models/${model}/infer`, { method: 'POST', body, headers: RAW });
const floats = (n: number): Buffer => Buffer.from(new Float32Array(Array.from({ length: n }, (_, i) => i)).buffer);

test('the body is the one input: a batch of one, the variable dimension from the byte count, outputs binary', async () => {
  for (const n of [8, 32]) {
    const r = await raw('raw_fp32', floats(n));
    assert.equal(r.status, 200, r.body.toString());
    const { header, blobs } = splitBinary(r);
    assert.deepEqual(header.outputs.map((o: any) => [o.name, o.datatype, o.shape]), [['OUTPUT0', 'FP32', [1, n]]]);
    assert.deepEqual(blobs.get('OUTPUT0'), floats(n));
  }
  // No batching: the model's dims as they are, the variable one deduced.
  const ints = Buffer.from(new Int32Array([1, 2, 3, 4, 5, 6]).buffer);
  const u = await raw('raw_int32_unbatched', ints);
  assert.equal(u.status, 200, u.body.toString());
  const { header, blobs } = splitBinary(u);
  assert.deepEqual(header.outputs[0].shape, [2, 3]);
  assert.deepEqual(blobs.get('OUTPUT0'), ints);
});

test('BYTES: the body is the single element; the answer carries it with its 4-byte length first', async () => {
  const r = await raw('raw_bytes_one', '427');
  assert.equal(r.status, 200, r.body.toString());
  const at = Number(r.headers.get('inference-header-content-length'));
  assert.equal(r.body.readUInt32LE(at), 3);
  assert.equal(r.body.subarray(at + 4).toString(), '427');
});

test('models whose input cannot be deduced are refused in Triton\'s words', async () => {
  const cases: [string, Buffer | string, string][] = [
    ['raw_bytes_many', '427', "For BYTE datatype raw input 'INPUT0', the model must have input shape [1]"],
    ['raw_fp32_two_variable', floats(4), "The shape of the raw input 'INPUT0' can not be deduced because there are more than one variable-sized dimension"],
    ['raw_three_inputs', floats(24), "Raw request must only have 1 input (found 1) to be deduced but got 3 inputs in 'raw_three_inputs' model configuration"],
  ];
  for (const [model, body, message] of cases) {
    const r = await raw(model, body);
    assert.equal(r.status, 400, model);
    assert.equal(r.json().error, message);
  }
  // Bytes that do not fill the deduced shape: the model's ordinary size check.
  const short = await raw('raw_fp32', floats(2).subarray(0, 7));
  assert.equal(short.status, 400);
  assert.match(short.json().error, /INPUT0/);
});

/** One request written as is on a fresh connection; the whole answer, read until the server closes. */
function rawExchange(head: string, body: Buffer): Promise<string> {
  const port = Number(new URL(s.url).port);
  return new Promise((resolve, reject) => {
    const c = connect(port, '127.0.0.1', () => c.end(Buffer.concat([Buffer.from(head), body])));
    const parts: Buffer[] = [];
    c.on('data', (d: Buffer) => parts.push(d));
    c.on('error', reject);
    c.on('close', () => resolve(Buffer.concat(parts).toString('latin1')));
  });
}

const chunked = (b: Buffer): Buffer => Buffer.concat([Buffer.from(`${b.byteLength.toString(16)}\r\n`), b, Buffer.from('\r\n0\r\n\r\n')]);

// L0_http test_content_encoding_chunked_manually: a chunked raw body is read like any other.
test('a chunked raw body is the input once the chunks are joined', async () => {
  const head = 'POST /v2/models/raw_fp32/infer HTTP/1.1\r\nHost: x\r\nConnection: close\r\nInference-Header-Content-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n';
  const answer = await rawExchange(head, chunked(floats(8)));
  assert.match(answer, /^HTTP\/1\.1 200 /);
  assert.ok(answer.endsWith(floats(8).toString('latin1')), answer);
});

// The same request with Content-Length too, as python-requests sends it when given a Transfer-Encoding header:
// Triton takes it, Nereid refuses it (two framings of one body allow request smuggling), saying why as JSON.
test('a body with both Transfer-Encoding: chunked and Content-Length is a JSON 400 that names the reason', async () => {
  const body = chunked(floats(8));
  const head = `POST /v2/models/raw_fp32/infer HTTP/1.1\r\nHost: x\r\nInference-Header-Content-Length: 0\r\nTransfer-Encoding: chunked\r\nContent-Length: ${body.byteLength}\r\n\r\n`;
  const answer = await rawExchange(head, body);
  assert.match(answer, /^HTTP\/1\.1 400 /);
  assert.match(answer, /\r\nContent-Type: application\/json\r\n/i);
  const json = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
  assert.match(json.error, /both Transfer-Encoding and Content-Length/);
  assert.match(json.error, /smuggling/);
  // The server goes on serving.
  assert.equal((await raw('raw_fp32', floats(8))).status, 200);
});
