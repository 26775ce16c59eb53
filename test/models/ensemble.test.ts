import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXAMPLES, FIXTURES } from '../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../helpers/server.js';
import { postJson, request } from '../helpers/http.js';

// Ensembles through the real server: a two-step chain over `simple`, a fan-out of two steps that must run at the same time,
// step errors, missing composing models, and dependency loading in explicit mode.

const CHAIN = `
name: "chain"
platform: "ensemble"
max_batch_size: 8
input [ { name: "A" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "B" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "TWICE_A" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "TWICE_B" data_type: TYPE_INT32 dims: [ 16 ] } ]
ensemble_scheduling {
  step [
    { model_name: "simple" model_version: -1
      input_map { key: "INPUT0" value: "A" } input_map { key: "INPUT1" value: "B" }
      output_map { key: "OUTPUT0" value: "sum" } output_map { key: "OUTPUT1" value: "diff" } },
    { model_name: "simple" model_version: 1
      input_map { key: "INPUT0" value: "sum" } input_map { key: "INPUT1" value: "diff" }
      output_map { key: "OUTPUT0" value: "TWICE_A" } output_map { key: "OUTPUT1" value: "TWICE_B" } }
  ]
}
`;

const MISSING = CHAIN.replace('"chain"', '"missing_step"').replace(/model_name: "simple" model_version: 1/, 'model_name: "nowhere" model_version: -1');

async function addEnsemble(dir: string, name: string, config: string): Promise<void> {
  await mkdir(join(dir, name, '1'), { recursive: true });
  await writeFile(join(dir, name, 'config.pbtxt'), config);
}

const ints = (n: number, f: (i: number) => number) => Array.from({ length: n }, (_, i) => f(i));

let repo: { dir: string; remove(): Promise<void> };
let s: TestServer;
before(async () => {
  repo = await tempRepository([{ from: join(EXAMPLES, 'simple') },
    { from: join(FIXTURES, 'js', 'barrier') }, { from: join(FIXTURES, 'js', 'barrier_fanout') }]);
  await addEnsemble(repo.dir, 'chain', CHAIN);
  await addEnsemble(repo.dir, 'missing_step', MISSING);
  await addEnsemble(repo.dir, 'too_big', CHAIN.replace('"chain"', '"too_big"').replace('max_batch_size: 8', 'max_batch_size: 16'));
  s = await startTestServer({ modelRepositories: [repo.dir], exitOnError: false, strictReadiness: false });
});
after(async () => {
  await s.close();
  await repo.remove();
});

test('a two-step ensemble passes tensors between steps and returns its own outputs', async () => {
  const a = ints(16, (i) => i);
  const b = ints(16, (i) => 100 - i);
  const r = await postJson(`${s.url}/v2/models/chain/infer`, {
    id: 'ens-1',
    inputs: [{ name: 'A', shape: [1, 16], datatype: 'INT32', data: a }, { name: 'B', shape: [1, 16], datatype: 'INT32', data: b }],
  });
  assert.equal(r.status, 200, r.body.toString());
  const j = r.json();
  assert.equal(j.model_name, 'chain');
  assert.equal(j.id, 'ens-1');
  const out = new Map<string, any>(j.outputs.map((o: any) => [o.name, o]));
  assert.deepEqual(out.get('TWICE_A').data, a.map((x) => 2 * x));
  assert.deepEqual(out.get('TWICE_B').data, b.map((x) => 2 * x));
  assert.deepEqual(out.get('TWICE_A').shape, [1, 16]);
});

test('only the requested ensemble outputs come back', async () => {
  const r = await postJson(`${s.url}/v2/models/chain/infer`, {
    inputs: [{ name: 'A', shape: [1, 16], datatype: 'INT32', data: ints(16, () => 1) }, { name: 'B', shape: [1, 16], datatype: 'INT32', data: ints(16, () => 2) }],
    outputs: [{ name: 'TWICE_B' }],
  });
  assert.equal(r.status, 200, r.body.toString());
  assert.deepEqual(r.json().outputs.map((o: any) => o.name), ['TWICE_B']);
});

test('composing models count their own executions; the ensemble counts its requests', async () => {
  const before = (await (await request(`${s.url}/v2/models/simple/stats`)).json()).model_stats[0].inference_stats.success.count;
  const body = { inputs: [{ name: 'A', shape: [1, 16], datatype: 'INT32', data: ints(16, () => 3) }, { name: 'B', shape: [1, 16], datatype: 'INT32', data: ints(16, () => 4) }] };
  for (let i = 0; i < 3; i++) assert.equal((await postJson(`${s.url}/v2/models/chain/infer`, body)).status, 200);
  const simple = (await request(`${s.url}/v2/models/simple/stats`)).json().model_stats[0].inference_stats.success.count;
  assert.equal(simple - before, 6, 'two steps on simple per ensemble request');
  const chain = (await request(`${s.url}/v2/models/chain/stats`)).json().model_stats[0].inference_stats.success.count;
  assert.ok(chain >= 3);
});

