import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { startHttpFrontend, type HttpFrontend } from '../../../src/frontends/http/server.js';
import { EXAMPLES } from '../../helpers/paths.js';
import { tempRepository } from '../../helpers/server.js';
import { postJson } from '../../helpers/http.js';
import { failure, int32Bytes, startGrpcTestServer, unary, type GrpcTestServer } from '../../helpers/grpc.js';

// Triton's decoupled example backends over gRPC ModelStreamInfer, as its QA uses them: repeat (repeat_int32,
// IN/DELAY/WAIT → OUT/IDX) and square (square_int32, IN → OUT repeated IN times), then the final flag.

let repo: { dir: string; remove(): Promise<void> };
let s: GrpcTestServer;
let http: HttpFrontend;
let url: string;

const io = (kind: string, entries: [string, string, string][]): string =>
  `${kind} [\n${entries.map(([n, t, d]) => `  { name: "${n}" data_type: ${t} dims: ${d} }`).join(',\n')}\n]\n`;
const SQUARE_IO = io('input', [['IN', 'TYPE_INT32', '[ 1 ]']]) + io('output', [['OUT', 'TYPE_INT32', '[ 1 ]']]);

async function model(name: string, text: string): Promise<void> {
  await mkdir(join(repo.dir, name, '1'), { recursive: true });
  await writeFile(join(repo.dir, name, 'config.pbtxt'), `name: "${name}"\n${text}`);
}

before(async () => {
  repo = await tempRepository([{ from: join(EXAMPLES, 'repeat_int32') }]);
  const decoupled = 'model_transaction_policy { decoupled: True }\n';
  // As Triton's QA: a non-decoupled copy of repeat_int32 (L0_grpc_state_cleanup's repeat_int32_non_decoupled).
  const repeatText = await readFile(join(EXAMPLES, 'repeat_int32', 'config.pbtxt'), 'utf8');
  await model('repeat_int32_non_decoupled', repeatText.replace('name: "repeat_int32"\n', '').replace('decoupled: True', 'decoupled: False'));
  await model('square_int32', `backend: "square"\nmax_batch_size: 0\n${decoupled}${SQUARE_IO}`);
  await model('square_batched', `backend: "square"\nmax_batch_size: 4\n${decoupled}${SQUARE_IO}`);
  await model('square_fail', `backend: "square"\nmax_batch_size: 0\n${decoupled}${SQUARE_IO}parameters [ { key: "CUSTOM_FAIL_COUNT" value: { string_value: "1" } }, { key: "CUSTOM_EMPTY_COUNT" value: { string_value: "2" } } ]\n`);
  await model('square_empty', `backend: "square"\nmax_batch_size: 0\n${decoupled}${SQUARE_IO}parameters [ { key: "CUSTOM_EMPTY_COUNT" value: { string_value: "2" } } ]\n`);
  s = await startGrpcTestServer({ modelRepositories: [repo.dir], modelControlMode: 'explicit', loadModels: ['*'] });
  http = await startHttpFrontend(s.server, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20 }, s.logger);
  url = `http://127.0.0.1:${http.port}`;
});
after(async () => {
  await s.close();
  await http.close();
  await repo.remove();
});

/** Sends every request on one stream, half-closes, and collects what comes back until the status. */
function stream(requests: unknown[]): Promise<{ responses: any[]; status: grpc.StatusObject }> {
  return new Promise((resolve) => {
    const call = s.client.ModelStreamInfer(new grpc.Metadata());
    const responses: any[] = [];
    call.on('data', (r: any) => responses.push(r));
    call.on('error', () => {});
    call.on('status', (status: grpc.StatusObject) => resolve({ responses, status }));
    for (const r of requests) call.write(r);
    call.end();
  });
}

const EMPTY_FINAL = { triton_enable_empty_final_response: { bool_param: true } };
const finalFlag = (r: any): boolean => r.infer_response.parameters.triton_final_response?.bool_param;
const output = (r: any, name: string): number => {
  const i = r.infer_response.outputs.findIndex((o: any) => o.name === name);
  const b = Buffer.from(r.infer_response.raw_output_contents[i]);
  return name === 'IDX' ? b.readUInt32LE(0) : b.readInt32LE(0);
};

