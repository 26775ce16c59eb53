import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { EXAMPLES, FIXTURES } from '../../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../../helpers/server.js';
import { binaryBody, postJson, request, splitBinary } from '../../helpers/http.js';

// Triton's extensions beyond plain infer: classification, logging, statistics; cancellation on disconnect; big
// JSON bodies parsed off the event loop.

let repo: { dir: string; remove(): Promise<void> };
let s: TestServer;
before(async () => {
  repo = await tempRepository([
    { from: join(EXAMPLES, 'digits') }, { from: join(EXAMPLES, 'simple') },
    { from: join(FIXTURES, 'slow', 'slow_fp32') }, { from: join(FIXTURES, 'big', 'identity_fp32_1m') },
  ]);
  s = await startTestServer({ modelRepositories: [repo.dir] });
});
after(async () => {
  await s.close();
  await repo.remove();
});

test('GET /v2 lists the extensions Nereid has, in the order Triton lists them (sequence and trace included)', async () => {
  const meta = (await request(`${s.url}/v2`)).json();
  assert.deepEqual(meta.extensions, [
    'classification', 'sequence', 'model_repository', 'model_repository(unload_dependents)', 'schedule_policy',
    'model_configuration', 'system_shared_memory', 'cuda_shared_memory', 'binary_tensor_data', 'parameters', 'statistics',
    'trace', 'logging',
  ]);
});

const LABELS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];
const image = (k: number) => Array.from({ length: 64 }, (_, i) => ((i * (k + 3)) % 17));

test('classification: class_count gives "score:index:label" per batch item, best first, JSON and binary', async () => {
  const data = [...image(1), ...image(2)];
  const probs = (await postJson(`${s.url}/v2/models/digits/versions/2/infer`, { inputs: [{ name: 'INPUT', shape: [2, 64], datatype: 'FP32', data }] })).json().outputs[0].data as number[];
  const r = await postJson(`${s.url}/v2/models/digits/versions/2/infer`, {
    inputs: [{ name: 'INPUT', shape: [2, 64], datatype: 'FP32', data }],
    outputs: [{ name: 'PROBABILITIES', parameters: { classification: 3 } }],
  });
  assert.equal(r.status, 200, r.body.toString());
  const out = r.json().outputs[0];
  assert.equal(out.datatype, 'BYTES');
  assert.deepEqual(out.shape, [2, 3]);
  for (let b = 0; b < 2; b++) {
    const row = probs.slice(b * 10, b * 10 + 10);
    const order = row.map((p, i) => [p, i] as const).sort((x, y) => y[0] - x[0]).slice(0, 3);
    const got = (out.data as string[]).slice(b * 3, b * 3 + 3);
    got.forEach((entry, j) => {
      const [score, index, label] = entry.split(':');
      assert.equal(Number(index), order[j]![1]);
      assert.equal(label, LABELS[order[j]![1]]);
      assert.match(score!, /^\d+\.\d{6}$/);
      assert.ok(Math.abs(Number(score) - order[j]![0]) < 1e-6);
    });
  }
  const bin = await request(`${s.url}/v2/models/digits/versions/1/infer`, binaryBody({
    inputs: [{ name: 'INPUT', shape: [1, 64], datatype: 'FP32', data: image(3) }],
    outputs: [{ name: 'PROBABILITIES', parameters: { classification: 2, binary_data: true } }],
  }, []));
  assert.equal(bin.status, 200, bin.body.toString());
  const { header, blobs } = splitBinary(bin);
  assert.equal(header.model_version, '1');
  assert.deepEqual(header.outputs[0].shape, [1, 2]);
  // BYTES in binary: 4-byte little-endian length, then the bytes.
  const blob = blobs.get('PROBABILITIES')!;
  const first = blob.subarray(4, 4 + blob.readUInt32LE(0)).toString();
  assert.match(first, /^\d+\.\d{6}:\d:[a-z]+$/);
});

test('logging: GET shows Triton\'s keys; POST changes them and rejects bad values', async () => {
  const g = await request(`${s.url}/v2/logging`);
  assert.equal(g.status, 200);
  assert.deepEqual(Object.keys(g.json()).sort(), ['log_error', 'log_file', 'log_format', 'log_info', 'log_verbose_level', 'log_warning']);
  const p = await postJson(`${s.url}/v2/logging`, { log_verbose_level: 2 });
  assert.equal(p.status, 200);
  assert.equal(p.json().log_verbose_level, 2);
  // A value of the wrong JSON type, or a body that is not JSON, is 400 with Triton's words (Triton answers 500,
  // which docs/deviations.md lists among the deliberate differences); an unknown format 503 as in Triton.
  const bad = await postJson(`${s.url}/v2/logging`, { log_verbose_level: 'loud' });
  assert.equal(bad.status, 400);
  assert.match(bad.json().error, /attempt to access JSON non-unsigned-integer as unsigned-integer/);
  assert.equal((await request(`${s.url}/v2/logging`, { method: 'POST', body: '{"log_info": tru' })).status, 400);
  const format = await postJson(`${s.url}/v2/logging`, { log_format: 'json' });
  assert.deepEqual([format.status, format.json()], [503, { error: 'invalid argument for --log_format, got: json' }]);
  assert.equal((await postJson(`${s.url}/v2/logging`, { log_file: '/elsewhere.log' })).status, 501);
  assert.equal((await request(`${s.url}/v2/logging`)).json().log_verbose_level, 2, 'rejected updates change nothing');
  assert.equal((await postJson(`${s.url}/v2/logging`, { log_verbose_level: 0 })).status, 200);
});

