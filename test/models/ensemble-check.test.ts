import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EXAMPLES } from '../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../helpers/server.js';
import { postJson } from '../helpers/http.js';

// The load-time checks of an ensemble against its composing models, with Triton's messages (core's
// ensemble_utils.cc, as qa/L0_ensemble* load broken ensembles): inconsistent types and shapes, unmapped inputs,
// a step fed by two decoupled models; and a batching ensemble over a non-batching model, which Triton accepts.

const io = (kind: string, entries: [string, string, string][]): string =>
  `${kind} [ ${entries.map(([n, t, d]) => `{ name: "${n}" data_type: ${t} dims: ${d} }`).join(', ')} ]\n`;
const identity = (maxBatch: number, ins: [string, string, string][], outs: [string, string, string][]) =>
  `backend: "identity"\nmax_batch_size: ${maxBatch}\n${io('input', ins)}${io('output', outs)}`;
const step = (model: string, ins: Record<string, string>, outs: Record<string, string>) =>
  `{ model_name: "${model}" model_version: -1 ${Object.entries(ins).map(([k, v]) => `input_map { key: "${k}" value: "${v}" }`).join(' ')} ${Object.entries(outs).map(([k, v]) => `output_map { key: "${k}" value: "${v}" }`).join(' ')} }`;
const ensemble = (maxBatch: number, ins: [string, string, string][], outs: [string, string, string][], steps: string[]) =>
  `platform: "ensemble"\nmax_batch_size: ${maxBatch}\n${io('input', ins)}${io('output', outs)}ensemble_scheduling { step [ ${steps.join(', ')} ] }\n`;

const F4: [string, string, string] = ['INPUT0', 'TYPE_FP32', '[ 4 ]'];
const O4: [string, string, string] = ['OUTPUT0', 'TYPE_FP32', '[ 4 ]'];
const REPEAT_IN: [string, string, string][] = [['IN', 'TYPE_INT32', '[ -1 ]'], ['DELAY', 'TYPE_UINT32', '[ -1 ]'], ['WAIT', 'TYPE_UINT32', '[ 1 ]']];
const REPEAT_MAP = { IN: 'IN', DELAY: 'DELAY', WAIT: 'WAIT' };

const MODELS: Record<string, string> = {
  id_f32_4: identity(0, [F4], [O4]),
  id_f32_8: identity(0, [['INPUT0', 'TYPE_FP32', '[ 8 ]']], [['OUTPUT0', 'TYPE_FP32', '[ 8 ]']]),
  id_i32_4: identity(0, [['INPUT0', 'TYPE_INT32', '[ 4 ]']], [['OUTPUT0', 'TYPE_INT32', '[ 4 ]']]),
  id2_f32_4: identity(0, [F4, ['INPUT1', 'TYPE_FP32', '[ 4 ]']], [O4, ['OUTPUT1', 'TYPE_FP32', '[ 4 ]']]),
  id2_i32_1: identity(0, [['INPUT0', 'TYPE_INT32', '[ 1 ]'], ['INPUT1', 'TYPE_INT32', '[ 1 ]']], [['OUTPUT0', 'TYPE_INT32', '[ 1 ]'], ['OUTPUT1', 'TYPE_INT32', '[ 1 ]']]),
  id_i32_1: identity(0, [['INPUT0', 'TYPE_INT32', '[ 1 ]']], [['OUTPUT0', 'TYPE_INT32', '[ 1 ]']]),
  id_rows_f32_4: identity(0, [['INPUT0', 'TYPE_FP32', '[ -1, 4 ]']], [['OUTPUT0', 'TYPE_FP32', '[ -1, 4 ]']]),
  bad_shape: ensemble(0, [['X', 'TYPE_FP32', '[ 4 ]']], [['Y', 'TYPE_FP32', '[ 8 ]']],
    [step('id_f32_4', { INPUT0: 'X' }, { OUTPUT0: 't' }), step('id_f32_8', { INPUT0: 't' }, { OUTPUT0: 'Y' })]),
  bad_type: ensemble(0, [['X', 'TYPE_FP32', '[ 4 ]']], [['Y', 'TYPE_INT32', '[ 4 ]']], [step('id_i32_4', { INPUT0: 'X' }, { OUTPUT0: 'Y' })]),
  unmapped: ensemble(0, [['X', 'TYPE_FP32', '[ 4 ]']], [['Y', 'TYPE_FP32', '[ 4 ]']], [step('id2_f32_4', { INPUT0: 'X' }, { OUTPUT0: 'Y' })]),
  no_such_input: ensemble(0, [['X', 'TYPE_FP32', '[ 4 ]']], [['Y', 'TYPE_FP32', '[ 4 ]']], [step('id_f32_4', { NOPE: 'X' }, { OUTPUT0: 'Y' })]),
  two_decoupled: ensemble(0, REPEAT_IN, [['Y', 'TYPE_INT32', '[ 1 ]']], [
    step('repeat_int32', REPEAT_MAP, { OUT: 'a' }), step('repeat_int32', REPEAT_MAP, { OUT: 'b' }),
    step('id2_i32_1', { INPUT0: 'a', INPUT1: 'b' }, { OUTPUT0: 'c' }), step('id_i32_1', { INPUT0: 'c' }, { OUTPUT0: 'Y' })]),
  batched_over_plain: ensemble(8, [['X', 'TYPE_FP32', '[ 4 ]']], [['Y', 'TYPE_FP32', '[ 4 ]']], [step('id_rows_f32_4', { INPUT0: 'X' }, { OUTPUT0: 'Y' })]),
};