function repeat(model: string, id: string, values: number[], delays: number[], wait = 0, params: Record<string, unknown> = EMPTY_FINAL): Record<string, unknown> {
  return {
    model_name: model, id, parameters: params,
    inputs: [{ name: 'IN', datatype: 'INT32', shape: [values.length] }, { name: 'DELAY', datatype: 'UINT32', shape: [delays.length] }, { name: 'WAIT', datatype: 'UINT32', shape: [1] }],
    raw_input_contents: [int32Bytes(values), Buffer.from(new Uint32Array(delays).buffer), Buffer.from(new Uint32Array([wait]).buffer)],
  };
}

const square = (model: string, id: string, n: number, shape = [1]) => ({
  model_name: model, id, parameters: EMPTY_FINAL, inputs: [{ name: 'IN', datatype: 'INT32', shape }], raw_input_contents: [int32Bytes([n])],
});

test('repeat: one response per IN element with OUT = IN[i] and IDX = i, in order, then the final flag alone', async () => {
  const { responses, status } = await stream([repeat('repeat_int32', 'a', [4, 2, 0, 1], [1, 2, 3, 4], 5)]);
  assert.equal(status.code, grpc.status.OK);
  assert.deepEqual(responses.slice(0, 4).map((r) => [output(r, 'OUT'), output(r, 'IDX'), finalFlag(r)]), [[4, 0, false], [2, 1, false], [0, 2, false], [1, 3, false]]);
  assert.equal(responses.length, 5);
  assert.deepEqual([finalFlag(responses[4]), responses[4].infer_response.outputs.length, responses[4].infer_response.id], [true, 0, 'a']);
  // IN of shape [0]: no response, only the final flag.
  const none = await stream([repeat('repeat_int32', 'z', [], [])]);
  assert.deepEqual(none.responses.map((r) => [finalFlag(r), r.infer_response.outputs.length]), [[true, 0]]);
});

test('repeat: DELAY orders the responses of requests that run at once; WAIT holds the instance', async () => {
  // WAIT 0: the one instance takes the next request at once, so the later request's quick response comes first.
  const interleaved = await stream([repeat('repeat_int32', 'slow', [1, 2], [300, 300]), repeat('repeat_int32', 'fast', [7], [10])]);
  assert.deepEqual(interleaved.responses.filter((r) => !finalFlag(r)).map((r) => r.infer_response.id), ['fast', 'slow', 'slow']);
  // WAIT longer than slow's DELAY: fast cannot start before slow's execution ends, so slow answers first.
  const held = await stream([repeat('repeat_int32', 'slow', [1], [100], 400), repeat('repeat_int32', 'fast', [7], [0])]);
  assert.deepEqual(held.responses.filter((r) => !finalFlag(r)).map((r) => r.infer_response.id), ['slow', 'fast']);
});

test('repeat: IN and DELAY of different shapes is an error response naming the model', async () => {
  const { responses } = await stream([{ ...repeat('repeat_int32', 'm', [1, 2], [0]) }]);
  assert.equal(responses.length, 1);
  assert.equal(responses[0].error_message, 'expected IN and DELAY shape to match, got [2] and [1]');
  assert.equal(responses[0].infer_response.model_name, 'repeat_int32');
});

test('repeat, not decoupled (as Triton\'s QA loads it): the first response is the answer', async () => {
  const { responses } = await stream([repeat('repeat_int32_non_decoupled', '0', [100, 101, 102, 103], [0, 0, 0, 0], 0, {})]);
  assert.equal(responses.length, 1);
  assert.deepEqual([output(responses[0], 'OUT'), output(responses[0], 'IDX'), finalFlag(responses[0])], [100, 0, true]);
  // Over HTTP as an ordinary model.
  const r = await postJson(`${url}/v2/models/repeat_int32_non_decoupled/infer`, {
    inputs: [{ name: 'IN', datatype: 'INT32', shape: [2], data: [5, 6] }, { name: 'DELAY', datatype: 'UINT32', shape: [2], data: [10, 10] }, { name: 'WAIT', datatype: 'UINT32', shape: [1], data: [0] }],
  });
  assert.equal(r.status, 200, r.body.toString());
  assert.deepEqual(r.json().outputs.map((o: any) => [o.name, o.data]), [['OUT', [5]], ['IDX', [0]]]);
  // The decoupled model over HTTP /infer is refused, as Triton does.
  const refused = await postJson(`${url}/v2/models/repeat_int32/infer`, { inputs: [] });
  assert.equal(refused.status, 501);
});

