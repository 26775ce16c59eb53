import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FIXTURES } from '../../helpers/paths.js';
import { postJson } from '../../helpers/http.js';
import { startTestServer, tempRepository } from '../../helpers/server.js';
import { isNereidError } from '../../../src/errors.js';
import { parseModelConfig } from '../../../src/config/index.js';
import { openSession } from '../../../src/backends/onnxruntime/session.js';
import { checkConfigAgainstModel } from '../../../src/backends/onnxruntime/model-io-check.js';

// Configs that do not fit their model are refused at load in the words of Triton's onnxruntime backend
// (its ValidateInputs / ValidateOutputs, exercised by Triton's qa/L0_model_config "onnx" cases).
// Models: ac_batch  INPUT0 FP32 [b,4], INPUT1 INT64 [b,3] → OUTPUT0 FP32 [b,4], OUTPUT1 INT64 [b,3];
//         ac_nobatch INPUT0 FP32 [2,3] → OUTPUT0 FP32 [2,3]; identity_fp32 INPUT0 FP32 [b,n] → OUTPUT0 [b,n];
//         state_no_start INPUT, ACC_IN INT32 [b,1] → OUTPUT, ACC_OUT INT32 [b,1].
const MODELS: Record<string, string> = {
  ac_batch: join(FIXTURES, 'autocomplete', 'ac_batch'),
  ac_nobatch: join(FIXTURES, 'autocomplete', 'ac_nobatch'),
  identity_fp32: join(FIXTURES, 'dtypes', 'identity_fp32'),
  state_no_start: join(FIXTURES, 'sequence', 'state_no_start'),
};

async function check(model: string, text: string): Promise<string> {
  const session = await openSession(join(MODELS[model]!, '1', 'model.onnx'), {});
  try {
    checkConfigAgainstModel(parseModelConfig(text, 'config.pbtxt'), session.inputMetadata, session.outputMetadata, 'm');
    return '';
  } catch (e) {
    assert.ok(isNereidError(e), String(e));
    return `${e.code}: ${e.message}`;
  } finally {
    await session.release();
  }
}

const io = (kind: 'input' | 'output', name: string, type: string, dims: string, extra = '') =>
  `${kind} { name: "${name}" data_type: ${type} dims: [${dims}] ${extra} }`;
const BATCH_OK = [
  io('input', 'INPUT0', 'TYPE_FP32', '4'), io('input', 'INPUT1', 'TYPE_INT64', '3'),
  io('output', 'OUTPUT0', 'TYPE_FP32', '4'), io('output', 'OUTPUT1', 'TYPE_INT64', '3'),
];
const batch = (...parts: string[]) => `max_batch_size: 8 ${parts.join(' ')}`;

test('a config that fits the model passes, in any order of its tensors', async () => {
  assert.equal(await check('ac_batch', batch(...[...BATCH_OK].reverse())), '');
  assert.equal(await check('ac_nobatch', `${io('input', 'INPUT0', 'TYPE_FP32', '2, 3')} ${io('output', 'OUTPUT0', 'TYPE_FP32', '2, 3')}`), '');
  // a variable model dim takes any configured input size
  assert.equal(await check('identity_fp32', batch(io('input', 'INPUT0', 'TYPE_FP32', '7'), io('output', 'OUTPUT0', 'TYPE_FP32', '-1'))), '');
});

test('too few or too many inputs: the count of expected inputs against the model', async () => {
  assert.equal(await check('ac_batch', batch(BATCH_OK[0]!, BATCH_OK[2]!, BATCH_OK[3]!)),
    "INVALID_ARG: unable to load model 'm', configuration expects 1 inputs, model provides 2");
  assert.equal(await check('ac_nobatch', `${io('input', 'INPUT0', 'TYPE_FP32', '2, 3')} ${io('input', 'X', 'TYPE_FP32', '1')} ${io('output', 'OUTPUT0', 'TYPE_FP32', '2, 3')}`),
    "INVALID_ARG: unable to load model 'm', configuration expects 2 inputs, model provides 1");
  // sequence states count as inputs
  const seq = (states: string) => batch(io('input', 'INPUT', 'TYPE_INT32', '1'), io('output', 'OUTPUT', 'TYPE_INT32', '1'), `sequence_batching { ${states} }`);
  assert.equal(await check('state_no_start', seq('state { input_name: "ACC_IN" output_name: "ACC_OUT" data_type: TYPE_INT32 dims: [1] }')), '');
  assert.match(await check('state_no_start', seq('')), /configuration expects 1 inputs, model provides 2$/);
});

test('a tensor the model does not have, listing the names it has', async () => {
  assert.equal(await check('ac_batch', batch(BATCH_OK[0]!, io('input', 'INPUTX', 'TYPE_INT64', '3'), BATCH_OK[2]!, BATCH_OK[3]!)),
    "INVALID_ARG: unexpected inference input 'INPUTX', allowed inputs are: INPUT0, INPUT1");
  assert.equal(await check('ac_batch', batch(BATCH_OK[0]!, BATCH_OK[1]!, BATCH_OK[2]!, io('output', 'OUTPUTX', 'TYPE_INT64', '3'))),
    "INVALID_ARG: unexpected inference output 'OUTPUTX', allowed outputs are: OUTPUT0, OUTPUT1");
});

test('a data type the model does not have', async () => {
  assert.equal(await check('ac_batch', batch(BATCH_OK[0]!, io('input', 'INPUT1', 'TYPE_INT32', '3'), BATCH_OK[2]!, BATCH_OK[3]!)),
    "INVALID_ARG: unable to load model 'm', configuration expects datatype TYPE_INT32 for input 'INPUT1', model provides TYPE_INT64");
  assert.equal(await check('ac_batch', batch(BATCH_OK[0]!, BATCH_OK[1]!, io('output', 'OUTPUT0', 'TYPE_FP16', '4'), BATCH_OK[3]!)),
    "INVALID_ARG: unable to load model 'm', configuration expects datatype TYPE_FP16 for output 'OUTPUT0', model provides TYPE_FP32");
});

