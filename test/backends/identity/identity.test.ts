import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startHttpFrontend, type HttpFrontend } from '../../../src/frontends/http/server.js';
import { serializeBytes, deserializeBytes } from '../../../src/tensor/bytes.js';
import { EXAMPLES } from '../../helpers/paths.js';
import { tempRepository } from '../../helpers/server.js';
import { binaryBody, postJson, request, splitBinary } from '../../helpers/http.js';
import { failure, int32Bytes, int32s, startGrpcTestServer, unary, type GrpcTestServer } from '../../helpers/grpc.js';

// Triton's identity backend, over HTTP and gRPC: the string client examples against simple_identity (Triton's
// simple_http_string_infer_client.py and simple_grpc_string_infer_client.py send exactly these), datatypes,
// batching, optional inputs, execute_delay_ms and the checks at load.

let repo: { dir: string; remove(): Promise<void> };
let s: GrpcTestServer;
let http: HttpFrontend;
let url: string;

const IO = (kind: 'input' | 'output', entries: string[]): string => `${kind} [\n${entries.join(',\n')}\n]\n`;
const tensor = (name: string, type: string, dims: string, extra = ''): string => `{ name: "${name}" data_type: ${type} dims: ${dims} ${extra}}`;

async function model(name: string, text: string): Promise<void> {
  await mkdir(join(repo.dir, name, '1'), { recursive: true });
  await writeFile(join(repo.dir, name, 'config.pbtxt'), `name: "${name}"\nbackend: "identity"\n${text}`);
}

before(async () => {
  repo = await tempRepository([{ from: join(EXAMPLES, 'simple_identity') }, { from: join(EXAMPLES, 'custom_identity_int32') }]);
  const types = ['TYPE_FP32', 'TYPE_INT64', 'TYPE_BOOL', 'TYPE_FP64', 'TYPE_UINT8', 'TYPE_STRING'];
  await model('identity_types', `max_batch_size: 4\n${IO('input', types.map((t, i) => tensor(`INPUT${i}`, t, '[ -1 ]')))}${IO('output', types.map((t, i) => tensor(`OUTPUT${i}`, t, '[ -1 ]')))}`);
  await model('identity_optional', `max_batch_size: 4\n${IO('input', [tensor('INPUT0', 'TYPE_INT32', '[ 2 ]'), tensor('INPUT1', 'TYPE_FP32', '[ -1, 3 ]', 'optional: true ')])}${IO('output', [tensor('OUTPUT0', 'TYPE_INT32', '[ 2 ]'), tensor('OUTPUT1', 'TYPE_FP32', '[ -1, 3 ]')])}`);
  const int32Io = `${IO('input', [tensor('INPUT0', 'TYPE_INT32', '[ -1 ]')])}${IO('output', [tensor('OUTPUT0', 'TYPE_INT32', '[ -1 ]')])}`;
  await model('identity_batched', `max_batch_size: 8\ndynamic_batching { max_queue_delay_microseconds: 100000 }\n${int32Io}`);
  await model('identity_slow', `max_batch_size: 8\n${int32Io}parameters [ { key: "execute_delay_ms" value: { string_value: "400" } } ]\n`);
  await model('identity_fast', `max_batch_size: 8\n${int32Io}`);
  s = await startGrpcTestServer({ modelRepositories: [repo.dir], modelControlMode: 'explicit', loadModels: ['*'] });
  http = await startHttpFrontend(s.server, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20 }, s.logger);
  url = `http://127.0.0.1:${http.port}`;
});
after(async () => {
  await s.close();
  await http.close();
  await repo.remove();
});

const sixteen = <T>(v: T): T[] => Array.from({ length: 16 }, () => v);
const NUL_TEXT = Buffer.from('he\x00llo', 'utf8');
const BLOB = Buffer.from([0, 1, 2, 3]);

/** What simple_http_string_infer_client.py's identity_inference sends with binary_data=True, and its answer. */
async function httpBinary(elements: Buffer[]): Promise<Uint8Array[]> {
  const data = serializeBytes(elements);
  const { body, headers } = binaryBody({
    inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'BYTES', parameters: { binary_data_size: data.byteLength } }],
    outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
  }, [data]);
  const r = await request(`${url}/v2/models/simple_identity/infer`, { body, headers });
  assert.equal(r.status, 200, r.body.toString());
  const { header, blobs } = splitBinary(r);
  assert.deepEqual([header.outputs[0].name, header.outputs[0].datatype, header.outputs[0].shape], ['OUTPUT0', 'BYTES', [1, 16]]);
  return deserializeBytes(blobs.get('OUTPUT0')!, 16, 'OUTPUT0');
}

