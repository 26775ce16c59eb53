import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EXAMPLES } from '../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../helpers/server.js';
import { postJson } from '../helpers/http.js';
import { until } from '../helpers/until.js';
import { parseExposition } from '../frontends/metrics/scrape.js';

// What an ensemble takes from its composing models, as Triton's ensemble scheduler does: batch dimensions added
// or dropped between models that batch and models that do not (core's EnsembleContext::ReshapeTensorDims; Triton's
// QA generators build non-batching ensembles over nop steps with max_batch_size 1024), the labels of the output
// an ensemble output comes from, the decoupled flag that rules out the response cache, and failures counted
// with reason OTHER, twice per failed request, as Triton's metrics documentation describes.

const io = (kind: string, entries: [string, string, string, string?][]): string =>
  `${kind} [ ${entries.map(([n, t, d, extra]) => `{ name: "${n}" data_type: ${t} dims: ${d} ${extra ?? ''} }`).join(', ')} ]\n`;
const identity = (maxBatch: number, ins: [string, string, string][], outs: [string, string, string, string?][]) =>
  `backend: "identity"\nmax_batch_size: ${maxBatch}\n${io('input', ins)}${io('output', outs)}`;
const step = (model: string, ins: Record<string, string>, outs: Record<string, string>) =>
  `{ model_name: "${model}" model_version: -1 ${Object.entries(ins).map(([k, v]) => `input_map { key: "${k}" value: "${v}" }`).join(' ')} ${Object.entries(outs).map(([k, v]) => `output_map { key: "${k}" value: "${v}" }`).join(' ')} }`;
const ensemble = (maxBatch: number, ins: [string, string, string][], outs: [string, string, string][], steps: string[], extra = '') =>
  `platform: "ensemble"\nmax_batch_size: ${maxBatch}\n${extra}\n${io('input', ins)}${io('output', outs)}ensemble_scheduling { step [ ${steps.join(', ')} ] }\n`;

const F16 = (name: string): [string, string, string] => [name, 'TYPE_FP32', '[ 16 ]'];
const NOP_MAP = (a: string, b: string) => ({ INPUT0: a, INPUT1: b });

const MODELS: Record<string, string> = {
  // qa/common/gen_ensemble_model_utils.py create_nop_modelconfig: variable-size nop steps that batch up to 1024.
  'nop_TYPE_FP32_-1': identity(1024, [['INPUT0', 'TYPE_FP32', '[ -1 ]'], ['INPUT1', 'TYPE_FP32', '[ -1 ]']],
    [['OUTPUT0', 'TYPE_FP32', '[ -1 ]'], ['OUTPUT1', 'TYPE_FP32', '[ -1 ]']]),
  nop_nobatch_16: identity(0, [F16('INPUT0')], [F16('OUTPUT0')]),
  scores: identity(8, [['INPUT0', 'TYPE_FP32', '[ 4 ]']], [['OUTPUT0', 'TYPE_FP32', '[ 4 ]', 'label_filename: "labels.txt"']]),
  // The "sequence" ensemble of the QA generators, nobatch variant: two nop steps in a row.
  sequence_nobatch: ensemble(0, [F16('INPUT0'), F16('INPUT1')], [F16('OUTPUT0'), F16('OUTPUT1')], [
    step('nop_TYPE_FP32_-1', NOP_MAP('INPUT0', 'INPUT1'), { OUTPUT0: 'same0', OUTPUT1: 'same1' }),
    step('nop_TYPE_FP32_-1', NOP_MAP('same0', 'same1'), { OUTPUT0: 'OUTPUT0', OUTPUT1: 'OUTPUT1' })]),
  batch_over_nobatch: ensemble(8, [F16('X')], [F16('Y')], [step('nop_nobatch_16', { INPUT0: 'X' }, { OUTPUT0: 'Y' })]),
  classify: ensemble(8, [['X', 'TYPE_FP32', '[ 4 ]']], [['Y', 'TYPE_FP32', '[ 4 ]']], [step('scores', { INPUT0: 'X' }, { OUTPUT0: 'Y' })]),
  cached_decoupled: ensemble(0, [['IN', 'TYPE_INT32', '[ -1 ]'], ['DELAY', 'TYPE_UINT32', '[ -1 ]'], ['WAIT', 'TYPE_UINT32', '[ 1 ]']],
    [['OUT', 'TYPE_INT32', '[ 1 ]']], [step('repeat_int32', { IN: 'IN', DELAY: 'DELAY', WAIT: 'WAIT' }, { OUT: 'OUT' })], 'response_cache { enable: true }'),
  // A batching ensemble over the decoupled, non-batching repeat model: streamed through the same mapping.
  repeat_batched: ensemble(4, [['IN', 'TYPE_INT32', '[ -1 ]'], ['DELAY', 'TYPE_UINT32', '[ -1 ]'], ['WAIT', 'TYPE_UINT32', '[ 1 ]']],
    [['OUT', 'TYPE_INT32', '[ 1 ]']], [step('repeat_int32', { IN: 'IN', DELAY: 'DELAY', WAIT: 'WAIT' }, { OUT: 'OUT' })]),
  failing: ensemble(0, [['X', 'TYPE_FP32', '[ -1 ]']], [['Y', 'TYPE_FP32', '[ -1 ]']], [step('nop_nobatch_16', { INPUT0: 'X' }, { OUTPUT0: 'Y' })]),
};