test('an ensemble counts each successful request as an execution in the batch statistics of its batch size', async () => {
  // As Triton's ensemble scheduler reports them (qa/L0_simple_ensemble checks the ensemble's batch_stats).
  const stats = async () => (await request(`${s.url}/v2/models/chain/stats`)).json().model_stats[0];
  const before = await stats();
  const rows = (n: number) => ({ inputs: ['A', 'B'].map((name) => ({ name, shape: [n, 16], datatype: 'INT32', data: ints(16 * n, () => 1) })) });
  for (let i = 0; i < 2; i++) assert.equal((await postJson(`${s.url}/v2/models/chain/infer`, rows(3))).status, 200);
  assert.equal((await postJson(`${s.url}/v2/models/chain/infer`, rows(5))).status, 200);
  const bad = { inputs: [{ name: 'A', shape: [1, 16], datatype: 'INT32', data: ints(16, () => 1) }] };
  assert.equal((await postJson(`${s.url}/v2/models/chain/infer`, bad)).status, 400);
  const after = await stats();
  const batch = (n: number) => after.batch_stats.find((b: any) => b.batch_size === n);
  assert.equal(batch(3).compute_infer.count, 2);
  assert.equal(batch(5).compute_infer.count, 1);
  assert.ok(batch(3).compute_infer.ns > 0);
  assert.equal(after.execution_count - before.execution_count, 3);
  assert.equal(after.inference_count - before.inference_count, 11);
});

test('independent steps run at the same time: two steps that each wait for the other both finish', async () => {
  // Each barrier step finishes only once the other has started on the second instance, so steps run one
  // after another would fail (after the barrier's 10 s) instead of answering.
  const token = 4242;
  try {
    const r = await postJson(`${s.url}/v2/models/barrier_fanout/infer`, { inputs: [{ name: 'TOKEN', shape: [1], datatype: 'INT32', data: [token] }] });
    assert.equal(r.status, 200, r.body.toString());
    assert.deepEqual(r.json().outputs.map((o: any) => [o.name, o.data[0]]).sort(), [['A', 2], ['B', 2]]);
  } finally {
    await rm(join(tmpdir(), `nereid-barrier-${process.pid}-${token}`), { recursive: true, force: true });
  }
});

test('an ensemble allowing bigger batches than a composing model does not load', async () => {
  const index = (await postJson(`${s.url}/v2/repository/index`, {})).json() as any[];
  const e = index.find((m) => m.name === 'too_big');
  assert.equal(e.state, 'UNAVAILABLE');
  assert.match(e.reason, /^ensemble too_big allows maximum batch size 16, but it contains model simple which only allows maximum batch size to be 8$/);
});

test('an ensemble whose composing model is missing is UNAVAILABLE with the reason', async () => {
  const index = (await postJson(`${s.url}/v2/repository/index`, {})).json() as any[];
  const e = index.find((m) => m.name === 'missing_step');
  assert.equal(e.state, 'UNAVAILABLE');
  assert.match(e.reason, /nowhere/);
  const r = await postJson(`${s.url}/v2/models/missing_step/infer`, { inputs: [] });
  assert.notEqual(r.status, 200);
});

test('explicit mode: loading an ensemble loads the models it runs on', async () => {
  const repo2 = await tempRepository([{ from: join(EXAMPLES, 'simple') }]);
  await addEnsemble(repo2.dir, 'chain', CHAIN);
  const s2 = await startTestServer({ modelRepositories: [repo2.dir], modelControlMode: 'explicit' });
  try {
    const load = await postJson(`${s2.url}/v2/repository/models/chain/load`, {});
    assert.equal(load.status, 200, load.body.toString());
    assert.equal((await request(`${s2.url}/v2/models/simple/ready`)).status, 200);
    assert.equal((await request(`${s2.url}/v2/models/chain/ready`)).status, 200);
    // A composing model that goes away takes the ensemble with it, as Triton's dependency graph does
    // (ensemble-lifecycle.test.ts has the rest).
    assert.equal((await postJson(`${s2.url}/v2/repository/models/simple/unload`, {})).status, 200);
    const r = await postJson(`${s2.url}/v2/models/chain/infer`, {
      inputs: [{ name: 'A', shape: [1, 16], datatype: 'INT32', data: ints(16, () => 1) }, { name: 'B', shape: [1, 16], datatype: 'INT32', data: ints(16, () => 2) }],
    });
    assert.notEqual(r.status, 200);
    assert.equal(r.json().error, "Request for unknown model: 'chain' has no available versions");
  } finally {
    await s2.close();
    await repo2.remove();
  }
});

