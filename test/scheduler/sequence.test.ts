import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { EXAMPLES, FIXTURES } from '../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../helpers/server.js';
import { postJson, request } from '../helpers/http.js';

// The sequence batcher through the real server, with the bundled sequence_accumulator (a running sum kept as
// implicit state), sending what Triton's sequence example clients send: sequence_id, sequence_start and
// sequence_end as request parameters.

let repo: { dir: string; remove(): Promise<void> };
let s: TestServer;
before(async () => {
  repo = await tempRepository([{ from: join(EXAMPLES, 'sequence_accumulator') }, { from: join(EXAMPLES, 'sequence_accumulator'), name: 'accumulator_oldest' },
    { from: join(EXAMPLES, 'sequence_accumulator'), name: 'accumulator_reaped' }, { from: join(FIXTURES, 'sequence', 'state_no_start') }]);
  // The same model under the oldest strategy, waiting up to 400 ms for a second sequence to batch with.
  const o = join(repo.dir, 'accumulator_oldest', 'config.pbtxt');
  await writeFile(o, (await readFile(o, 'utf8'))
    .replace('name: "sequence_accumulator"', 'name: "accumulator_oldest"')
    .replace('sequence_batching {', 'sequence_batching {\n  oldest { max_candidate_sequences: 4 preferred_batch_size: [ 2 ] max_queue_delay_microseconds: 400000 }'));
  // A short idle time so the reaping test does not wait 5 s; in a copy of its own, so that the other tests'
  // sequences, whose requests may be far apart on a busy machine, keep the model's 5 s.
  const p = join(repo.dir, 'accumulator_reaped', 'config.pbtxt');
  await writeFile(p, (await readFile(p, 'utf8'))
    .replace('name: "sequence_accumulator"', 'name: "accumulator_reaped"')
    .replace('max_sequence_idle_microseconds: 5000000', 'max_sequence_idle_microseconds: 300000'));
  s = await startTestServer({ modelRepositories: [repo.dir] });
});
after(async () => {
  await s.close();
  await repo.remove();
});

function send(id: number | string, value: number, flags: { start?: boolean; end?: boolean } = {}, model = 'sequence_accumulator') {
  return postJson(`${s.url}/v2/models/${model}/infer`, {
    inputs: [{ name: 'INPUT', shape: [1, 1], datatype: 'INT32', data: [value] }],
    parameters: { sequence_id: id, sequence_start: flags.start ?? false, sequence_end: flags.end ?? false },
  });
}

async function runSequence(id: number | string, values: number[]): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < values.length; i++) {
    const r = await send(id, values[i]!, { start: i === 0, end: i === values.length - 1 });
    assert.equal(r.status, 200, r.body.toString());
    out.push(r.json().outputs[0].data[0]);
  }
  return out;
}

const VALUES = [11, 7, 5, 3, 2, 0, 1];
const runningSums = (v: number[]) => v.map((_, i) => v.slice(0, i + 1).reduce((a, b) => a + b, 0));

test('two interleaved sequences each keep their own running sum (uint64 and string ids)', async () => {
  const [a, b] = await Promise.all([runSequence(1000, VALUES), runSequence('seq-b', VALUES.map((v) => -v))]);
  assert.deepEqual(a, runningSums(VALUES));
  assert.deepEqual(b, runningSums(VALUES.map((v) => -v)));
  // Control and state tensors are the batcher's business: the client sees only OUTPUT.
  const r = await send(7, 1, { start: true, end: true });
  assert.deepEqual(r.json().outputs.map((o: any) => o.name), ['OUTPUT']);
});