const floats = (n: number, f: (i: number) => number) => Array.from({ length: n }, (_, i) => f(i));

let repo: { dir: string; remove(): Promise<void> };
let s: TestServer;

before(async () => {
  repo = await tempRepository([{ from: join(EXAMPLES, 'repeat_int32') }]);
  for (const [name, text] of Object.entries(MODELS)) {
    await mkdir(join(repo.dir, name, '1'), { recursive: true });
    await writeFile(join(repo.dir, name, 'config.pbtxt'), `name: "${name}"\n${text}`);
  }
  await writeFile(join(repo.dir, 'scores', 'labels.txt'), 'label0\nlabel1\nlabel2\nlabel3\n');
  s = await startTestServer({ modelRepositories: [repo.dir], exitOnError: false, strictReadiness: false, responseCache: { local: { size: String(1 << 20) } }, metrics: { cpu: false } });
});
after(async () => {
  await s.close();
  await repo.remove();
});

test('a non-batching ensemble over nop steps that batch: a batch dimension of 1 is added for the steps and dropped for the response', async () => {
  const a = floats(16, (i) => i);
  const b = floats(16, (i) => 100 + i);
  const r = await postJson(`${s.url}/v2/models/sequence_nobatch/infer`, {
    inputs: [{ name: 'INPUT0', shape: [16], datatype: 'FP32', data: a }, { name: 'INPUT1', shape: [16], datatype: 'FP32', data: b }],
  });
  assert.equal(r.status, 200, r.body.toString());
  const out = new Map<string, any>(r.json().outputs.map((o: any) => [o.name, o]));
  assert.deepEqual(out.get('OUTPUT0').shape, [16]);
  assert.deepEqual(out.get('OUTPUT0').data, a);
  assert.deepEqual(out.get('OUTPUT1').shape, [16]);
  assert.deepEqual(out.get('OUTPUT1').data, b);
});

test('a batching ensemble over a non-batching step: a batch of one loses its batch dimension on the way in and gets it back', async () => {
  const x = floats(16, (i) => i / 2);
  const one = await postJson(`${s.url}/v2/models/batch_over_nobatch/infer`, { inputs: [{ name: 'X', shape: [1, 16], datatype: 'FP32', data: x }] });
  assert.equal(one.status, 200, one.body.toString());
  assert.deepEqual(one.json().outputs[0].shape, [1, 16]);
  assert.deepEqual(one.json().outputs[0].data, x);
  // A batch of two cannot be one request of a model that does not batch: the step refuses the shape.
  const two = await postJson(`${s.url}/v2/models/batch_over_nobatch/infer`, { inputs: [{ name: 'X', shape: [2, 16], datatype: 'FP32', data: [...x, ...x] }] });
  assert.equal(two.status, 400);
  assert.match(two.json().error, /^in ensemble 'batch_over_nobatch', step 'nop_nobatch_16': unexpected shape for input 'INPUT0' for model 'nop_nobatch_16'/);
});