test('square: IN = n gives n responses of OUT = n, then the final flag; IN = 0 gives only the flag', async () => {
  const { responses, status } = await stream([square('square_int32', 'five', 5), square('square_int32', 'zero', 0)]);
  assert.equal(status.code, grpc.status.OK);
  const five = responses.filter((r) => r.infer_response.id === 'five');
  assert.deepEqual(five.map((r) => [finalFlag(r), r.infer_response.outputs.length ? output(r, 'OUT') : null]), [
    [false, 5], [false, 5], [false, 5], [false, 5], [false, 5], [true, null],
  ]);
  assert.deepEqual(five[0].infer_response.outputs.map((o: any) => [o.name, o.datatype, o.shape.map(Number)]), [['OUT', 'INT32', [1]]]);
  const zero = responses.filter((r) => r.infer_response.id === 'zero');
  assert.deepEqual(zero.map((r) => [finalFlag(r), r.infer_response.outputs.length]), [[true, 0]]);
  // Many responses are not capped or merged.
  const many = await stream([square('square_int32', 'many', 300)]);
  assert.equal(many.responses.filter((r) => !finalFlag(r)).length, 300);
});

test('square with batching: each request a batch of one, answered in the request\'s rank', async () => {
  const { responses } = await stream([square('square_batched', 'b', 2, [1, 1])]);
  assert.deepEqual(responses.map((r) => [finalFlag(r), r.infer_response.outputs.map((o: any) => o.shape.map(Number))]), [[false, [[1, 1]]], [false, [[1, 1]]], [true, []]]);
  const bad = await stream([{ ...square('square_batched', 'x', 2, [2, 1]), raw_input_contents: [int32Bytes([2, 2])] }]);
  assert.equal(bad.responses[0].error_message, 'unexpected shape for IN input');
});

test('square: CUSTOM_EMPTY_COUNT leaves out the last responses; CUSTOM_FAIL_COUNT fails the ones before them', async () => {
  const empty = await stream([square('square_empty', 'e', 5)]);
  assert.deepEqual(empty.responses.map(finalFlag), [false, false, false, true]);
  const failed = await stream([square('square_fail', 'f', 5)]);
  assert.deepEqual(failed.responses.slice(0, 2).map((r) => [finalFlag(r), output(r, 'OUT')]), [[false, 5], [false, 5]]);
  assert.equal(failed.responses[2].error_message, 'simulated failure');
});

test('configs the repeat and square backends refuse are refused at load, with their messages', async () => {
  const cases: [string, string, RegExp][] = [
    ['repeat_batched', `backend: "repeat"\nmax_batch_size: 2\n${io('input', [['IN', 'TYPE_INT32', '[ -1 ]']])}${io('output', [['OUT', 'TYPE_INT32', '[ 1 ]']])}`, /repeat backend only supports models with max_batch_size == 0/],
    ['repeat_two_inputs', `backend: "repeat"\nmax_batch_size: 0\n${io('input', [['IN', 'TYPE_INT32', '[ -1 ]'], ['DELAY', 'TYPE_UINT32', '[ -1 ]']])}${io('output', [['OUT', 'TYPE_INT32', '[ 1 ]'], ['IDX', 'TYPE_UINT32', '[ 1 ]']])}`, /expected 3 inputs, got 2/],
    ['square_type', `backend: "square"\nmax_batch_size: 0\n${io('input', [['IN', 'TYPE_FP32', '[ 1 ]']])}${io('output', [['OUT', 'TYPE_INT32', '[ 1 ]']])}`, /expected IN datatype to be INT32, got TYPE_FP32/],
    ['square_name', `backend: "square"\nmax_batch_size: 0\n${io('input', [['X', 'TYPE_INT32', '[ 1 ]']])}${io('output', [['OUT', 'TYPE_INT32', '[ 1 ]']])}`, /expected first input tensor name to be IN, got X/],
  ];
  for (const [name, text, message] of cases) {
    await model(name, text);
    const err = await failure(unary(s.client, 'RepositoryModelLoad', { model_name: name }));
    assert.match(err.details, message, name);
  }
});