test('uint64 ids above 2^53 over HTTP JSON stay exact: two ids one apart are two sequences', async () => {
  // As doubles both ids read 2^63: only an exact reading of the JSON text tells them apart.
  const ids = ['9223372036854775809', '9223372036854775810'];
  const step = (id: string, value: number, start: boolean, end: boolean) => request(`${s.url}/v2/models/sequence_accumulator/infer`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: `{"inputs":[{"name":"INPUT","shape":[1,1],"datatype":"INT32","data":[${value}]}],"parameters":{"sequence_id":${id},"sequence_start":${start},"sequence_end":${end}}}`,
  }).then((r) => { assert.equal(r.status, 200, r.body.toString()); return r.json().outputs[0].data[0] as number; });
  assert.equal(await step(ids[0]!, 5, true, false), 5);
  assert.equal(await step(ids[1]!, 100, true, false), 100);
  assert.equal(await step(ids[0]!, 1, false, true), 6);
  assert.equal(await step(ids[1]!, 1, false, true), 101);
  const tooBig = await request(`${s.url}/v2/models/sequence_accumulator/infer`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: '{"inputs":[{"name":"INPUT","shape":[1,1],"datatype":"INT32","data":[1]}],"parameters":{"sequence_id":18446744073709551616,"sequence_start":true}}',
  });
  assert.equal(tooBig.status, 400);
  assert.match(tooBig.body.toString(), /unsigned 64-bit/);
});

test('a START on a live id starts over from a fresh state', async () => {
  assert.deepEqual(await runSequence(42, [5, 5]).then(() => runSequence(42, [1, 2])), [1, 3]);
  assert.equal((await send(43, 10, { start: true })).json().outputs[0].data[0], 10);
  assert.equal((await send(43, 10, { start: true })).json().outputs[0].data[0], 10);
  assert.equal((await send(43, 1, { end: true })).json().outputs[0].data[0], 11);
});

test('a START on a live id gives a model with no START control a fresh state', async () => {
  // sequence_accumulator resets its sum itself on START; this model only adds, so the state it is handed
  // on START is all that can start it over.
  const add = (value: number, start: boolean) => postJson(`${s.url}/v2/models/state_no_start/infer`, {
    inputs: [{ name: 'INPUT', shape: [1, 1], datatype: 'INT32', data: [value] }],
    parameters: { sequence_id: 77, sequence_start: start },
  }).then((r) => { assert.equal(r.status, 200, r.body.toString()); return r.json().outputs[0].data[0] as number; });
  assert.deepEqual([await add(5, true), await add(3, false)], [5, 8]);
  assert.deepEqual([await add(1, true), await add(2, false)], [1, 3]);
});

test('Triton\'s errors: no correlation id, no START, after END, batch size above 1', async () => {
  const none = await postJson(`${s.url}/v2/models/sequence_accumulator/infer`, { inputs: [{ name: 'INPUT', shape: [1, 1], datatype: 'INT32', data: [1] }] });
  assert.equal(none.status, 400);
  assert.match(none.json().error, /must specify a non-zero or non-empty correlation ID/);
  const noStart = await send(555, 1);
  assert.equal(noStart.status, 400);
  assert.match(noStart.json().error, /must specify the START flag on the first request of the sequence/);
  await runSequence(556, [1, 2]);
  assert.match((await send(556, 3)).json().error, /START flag/);
  const batch2 = await postJson(`${s.url}/v2/models/sequence_accumulator/infer`, {
    inputs: [{ name: 'INPUT', shape: [2, 1], datatype: 'INT32', data: [1, 2] }], parameters: { sequence_id: 9, sequence_start: true },
  });
  assert.equal(batch2.status, 400);
  assert.match(batch2.json().error, /batch-size 1/);
});

test('an idle sequence is ended after max_sequence_idle_microseconds', async () => {
  assert.equal((await send(777, 1, { start: true }, 'accumulator_reaped')).status, 200);
  // Idle time is 0.3 s in this test's copy of the model; wait well past it.
  await sleep(1200);
  const r = await send(777, 1, {}, 'accumulator_reaped');
  assert.equal(r.status, 400);
  assert.match(r.json().error, /START flag/);
});