test('dims that contradict the model, with and without the batch dimension', async () => {
  assert.equal(await check('ac_batch', batch(io('input', 'INPUT0', 'TYPE_FP32', '5'), ...BATCH_OK.slice(1))),
    "INVALID_ARG: model 'm', tensor 'INPUT0': the model expects 2 dimensions (shape [-1,4]) but the model configuration specifies 2 dimensions (an initial batch dimension because max_batch_size > 0 followed by the explicit tensor shape, making complete shape [-1,5])");
  assert.equal(await check('ac_nobatch', `${io('input', 'INPUT0', 'TYPE_FP32', '6')} ${io('output', 'OUTPUT0', 'TYPE_FP32', '2, 3')}`),
    "INVALID_ARG: model 'm', tensor 'INPUT0': the model expects 2 dimensions (shape [2,3]) but the model configuration specifies 1 dimensions (shape [6])");
  // a model without a variable first dim cannot batch
  assert.equal(await check('ac_nobatch', `max_batch_size: 2 ${io('input', 'INPUT0', 'TYPE_FP32', '3')} ${io('output', 'OUTPUT0', 'TYPE_FP32', '3')}`),
    "INVALID_ARG: model 'm', tensor 'INPUT0': for the model to support batching the shape should have at least 1 dimension and the first dimension must be -1; but shape expected by the model is [2,3]");
  // an output's dims must match exactly: a fixed size against the model's variable dim is refused
  assert.match(await check('identity_fp32', batch(io('input', 'INPUT0', 'TYPE_FP32', '-1'), io('output', 'OUTPUT0', 'TYPE_FP32', '7'))),
    /tensor 'OUTPUT0': the model expects 2 dimensions \(shape \[-1,-1\]\) but .* making complete shape \[-1,7\]\)$/);
  // a reshape, when given, is what is compared
  assert.equal(await check('ac_batch', batch(io('input', 'INPUT0', 'TYPE_FP32', '2, 2', 'reshape { shape: [4] }'), ...BATCH_OK.slice(1))), '');
});

test('optional and ragged inputs as the backend allows them', async () => {
  // an optional input is not counted (ONNX Runtime serves it as an overridable initializer) ...
  assert.equal(await check('ac_nobatch', `${io('input', 'INPUT0', 'TYPE_FP32', '2, 3')} ${io('input', 'EXTRA', 'TYPE_FP32', '1', 'optional: true')} ${io('output', 'OUTPUT0', 'TYPE_FP32', '2, 3')}`), '');
  // ... and is refused when the model batches
  assert.equal(await check('ac_batch', batch(...BATCH_OK, io('input', 'EXTRA', 'TYPE_FP32', '4', 'optional: true'))),
    "INVALID_ARG: unable to load model 'm', optional input 'EXTRA' is not supported for models that support batching");
  assert.equal(await check('identity_fp32', batch(io('input', 'INPUT0', 'TYPE_FP32', '-1', 'allow_ragged_batch: true'), io('output', 'OUTPUT0', 'TYPE_FP32', '-1'))),
    "INVALID_ARG: unable to load model 'm', configuration expects model provides input with shape [-1]  for ragged input 'INPUT0', model provides [-1,-1]");
});

test('sequence controls must be model inputs of dims [1] and the control type', async () => {
  const seq = (ctl: string) => batch(io('input', 'INPUT', 'TYPE_INT32', '1'), io('output', 'OUTPUT', 'TYPE_INT32', '1'),
    `sequence_batching { control_input { ${ctl} } state { input_name: "ACC_IN" output_name: "ACC_OUT" data_type: TYPE_INT32 dims: [1] } }`);
  assert.equal(await check('state_no_start', seq('name: "START" control { kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] }')),
    "INTERNAL: configuration specified sequence control 'START', but model does not provide that input");
  assert.equal(await check('state_no_start', seq('name: "ACC_IN" control { kind: CONTROL_SEQUENCE_START fp32_false_true: [0, 1] }')),
    "INVALID_ARG: unable to load model 'm', sequence control 'ACC_IN', the model expects data-type INT32 but the model configuration specifies data-type TYPE_FP32");
});

test('the server refuses such a model at load and keeps serving the others', async () => {
  const repo = await tempRepository([{ from: MODELS['ac_batch']!, name: 'wrong_dims' }, { from: MODELS['identity_fp32']! }]);
  await writeFile(join(repo.dir, 'wrong_dims', 'config.pbtxt'),
    `backend: "onnxruntime" ${batch(io('input', 'INPUT0', 'TYPE_FP32', '5'), ...BATCH_OK.slice(1))}`);
  const s = await startTestServer({ modelRepositories: [repo.dir], exitOnError: false, strictReadiness: false });
  try {
    const index = (await postJson(`${s.url}/v2/repository/index`, {})).json() as { name: string; state: string; reason: string }[];
    const wrong = index.find((m) => m.name === 'wrong_dims')!;
    assert.equal(wrong.state, 'UNAVAILABLE');
    assert.match(wrong.reason, /model 'wrong_dims', tensor 'INPUT0': the model expects 2 dimensions \(shape \[-1,4\]\)/);
    assert.equal(index.find((m) => m.name === 'identity_fp32')!.state, 'READY');
  } finally {
    await s.close();
    await repo.remove();
  }
});
