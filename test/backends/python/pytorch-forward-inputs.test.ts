import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { FIXTURES } from '../../helpers/paths.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { postJson, request } from '../../helpers/http.js';
import { pythonSkip } from './helpers.js';

// What Triton's PyTorch backend gives forward() beyond the config's inputs: the sequence batcher's control
// inputs and implicit state at the __<index> of their names, batch inputs, and ragged inputs flat. The models are
// test/fixtures/torch (scripts/models/make_torch_examples.py); requests go over HTTP as Triton's clients send them.

const skip = pythonSkip('numpy, torch');
let s: TestServer;
before(async () => {
  if (skip) return;
  s = await startTestServer({ modelRepositories: [join(FIXTURES, 'torch')] });
});
after(async () => {
  await s?.close();
});

type Flags = { start?: boolean; end?: boolean };
async function step(model: string, id: number, input: { datatype: string; value: number }, flags: Flags = {}) {
  const r = await postJson(`${s.url}/v2/models/${model}/infer`, {
    inputs: [{ name: 'INPUT__0', shape: [1, 1], datatype: input.datatype, data: [input.value] }],
    parameters: { sequence_id: id, sequence_start: flags.start ?? false, sequence_end: flags.end ?? false },
  });
  assert.equal(r.status, 200, r.body.toString());
  return Object.fromEntries((r.json().outputs as { name: string; data: number[] }[]).map((o) => [o.name, o.data[0]]));
}

async function sequence(model: string, id: number, datatype: string, values: number[]) {
  const out = [];
  for (let i = 0; i < values.length; i++) {
    out.push(await step(model, id, { datatype, value: values[i]! }, { start: i === 0, end: i === values.length - 1 }));
  }
  return out;
}

test('Triton\'s qa libtorch sequence model: START__1 and READY__2 reach forward(input0, start0, ready0)', { skip }, async () => {
  // (input + start) * ready: START adds 1 to the first step only, READY is 1 on every step that runs.
  const [a, b] = await Promise.all([sequence('sequence_torch', 31, 'FP32', [5, 7, 2]), sequence('sequence_torch', 32, 'FP32', [-4, 9, 3])]);
  assert.deepEqual(a.map((o) => o.OUTPUT__0), [6, 7, 2]);
  assert.deepEqual(b.map((o) => o.OUTPUT__0), [-3, 9, 3]);
});

test('a TorchScript implicit state carries between steps; START, END, READY and CORRID reach forward by index', { skip }, async () => {
  const values = [11, 7, 5, 3];
  // Two sequences at once share batches of the one instance (max_batch_size 8): each row keeps its own state.
  const [a, b] = await Promise.all([sequence('implicit_torch', 41, 'INT32', values), sequence('implicit_torch', 42, 'INT32', values.map((v) => -v))]);
  assert.deepEqual(a.map((o) => o.OUTPUT__0), [11, 18, 23, 26]);
  assert.deepEqual(b.map((o) => o.OUTPUT__0), [-11, -18, -23, -26]);
  // 100 * corrid + 10 * start + end
  assert.deepEqual(a.map((o) => o.OUTPUT__2), [4110, 4100, 4100, 4101]);
  assert.deepEqual(b.map((o) => o.OUTPUT__2), [4210, 4200, 4200, 4201]);
  // The state output is the model's, not the client's.
  assert.deepEqual(Object.keys(a[0]!).sort(), ['OUTPUT__0', 'OUTPUT__2']);
  // A new sequence on the same id starts from the zero state again.
  assert.deepEqual((await sequence('implicit_torch', 41, 'INT32', [2, 2])).map((o) => o.OUTPUT__0), [2, 4]);
});

test('a TorchScript TYPE_STRING input and state reach forward as List[str]; a List[str] result answers', { skip }, async () => {
  const send = async (id: number, value: string, start: boolean) => {
    const r = await postJson(`${s.url}/v2/models/strings_torch/infer`, {
      inputs: [{ name: 'INPUT__0', shape: [1], datatype: 'BYTES', data: [value] }],
      parameters: { sequence_id: id, sequence_start: start },
    });
    assert.equal(r.status, 200, r.body.toString());
    const out = r.json().outputs as { name: string; datatype: string; shape: number[]; data: string[] }[];
    assert.deepEqual(out.map((o) => [o.name, o.datatype, o.shape]), [['OUTPUT__0', 'BYTES', [1]]]);
    return out[0]!.data[0];
  };
  const answers = [];
  for (const [i, v] of ['a', 'b', 'ç'].entries()) answers.push(await send(51, v, i === 0));
  // START (index 1) puts "[" first; the state (index 2) starts as an empty string and carries the text.
  assert.deepEqual(answers, ['[a', '[ab', '[abç']);
});

test('requests of different shapes share one batch through a ragged input, its batch input and batch output', { skip }, async () => {
  const rows = [[1, 2, 3], [10], [4, 5, 6, 7, 8]];
  // preferred_batch_size 3 with a long queue delay: the three go as one batch when the third arrives.
  const replies = await Promise.all(rows.map((data) => postJson(`${s.url}/v2/models/ragged_torch/infer`, {
    inputs: [{ name: 'INPUT__0', shape: [1, data.length], datatype: 'FP32', data }],
  })));
  replies.forEach((r, i) => {
    assert.equal(r.status, 200, r.body.toString());
    const outputs = r.json().outputs as { name: string; shape: number[]; data: number[] }[];
    const sum = outputs.find((o) => o.name === 'OUTPUT__0')!;
    const doubled = outputs.find((o) => o.name === 'OUTPUT__1')!;
    assert.deepEqual(sum.shape, [1, 1]);
    assert.deepEqual(sum.data, [rows[i]!.reduce((x, y) => x + y, 0)]);
    assert.deepEqual(doubled.shape, [1, rows[i]!.length]);
    assert.deepEqual(doubled.data, rows[i]!.map((v) => 2 * v));
  });
  const stats = (await request(`${s.url}/v2/models/ragged_torch/stats`)).json().model_stats[0];
  assert.equal(stats.inference_count, 3);
  assert.equal(stats.execution_count, 1);
});