test('trace settings answer with the setting in force; the server reports the trace extension', async () => {
  const global = await request(`${s.url}/v2/trace/setting`);
  assert.equal(global.status, 200);
  assert.deepEqual(global.json(), { trace_level: ['OFF'], trace_rate: '1000', trace_count: '-1', log_frequency: '0', trace_file: '', trace_mode: 'triton' });
  const model = await postJson(`${s.url}/v2/models/simple/trace/setting`, { trace_rate: '5' });
  assert.deepEqual([model.status, model.json().trace_rate], [200, '5']);
  assert.ok((await request(`${s.url}/v2`)).json().extensions.includes('trace'));
});

test('statistics: Triton\'s shape, counts after requests, all models and one version', async () => {
  const body = { inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: new Array(16).fill(1) }, { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: new Array(16).fill(1) }] };
  for (let i = 0; i < 3; i++) assert.equal((await postJson(`${s.url}/v2/models/simple/infer`, body)).status, 200);
  const one = (await request(`${s.url}/v2/models/simple/versions/1/stats`)).json();
  const m = one.model_stats[0];
  assert.equal(m.name, 'simple');
  assert.equal(m.version, '1');
  assert.ok(m.inference_count >= 3 && m.execution_count >= 3);
  for (const k of ['success', 'fail', 'queue', 'compute_input', 'compute_infer', 'compute_output', 'cache_hit', 'cache_miss']) {
    assert.ok(typeof m.inference_stats[k].count === 'number' && typeof m.inference_stats[k].ns === 'number', k);
  }
  assert.ok(m.batch_stats.some((b: any) => b.batch_size === 1 && b.compute_infer.count >= 3));
  const all = (await request(`${s.url}/v2/models/stats`)).json();
  assert.ok(all.model_stats.some((x: any) => x.name === 'digits' && x.version === '2'));
  assert.equal((await request(`${s.url}/v2/models/nowhere/stats`)).status, 400);
});

test('a client that disconnects while queued cancels its request: it never executes', async () => {
  const stats = async () => (await request(`${s.url}/v2/models/slow_fp32/stats`)).json().model_stats[0];
  const before = (await stats()).execution_count;
  const body = JSON.stringify({ inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'FP32', data: new Array(16).fill(1) }] });
  // One request occupies the single instance; three more queue behind it and then go away.
  const running = postJson(`${s.url}/v2/models/slow_fp32/infer`, JSON.parse(body));
  const controllers = [0, 1, 2].map(() => new AbortController());
  const queued = controllers.map((c) => fetch(`${s.url}/v2/models/slow_fp32/infer`, { method: 'POST', body, signal: c.signal }).catch(() => 'aborted'));
  await new Promise((r) => setTimeout(r, 30));
  for (const c of controllers) c.abort();
  assert.deepEqual(await Promise.all(queued), ['aborted', 'aborted', 'aborted']);
  assert.equal((await running).status, 200);
  // Let anything that was (wrongly) still queued run before counting.
  assert.equal((await postJson(`${s.url}/v2/models/slow_fp32/infer`, JSON.parse(body))).status, 200);
  const after = await stats();
  assert.equal(after.execution_count - before, 2, 'only the first and the last request executed');
});

test('a large JSON body is parsed off the event loop: other clients keep being served', async () => {
  const n = 262144;
  const big = JSON.stringify({ inputs: [{ name: 'INPUT0', shape: [n], datatype: 'FP32', data: Array.from({ length: n }, (_, i) => (i % 1000) / 7) }] });
  const small = { inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: new Array(16).fill(2) }, { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: new Array(16).fill(1) }] };
  // The server runs in this process, so its event loop is this one: every JSON.parse it does on the loop goes
  // through this thread's JSON object, and a worker thread has a JSON of its own. Watching the text lengths
  // parsed here shows where the big bodies went, whatever the machine's load.
  const parsedHere: number[] = [];
  const parse = JSON.parse;
  JSON.parse = (text: string, reviver?: Parameters<typeof JSON.parse>[1]) => {
    parsedHere.push(text.length);
    return parse(text, reviver);
  };
  try {
    const bigs = Array.from({ length: 4 }, () => request(`${s.url}/v2/models/identity_fp32_1m/infer`, { body: big, headers: { 'content-type': 'application/json' } }));
    let bigDone = false;
    const allBig = Promise.all(bigs).then((rs) => ((bigDone = true), rs));
    let smallBeforeBig = 0;
    for (;;) {
      const r = await postJson(`${s.url}/v2/models/simple/infer`, small);
      assert.equal(r.status, 200);
      if (bigDone) break;
      smallBeforeBig++;
    }
    for (const r of await allBig) assert.equal(r.status, 200);
    assert.ok(smallBeforeBig > 0, 'small requests were answered while the big ones were in progress');
  } finally {
    JSON.parse = parse;
  }
  const largest = Math.max(...parsedHere);
  assert.ok(largest < big.length / 4, `a text of ${largest} characters (the big bodies have ${big.length}) was parsed on the event loop`);
});