test('concurrent sequences are batched: fewer executions than requests', async () => {
  const stats = async () => (await request(`${s.url}/v2/models/sequence_accumulator/stats`)).json().model_stats[0];
  const before = await stats();
  const ids = Array.from({ length: 8 }, (_, i) => 2000 + i);
  const results = await Promise.all(ids.map((id) => runSequence(id, VALUES.map((v) => v + id))));
  ids.forEach((id, i) => assert.deepEqual(results[i], runningSums(VALUES.map((v) => v + id))));
  const after = await stats();
  const requests = after.inference_count - before.inference_count;
  const executions = after.execution_count - before.execution_count;
  assert.equal(requests, 8 * VALUES.length);
  assert.ok(executions < requests, `${executions} executions for ${requests} requests`);
  assert.ok(after.batch_stats.some((b: any) => b.batch_size > 1));
});

test('simple_sequence answers what Triton\'s sequence example clients expect', async () => {
  const ex = await startTestServer({ modelRepositories: [join(EXAMPLES, 'simple_sequence')].map((p) => join(p, '..')) });
  try {
    const send1 = (id: number, value: number, start: boolean, end: boolean) => postJson(`${ex.url}/v2/models/simple_sequence/infer`, {
      inputs: [{ name: 'INPUT', shape: [1, 1], datatype: 'INT32', data: [value] }],
      parameters: { sequence_id: id, sequence_start: start, sequence_end: end },
    }).then((r) => {
      assert.equal(r.status, 200, r.body.toString());
      return r.json().outputs[0].data[0] as number;
    });
    // simple_http_sequence_sync_infer_client.py: [0] + values on id 1000, [100] - values on id 1001, interleaved.
    const seq0 = [0, ...VALUES];
    const seq1 = [100, ...VALUES.map((v) => 0 - v || 0)];
    const out0: number[] = [];
    const out1: number[] = [];
    for (let i = 0; i < seq0.length; i++) {
      const last = i === seq0.length - 1;
      out0.push(await send1(1000, seq0[i]!, i === 0, last));
      out1.push(await send1(1001, seq1[i]!, i === 0, last));
    }
    assert.deepEqual(out0, [1, ...VALUES]);
    assert.deepEqual(out1, [101, ...VALUES.map((v) => 0 - v || 0)]);
  } finally {
    await ex.close();
  }
});

test('oldest strategy: a short batch waits max_queue_delay_microseconds for more sequences, then goes without them', async () => {
  const url = `${s.url}/v2/models/accumulator_oldest/infer`;
  const step = (id: number, value: number) => postJson(url, {
    inputs: [{ name: 'INPUT', shape: [1, 1], datatype: 'INT32', data: [value] }], parameters: { sequence_id: id, sequence_start: true, sequence_end: true },
  }).then((r) => { assert.equal(r.status, 200, r.body.toString()); return r.json().outputs[0].data[0] as number; });
  const first = step(901, 1);
  await sleep(100);
  // The second sequence arrives inside the first one's delay: both run as one batch of the preferred size.
  assert.deepEqual(await Promise.all([first, step(902, 2)]), [1, 2]);
  let st = (await request(`${s.url}/v2/models/accumulator_oldest/stats`)).json().model_stats[0];
  assert.deepEqual(st.batch_stats.map((b: any) => [b.batch_size, b.compute_infer.count]), [[2, 1]]);
  // Alone, a request waits the whole delay (a lower bound only) and then runs as a batch of one.
  const t1 = performance.now();
  assert.equal(await step(903, 7), 7);
  const waited = performance.now() - t1;
  assert.ok(waited >= 360, `answered after ${waited.toFixed(0)} ms, before the 400 ms queue delay`);
  st = (await request(`${s.url}/v2/models/accumulator_oldest/stats`)).json().model_stats[0];
  assert.deepEqual(st.batch_stats.map((b: any) => [b.batch_size, b.compute_infer.count]).sort(), [[1, 1], [2, 1]]);
});