test('simple_identity: the HTTP string client example, binary tensors: "he\\0llo" and \\x00\\x01\\x02\\x03 come back byte for byte', async () => {
  for (const element of [NUL_TEXT, BLOB]) {
    const out = await httpBinary(sixteen(element));
    assert.equal(out.length, 16);
    for (const e of out) assert.deepEqual(Buffer.from(e), element);
  }
});

test('simple_identity: the HTTP string client example, JSON tensors', async () => {
  for (const element of [NUL_TEXT, BLOB]) {
    const text = element.toString('utf8');
    const r = await postJson(`${url}/v2/models/simple_identity/infer`, {
      inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'BYTES', data: sixteen(text) }],
      outputs: [{ name: 'OUTPUT0', parameters: { binary_data: false } }],
    });
    assert.equal(r.status, 200, r.body.toString());
    const out = r.json().outputs[0];
    assert.deepEqual([out.name, out.datatype, out.shape], ['OUTPUT0', 'BYTES', [1, 16]]);
    assert.deepEqual(out.data, sixteen(text));
  }
});

test('simple_identity: the gRPC string client example (raw_input_contents), byte for byte', async () => {
  for (const element of [NUL_TEXT, BLOB]) {
    const res = await unary(s.client, 'ModelInfer', {
      model_name: 'simple_identity',
      inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [1, 16] }],
      outputs: [{ name: 'OUTPUT0' }],
      raw_input_contents: [serializeBytes(sixteen(element))],
    });
    assert.deepEqual([res.outputs[0].name, res.outputs[0].datatype, res.outputs[0].shape.map(Number)], ['OUTPUT0', 'BYTES', [1, 16]]);
    for (const e of deserializeBytes(res.raw_output_contents[0], 16, 'OUTPUT0')) assert.deepEqual(Buffer.from(e), element);
  }
});

test('custom_identity_int32: INT32 [1, 16] comes back, with the response parameters Triton\'s identity backend sets', async () => {
  const values = Array.from({ length: 16 }, (_, i) => i);
  const r = await postJson(`${url}/v2/models/custom_identity_int32/infer`, { inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: values }] });
  assert.equal(r.status, 200, r.body.toString());
  const body = r.json();
  assert.deepEqual(body.outputs, [{ name: 'OUTPUT0', datatype: 'INT32', shape: [1, 16], data: values }]);
  assert.deepEqual(body.parameters, { param0: 'an example string parameter', param1: 42, param2: false });
  const cfg = (await request(`${url}/v2/models/custom_identity_int32/config`)).json();
  assert.equal(cfg.backend, 'identity');
});

test('every datatype, several rows, copied to the output of the same index', async () => {
  const inputs = [
    { name: 'INPUT0', datatype: 'FP32', shape: [2, 2], data: [1.5, -2, 0.25, 1024] },
    { name: 'INPUT1', datatype: 'INT64', shape: [2, 1], data: [9007199254740991, -5] },
    { name: 'INPUT2', datatype: 'BOOL', shape: [2, 3], data: [true, false, true, false, false, true] },
    { name: 'INPUT3', datatype: 'FP64', shape: [2, 1], data: [1e-300, -0.5] },
    { name: 'INPUT4', datatype: 'UINT8', shape: [2, 2], data: [0, 255, 7, 8] },
    { name: 'INPUT5', datatype: 'BYTES', shape: [2, 2], data: ['a', '', 'héllo', 'z'] },
  ];
  const r = await postJson(`${url}/v2/models/identity_types/infer`, { inputs });
  assert.equal(r.status, 200, r.body.toString());
  const outs = new Map(r.json().outputs.map((o: any) => [o.name, o]));
  for (let i = 0; i < inputs.length; i++) {
    const o = outs.get(`OUTPUT${i}`) as any;
    assert.deepEqual([o.datatype, o.shape, o.data], [inputs[i]!.datatype, inputs[i]!.shape, inputs[i]!.data], `OUTPUT${i}`);
  }
  // Only the outputs asked for.
  const one = await postJson(`${url}/v2/models/identity_types/infer`, { inputs, outputs: [{ name: 'OUTPUT4' }] });
  assert.deepEqual(one.json().outputs.map((o: any) => o.name), ['OUTPUT4']);
});