let repo: { dir: string; remove(): Promise<void> };
let s: TestServer;
let reasons: Map<string, { state: string; reason: string }>;

before(async () => {
  repo = await tempRepository([{ from: join(EXAMPLES, 'repeat_int32') }]);
  for (const [name, text] of Object.entries(MODELS)) {
    await mkdir(join(repo.dir, name, '1'), { recursive: true });
    await writeFile(join(repo.dir, name, 'config.pbtxt'), `name: "${name}"\n${text}`);
  }
  s = await startTestServer({ modelRepositories: [repo.dir], exitOnError: false, strictReadiness: false });
  const index = (await postJson(`${s.url}/v2/repository/index`, {})).json() as any[];
  reasons = new Map(index.map((m) => [m.name, { state: m.state, reason: m.reason }]));
});
after(async () => {
  await s.close();
  await repo.remove();
});

function refused(name: string, message: string): void {
  const m = reasons.get(name)!;
  assert.equal(m.state, 'UNAVAILABLE', name);
  assert.equal(m.reason, message);
}

test('an ensemble tensor read with another shape than it was written with is refused at load', () => {
  refused('bad_shape', 'in ensemble bad_shape, ensemble tensor t: inconsistent shape: [4] is inferred from model id_f32_4 while [8] is inferred from model id_f32_8');
});

test('an ensemble tensor read with another type than the ensemble declares is refused at load', () => {
  refused('bad_type', 'in ensemble bad_type, ensemble tensor X: inconsistent data type: TYPE_FP32 is inferred from model bad_type while TYPE_INT32 is inferred from model id_i32_4');
});

test('a step input left unmapped, or a map to an input the model lacks, is refused at load', () => {
  refused('unmapped', 'in ensemble unmapped, input INPUT1 in model id2_f32_4 is not mapped to any ensemble tensors');
  refused('no_such_input', 'in ensemble no_such_input, ensemble tensor X is mapping to non-existing input NOPE in model id_f32_4');
});

test('a step fed by two different decoupled models is refused at load', () => {
  refused('two_decoupled', "in ensemble two_decoupled, step of model 'id2_i32_1' receives inputs originated from different decoupled models");
});

test('a batching ensemble over a model that does not batch loads when the full shapes agree, and runs', async () => {
  assert.equal(reasons.get('batched_over_plain')!.state, 'READY', reasons.get('batched_over_plain')!.reason);
  const r = await postJson(`${s.url}/v2/models/batched_over_plain/infer`, { inputs: [{ name: 'X', shape: [2, 4], datatype: 'FP32', data: [1, 2, 3, 4, 5, 6, 7, 8] }] });
  assert.equal(r.status, 200, r.body.toString());
  assert.deepEqual(r.json().outputs[0].shape, [2, 4]);
  assert.deepEqual(r.json().outputs[0].data, [1, 2, 3, 4, 5, 6, 7, 8]);
});
