import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EXAMPLES } from '../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/until.js';
import type { Tensor } from '../../src/tensor/tensor.js';

// Decoupled ensembles nested in decoupled ensembles, as Triton's qa/L0_decoupled runs them (nested_square:
// simple_repeat, itself an ensemble over repeat_int32, then square_int32), over many requests in a row.

const IO = `
input [ { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] }, { name: "DELAY" data_type: TYPE_UINT32 dims: [ -1 ] }, { name: "WAIT" data_type: TYPE_UINT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
`;
const REPEAT_STEP = (model: string, out: string) => `{ model_name: "${model}" model_version: -1
    input_map { key: "IN" value: "IN" } input_map { key: "DELAY" value: "DELAY" } input_map { key: "WAIT" value: "WAIT" }
    output_map { key: "OUT" value: "${out}" } }`;
const SQUARE_STEP = `{ model_name: "square_int32" model_version: -1 input_map { key: "IN" value: "repeat_out" } output_map { key: "OUT" value: "OUT" } }`;

let repo: { dir: string; remove(): Promise<void> };
let s: TestServer;

async function model(name: string, text: string): Promise<void> {
  await mkdir(join(repo.dir, name, '1'), { recursive: true });
  await writeFile(join(repo.dir, name, 'config.pbtxt'), `name: "${name}"\n${text}`);
}

before(async () => {
  repo = await tempRepository([{ from: join(EXAMPLES, 'repeat_int32') }]);
  await model('square_int32', `backend: "square"\nmax_batch_size: 0\nmodel_transaction_policy { decoupled: True }
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]\n`);
  await model('simple_repeat', `platform: "ensemble"\nmax_batch_size: 0\nensemble_scheduling { step [ ${REPEAT_STEP('repeat_int32', 'OUT')} ] }\n${IO}`);
  await model('nested_square', `platform: "ensemble"\nmax_batch_size: 0\nensemble_scheduling { step [ ${REPEAT_STEP('simple_repeat', 'repeat_out')}, ${SQUARE_STEP} ] }\n${IO}`);
  s = await startTestServer({ modelRepositories: [repo.dir] });
});
after(async () => {
  await s.close();
  await repo.remove();
});

const u32 = (xs: number[]) => new Uint8Array(new Uint32Array(xs).buffer);
const i32 = (xs: number[]) => new Uint8Array(new Int32Array(xs).buffer);

function inputs(values: number[]): Tensor[] {
  return [
    { name: 'IN', datatype: 'INT32', shape: [values.length], data: i32(values) },
    { name: 'DELAY', datatype: 'UINT32', shape: [values.length], data: u32(values.map(() => 0)) },
    { name: 'WAIT', datatype: 'UINT32', shape: [1], data: u32([0]) },
  ];
}

async function collect(values: number[]): Promise<number[]> {
  const got: number[] = [];
  for await (const res of s.server.inferStream({ model: 'nested_square', inputs: inputs(values) })) {
    const out = res.outputs.find((t) => t.name === 'OUT')!;
    got.push(new Int32Array((out.data as Uint8Array).slice().buffer)[0]!);
  }
  return got.sort((a, b) => a - b);
}

test('a nested decoupled ensemble answers every one of 500 requests in a row, each with all its responses', async () => {
  // Each value n repeats into square, which answers n times with n: 1 + 2 + 3 responses per request.
  for (let i = 0; i < 500; i++) {
    assert.deepEqual(await collect([1, 2, 3]), [1, 2, 2, 3, 3, 3], `request ${i}`);
  }
  // A request counts once its final response is out and its execution over, which may come a moment later.
  const success = (name: string) => (s.server.statistics(name).model_stats[0] as any).inference_stats.success.count;
  const names = ['nested_square', 'simple_repeat', 'repeat_int32', 'square_int32'];
  await until(() => names.map(success).join() === '500,500,500,1500', 'every request counted once');
});