test('an optional input left out: its output is zeros of its dims (-1 as 1) with the batch dimension of the first input', async () => {
  const r = await postJson(`${url}/v2/models/identity_optional/infer`, { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [3, 2], data: [1, 2, 3, 4, 5, 6] }] });
  assert.equal(r.status, 200, r.body.toString());
  const outs = new Map(r.json().outputs.map((o: any) => [o.name, o]));
  assert.deepEqual((outs.get('OUTPUT0') as any).data, [1, 2, 3, 4, 5, 6]);
  assert.deepEqual([(outs.get('OUTPUT1') as any).shape, (outs.get('OUTPUT1') as any).data], [[3, 1, 3], Array(9).fill(0)]);
  const both = await postJson(`${url}/v2/models/identity_optional/infer`, {
    inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 2], data: [7, 8] }, { name: 'INPUT1', datatype: 'FP32', shape: [1, 2, 3], data: [1, 2, 3, 4, 5, 6] }],
  });
  assert.deepEqual(both.json().outputs.find((o: any) => o.name === 'OUTPUT1').data, [1, 2, 3, 4, 5, 6]);
});

test('dynamic batching: requests batched together each get their own rows back', async () => {
  const rs = await Promise.all([0, 1, 2, 3, 4].map((k) => unary(s.client, 'ModelInfer', {
    model_name: 'identity_batched', inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 3] }],
    raw_input_contents: [int32Bytes([100 * k, 100 * k + 1, 100 * k + 2])],
  }).then((res) => ({ shape: res.outputs[0].shape.map(Number), values: int32s(res.raw_output_contents[0]) }))));
  rs.forEach((r, k) => assert.deepEqual(r, { shape: [1, 3], values: [100 * k, 100 * k + 1, 100 * k + 2] }));
  const stats = s.server.statistics('identity_batched').model_stats[0] as any;
  assert.equal(stats.inference_stats.success.count, 5);
  assert.ok(stats.execution_count < 5, `expected the dynamic batcher to batch, got ${stats.execution_count} executions`);
});

test('execute_delay_ms: an execution waits before it answers, and holds its instance meanwhile', async () => {
  const order: string[] = [];
  const call = (m: string, tag: string) => postJson(`${url}/v2/models/${m}/infer`, { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 1], data: [1] }] })
    .then((r) => {
      assert.equal(r.status, 200);
      order.push(tag);
    });
  // One instance: the second slow request waits for the first one's delay, then has its own.
  await Promise.all([call('identity_slow', 'slow1'), call('identity_slow', 'slow2'), new Promise((r) => setTimeout(r, 50)).then(() => call('identity_fast', 'fast'))]);
  assert.deepEqual(order, ['fast', 'slow1', 'slow2']);
});

test('configs Triton\'s identity backend refuses are refused at load, with its messages', async () => {
  const cases: [string, string, RegExp][] = [
    ['bad_pairs', `max_batch_size: 0\n${IO('input', [tensor('INPUT0', 'TYPE_INT32', '[ 1 ]'), tensor('INPUT1', 'TYPE_INT32', '[ 1 ]')])}${IO('output', [tensor('OUTPUT0', 'TYPE_INT32', '[ 1 ]')])}`, /model configuration must have equal input\/output pairs/],
    ['bad_name', `max_batch_size: 0\n${IO('input', [tensor('IN', 'TYPE_INT32', '[ 1 ]')])}${IO('output', [tensor('OUTPUT0', 'TYPE_INT32', '[ 1 ]')])}`, /expected input name to follow INPUT<index> pattern, got 'IN'/],
    ['bad_type', `max_batch_size: 0\n${IO('input', [tensor('INPUT0', 'TYPE_INT32', '[ 1 ]')])}${IO('output', [tensor('OUTPUT0', 'TYPE_FP32', '[ 1 ]')])}`, /expected input and output datatype to match, got TYPE_INT32 and TYPE_FP32/],
    ['bad_shape', `max_batch_size: 0\n${IO('input', [tensor('INPUT0', 'TYPE_INT32', '[ 2 ]')])}${IO('output', [tensor('OUTPUT0', 'TYPE_INT32', '[ 3 ]')])}`, /expected input and output shape to match, got \[2\] and \[3\]/],
    ['bad_index', `max_batch_size: 0\n${IO('input', [tensor('INPUT0', 'TYPE_INT32', '[ 1 ]')])}${IO('output', [tensor('OUTPUT1', 'TYPE_INT32', '[ 1 ]')])}`, /expected input and output indices to match/],
  ];
  for (const [name, text, message] of cases) {
    await model(name, text);
    const err = await failure(unary(s.client, 'RepositoryModelLoad', { model_name: name }));
    assert.match(err.details, message, name);
  }
});
