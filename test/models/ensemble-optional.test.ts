import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startTestServer, tempRepository, type TestServer } from '../helpers/server.js';
import { postJson } from '../helpers/http.js';

// A step's optional input wired to an ensemble tensor that nothing gave data: an optional ensemble input the
// request left out, or an output an earlier step did not send. The step still runs, without that input, as
// Triton's ensemble scheduler runs it (qa/L0_optional_input).

// Sends OUT_A always and OUT_B only when IN is positive.
const SOMETIMES = `
import { InferenceResponse, Tensor, getInputTensorByName } from 'nereid/backend-utils';
export default class Sometimes {
  execute(requests) {
    return requests.map((r) => {
      const v = getInputTensorByName(r, 'IN').asArray()[0];
      const out = [new Tensor('OUT_A', Int32Array.of(v), [1])];
      if (v > 0) out.push(new Tensor('OUT_B', Int32Array.of(v * 2), [1]));
      return new InferenceResponse(out);
    });
  }
}
`;

// SEEN = [X, Y or -1]: Y is optional.
const SEEN = `
import { InferenceResponse, Tensor, getInputTensorByName } from 'nereid/backend-utils';
export default class Seen {
  execute(requests) {
    return requests.map((r) => {
      const y = getInputTensorByName(r, 'Y');
      return new InferenceResponse([new Tensor('SEEN', Int32Array.of(getInputTensorByName(r, 'X').asArray()[0], y ? y.asArray()[0] : -1), [2])]);
    });
  }
}
`;

const ENSEMBLE = `
name: "optional_chain"
platform: "ensemble"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "EXTRA" data_type: TYPE_INT32 dims: [ 1 ] optional: true } ]
output [ { name: "FIRST" data_type: TYPE_INT32 dims: [ 2 ] }, { name: "SECOND" data_type: TYPE_INT32 dims: [ 2 ] } ]
ensemble_scheduling { step [
  { model_name: "sometimes" model_version: -1 input_map { key: "IN" value: "IN" }
    output_map { key: "OUT_A" value: "a" } output_map { key: "OUT_B" value: "b" } },
  { model_name: "seen" model_version: -1 input_map { key: "X" value: "a" } input_map { key: "Y" value: "b" } output_map { key: "SEEN" value: "FIRST" } },
  { model_name: "seen" model_version: -1 input_map { key: "X" value: "IN" } input_map { key: "Y" value: "EXTRA" } output_map { key: "SEEN" value: "SECOND" } }
] }
`;

let repo: { dir: string; remove(): Promise<void> };
let s: TestServer;

async function model(name: string, config: string, code?: string): Promise<void> {
  await mkdir(join(repo.dir, name, '1'), { recursive: true });
  await writeFile(join(repo.dir, name, 'config.pbtxt'), config);
  if (code) await writeFile(join(repo.dir, name, '1', 'model.mjs'), code);
}

before(async () => {
  repo = await tempRepository([]);
  await model('sometimes', `name: "sometimes"\nbackend: "javascript"\nmax_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT_A" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "OUT_B" data_type: TYPE_INT32 dims: [ 1 ] } ]\n`, SOMETIMES);
  await model('seen', `name: "seen"\nbackend: "javascript"\nmax_batch_size: 0
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] optional: true } ]
output [ { name: "SEEN" data_type: TYPE_INT32 dims: [ 2 ] } ]\n`, SEEN);
  await model('optional_chain', ENSEMBLE);
  await model('optional_out', `name: "optional_out"\nplatform: "ensemble"\nmax_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "A" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "B" data_type: TYPE_INT32 dims: [ 1 ] } ]
ensemble_scheduling { step [ { model_name: "sometimes" model_version: -1 input_map { key: "IN" value: "IN" }
  output_map { key: "OUT_A" value: "A" } output_map { key: "OUT_B" value: "B" } } ] }\n`);
  s = await startTestServer({ modelRepositories: [repo.dir] });
});
after(async () => {
  await s.close();
  await repo.remove();
});

async function infer(inp: number, extra?: number): Promise<Record<string, number[]>> {
  const inputs = [{ name: 'IN', shape: [1], datatype: 'INT32', data: [inp] }];
  if (extra !== undefined) inputs.push({ name: 'EXTRA', shape: [1], datatype: 'INT32', data: [extra] });
  const r = await postJson(`${s.url}/v2/models/optional_chain/infer`, { inputs });
  assert.equal(r.status, 200, r.body.toString());
  return Object.fromEntries(r.json().outputs.map((o: any) => [o.name, o.data]));
}

test('a step whose optional input an earlier step did not send runs without it', async () => {
  assert.deepEqual(await infer(3, 7), { FIRST: [3, 6], SECOND: [3, 7] });
  assert.deepEqual(await infer(-3, 7), { FIRST: [-3, -1], SECOND: [-3, 7] });
});

test('a step whose optional input is an optional ensemble input the request left out runs without it', async () => {
  assert.deepEqual(await infer(4), { FIRST: [4, 8], SECOND: [4, -1] });
  assert.deepEqual(await infer(-4), { FIRST: [-4, -1], SECOND: [-4, -1] });
});

test('an ensemble output its step did not send is left out of the response', async () => {
  const r = await postJson(`${s.url}/v2/models/optional_out/infer`, { inputs: [{ name: 'IN', shape: [1], datatype: 'INT32', data: [-2] }] });
  assert.equal(r.status, 200, r.body.toString());
  assert.deepEqual(r.json().outputs.map((o: any) => [o.name, o.data]), [['A', [-2]]]);
});