test('a streaming ensemble maps each response the same way: a batch of one into the decoupled step, [1, 1] out of it', async () => {
  const bytes = (a: ArrayBufferView) => new Uint8Array(a.buffer);
  const got: { shape: readonly number[]; value: number }[] = [];
  for await (const res of s.server.inferStream({
    model: 'repeat_batched',
    inputs: [
      { name: 'IN', datatype: 'INT32', shape: [1, 3], data: bytes(new Int32Array([4, 5, 6])) },
      { name: 'DELAY', datatype: 'UINT32', shape: [1, 3], data: bytes(new Uint32Array([0, 0, 0])) },
      { name: 'WAIT', datatype: 'UINT32', shape: [1, 1], data: bytes(new Uint32Array([0])) },
    ],
  })) {
    const out = res.outputs.find((t) => t.name === 'OUT')!;
    got.push({ shape: out.shape, value: new Int32Array((out.data as Uint8Array).slice().buffer)[0]! });
  }
  assert.deepEqual(got.sort((a, b) => a.value - b.value), [4, 5, 6].map((value) => ({ shape: [1, 1], value })));
});

test('classification through an ensemble uses the labels of the composing output the ensemble output comes from', async () => {
  const r = await postJson(`${s.url}/v2/models/classify/infer`, {
    inputs: [{ name: 'X', shape: [1, 4], datatype: 'FP32', data: [0.1, 0.9, 0.3, 0.2] }],
    outputs: [{ name: 'Y', parameters: { classification: 2 } }],
  });
  assert.equal(r.status, 200, r.body.toString());
  assert.deepEqual(r.json().outputs[0].data, ['0.900000:1:label1', '0.300000:2:label2']);
});

test('an ensemble with the response cache whose step is decoupled does not load, with Triton\'s words', async () => {
  const index = (await postJson(`${s.url}/v2/repository/index`, {})).json() as any[];
  const entry = index.find((m) => m.name === 'cached_decoupled');
  assert.equal(entry.state, 'UNAVAILABLE');
  assert.match(entry.reason, /Response Cache does not currently support model cached_decoupled with 'decoupled' transaction policy\. Please disable the response cache\./);
});

test('a failed ensemble request counts as two failures with reason OTHER, as Triton\'s metrics documentation gives them', async () => {
  const scrape = async () => parseExposition(await s.server.metricsText());
  const reasons = (m: Awaited<ReturnType<typeof scrape>>, model: string) =>
    Object.fromEntries(m.find('nv_inference_request_failure', { model, version: '1' }).map((x) => [x.labels['reason'], x.value]));
  const before = await scrape();
  assert.deepEqual(reasons(before, 'failing'), { REJECTED: 0, CANCELED: 0, BACKEND: 0, OTHER: 0 });
  const r = await postJson(`${s.url}/v2/models/failing/infer`, { inputs: [{ name: 'X', shape: [8], datatype: 'FP32', data: floats(8, (i) => i) }] });
  assert.equal(r.status, 400, r.body.toString());
  const after = await scrape();
  assert.deepEqual(reasons(after, 'failing'), { REJECTED: 0, CANCELED: 0, BACKEND: 0, OTHER: 2 });
  assert.equal(after.value('nv_inference_request_success', { model: 'failing', version: '1' }), 0);
});

test('a cancelled streaming ensemble request counts as two failures with reason OTHER, not CANCELED', async () => {
  const reasons = async (model: string) => Object.fromEntries(parseExposition(await s.server.metricsText())
    .find('nv_inference_request_failure', { model, version: '1' }).map((x) => [x.labels['reason'], x.value]));
  const bytes = (a: ArrayBufferView) => new Uint8Array(a.buffer);
  const abort = new AbortController();
  const responses: number[] = [];
  // The second response is due a minute later: the request is cancelled once the first has arrived.
  await assert.rejects(async () => {
    for await (const res of s.server.inferStream({
      model: 'repeat_batched', signal: abort.signal,
      inputs: [
        { name: 'IN', datatype: 'INT32', shape: [1, 2], data: bytes(new Int32Array([7, 8])) },
        { name: 'DELAY', datatype: 'UINT32', shape: [1, 2], data: bytes(new Uint32Array([0, 60_000])) },
        { name: 'WAIT', datatype: 'UINT32', shape: [1, 1], data: bytes(new Uint32Array([0])) },
      ],
    })) {
      responses.push(res.outputs.length);
      abort.abort();
    }
  }, (e: any) => e.code === 'CANCELLED');
  assert.deepEqual(responses, [1]);
  await until(async () => (await reasons('repeat_batched')).OTHER === 2, 'the ensemble counts its cancelled request');
  assert.deepEqual(await reasons('repeat_batched'), { REJECTED: 0, CANCELED: 0, BACKEND: 0, OTHER: 2 });
});