test('the bundled digits_pipeline ensemble answers as its three steps called one by one', async () => {
  const ex = await startTestServer({ modelRepositories: [EXAMPLES] });
  try {
    // Two 8x8 images as bytes: a vertical bar (a one, roughly) and a ring (a zero, roughly).
    const bar = ints(64, (i) => (i % 8 === 3 || i % 8 === 4 ? 255 : 0));
    const ring = ints(64, (i) => {
      const r = Math.floor(i / 8), c = i % 8;
      return (r === 1 || r === 6) && c >= 2 && c <= 5 ? 255 : (c === 1 || c === 6) && r >= 2 && r <= 5 ? 255 : 0;
    });
    const r = await postJson(`${ex.url}/v2/models/digits_pipeline/infer`, { inputs: [{ name: 'IMAGE', shape: [2, 64], datatype: 'UINT8', data: [...bar, ...ring] }] });
    assert.equal(r.status, 200, r.body.toString());
    const out = new Map<string, any>(r.json().outputs.map((o: any) => [o.name, o]));
    assert.deepEqual(out.get('DIGIT').shape, [2, 1]);
    const direct = await postJson(`${ex.url}/v2/models/digits/infer`, {
      inputs: [{ name: 'INPUT', shape: [2, 64], datatype: 'FP32', data: [...bar, ...ring].map((v) => Math.fround(v * Math.fround(16 / 255))) }],
    });
    const probs = direct.json().outputs[0].data as number[];
    for (let b = 0; b < 2; b++) {
      const row = probs.slice(b * 10, b * 10 + 10);
      const best = row.indexOf(Math.max(...row));
      assert.equal(out.get('DIGIT').data[b], best);
      assert.ok(Math.abs(out.get('CONFIDENCE').data[b] - row[best]!) < 1e-5);
    }
    assert.equal(out.get('DIGIT').data[1], 0, 'the ring reads as a zero');
  } finally {
    await ex.close();
  }
});

test('a decoupled step makes the ensemble decoupled: each of its responses flows through the later steps', async () => {
  const repo2 = await tempRepository([{ from: join(EXAMPLES, 'repeat_int32') }, { from: join(FIXTURES, 'js', 'times_ten') }]);
  await addEnsemble(repo2.dir, 'repeat_then_scale', `
name: "repeat_then_scale"
platform: "ensemble"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] }, { name: "DELAY" data_type: TYPE_UINT32 dims: [ -1 ] }, { name: "WAIT" data_type: TYPE_UINT32 dims: [ 1 ] } ]
output [ { name: "SCALED" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "INDEX" data_type: TYPE_UINT32 dims: [ 1 ] } ]
ensemble_scheduling { step [
  { model_name: "repeat_int32" model_version: -1
    input_map { key: "IN" value: "IN" } input_map { key: "DELAY" value: "DELAY" } input_map { key: "WAIT" value: "WAIT" }
    output_map { key: "OUT" value: "value" } output_map { key: "IDX" value: "INDEX" } },
  { model_name: "times_ten" model_version: -1 input_map { key: "INPUT0" value: "value" } output_map { key: "OUTPUT0" value: "SCALED" } }
] }
`);
  const s2 = await startTestServer({ modelRepositories: [repo2.dir] });
  try {
    const cfg = (await request(`${s2.url}/v2/models/repeat_then_scale/config`)).json();
    assert.equal(cfg.model_transaction_policy.decoupled, true);
    const u32 = (xs: number[]) => new Uint8Array(new Uint32Array(xs).buffer);
    const i32 = (xs: number[]) => new Uint8Array(new Int32Array(xs).buffer);
    const got: [number, number][] = [];
    for await (const res of s2.server.inferStream({
      model: 'repeat_then_scale',
      inputs: [
        { name: 'IN', datatype: 'INT32', shape: [3], data: i32([4, 5, 6]) },
        { name: 'DELAY', datatype: 'UINT32', shape: [3], data: u32([10, 10, 10]) },
        { name: 'WAIT', datatype: 'UINT32', shape: [1], data: u32([0]) },
      ],
    })) {
      const by = new Map(res.outputs.map((t) => [t.name, t.data as Uint8Array]));
      got.push([new Int32Array(by.get('SCALED')!.slice().buffer)[0]!, new Uint32Array(by.get('INDEX')!.slice().buffer)[0]!]);
    }
    assert.deepEqual(got.sort((a, b) => a[1] - b[1]), [[40, 0], [50, 1], [60, 2]]);
    // HTTP /infer answers a decoupled ensemble as it answers any decoupled model.
    const r = await postJson(`${s2.url}/v2/models/repeat_then_scale/infer`, { inputs: [] });
    assert.equal(r.status, 501);
  } finally {
    await s2.close();
    await repo2.remove();
  }
});
