import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NereidError, isNereidError, notFound } from '../../src/errors.js';
import { BackendRegistry } from '../../src/backends/registry.js';
import type { Backend } from '../../src/backends/backend.js';
import { createLogger } from '../../src/observability/logger.js';
import { InstanceBudget } from '../../src/models/instance-budget.js';
import { loadVersion, prepareModel, type LoaderOptions, type PreparedModel } from '../../src/models/loader.js';
import { checkEnsemble } from '../../src/models/ensemble-check.js';
import { assertDistinctRefusals, assertTritonWords } from '../helpers/triton-messages.js';
import { CONFIG_MESSAGES, type ConfigRefusal } from './triton-messages.js';

/** A backend that only exists: the refusals here all come before any instance is made. */
const stub = (name: string, autoComplete?: Backend['autoComplete']): Backend => ({
  name,
  ...(autoComplete ? { autoComplete } : {}),
  createInstance: () => Promise.reject(new Error('no instances in these tests')),
});

function options(strict: boolean): LoaderOptions {
  const backends = new BackendRegistry();
  for (const name of ['python', 'onnxruntime']) backends.register(name, async () => stub(name));
  // Stands for a backend that completes the config from the model file, as onnxruntime does.
  backends.register('completing', async () => stub('completing', async () => { throw new NereidError('INVALID_ARG', 'the backend auto-completed the config'); }));
  return {
    backends, strictModelConfig: strict, modelConfigName: '', backendConfig: {}, loadThreads: 1, instances: new InstanceBudget(),
    logger: createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' }),
  };
}

/** Writes `<root>/<folder>/config.pbtxt` (unless null) and a version folder, and prepares it as the loader does. */
async function prepare(root: string, folder: string, config: string | null, strict: boolean): Promise<PreparedModel> {
  const dir = join(root, folder);
  await mkdir(join(dir, '1'), { recursive: true });
  if (config !== null) await writeFile(join(dir, 'config.pbtxt'), config);
  return prepareModel(folder, dir, undefined, options(strict));
}

/** The message of the refusal the row's config meets, loaded as the repository would load it. */
async function refusal(row: Pick<ConfigRefusal, 'config' | 'folder' | 'strict' | 'steps' | 'stepsUnloaded'>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'nereid-config-words-'));
  try {
    const steps = new Map<string, PreparedModel>();
    for (const [name, text] of Object.entries(row.steps ?? {})) steps.set(name, await prepare(root, name, text, false));
    const model = await prepare(root, row.folder ?? 'm', row.config, row.strict ?? false);
    if (row.steps) checkEnsemble(model.config, (s) => steps.get(s.model_name)!.config);
    if (row.stepsUnloaded) {
      const resolveModel = (name: string): never => { throw notFound(`no version of '${name}' is loaded`); };
      await loadVersion(model, 1, { ...options(false), resolveModel });
    }
  } catch (e) {
    assert.ok(isNereidError(e), `not a NereidError: ${String(e)}`);
    return e.message;
  } finally {
    await rm(root, { recursive: true, force: true });
  }
  assert.fail('the config was accepted');
}

test('config refusal rows are distinct', () => {
  assertDistinctRefusals(CONFIG_MESSAGES);
});

for (const row of CONFIG_MESSAGES) {
  test(row.refusal, async () => {
    assertTritonWords(row, await refusal(row));
  });
}

// A config with faults in two stages is refused for the one core meets first. Core's order on a repository
// load: model_repository_manager.cc reads and completes the config and runs ValidateModelConfig, then
// ValidateModelIOConfig only when auto-complete is off, then the directory name check; backend_model.cc
// TritonModel::Create then finds the backend library, runs ValidateInstanceGroup, and calls the backend's
// model init (where it auto-completes); model.cc Model::Init then runs ValidateModelConfig and
// ValidateModelIOConfig again.
const IO = 'input { name: "I" data_type: TYPE_FP32 dims: [4] } output { name: "O" data_type: TYPE_FP32 dims: [4] }';
const BAD_INPUT = 'input { name: "I" data_type: TYPE_FP32 dims: [0] }';

test('two faults: ValidateModelConfig before the backend lookup', async () => {
  assert.match(await refusal({ config: `backend: "nope" max_batch_size: -1 ${IO}` }), /^'max_batch_size' must be non-negative value for m/);
});

test('two faults: the directory name before the backend lookup', async () => {
  assert.match(await refusal({ config: `name: "other" backend: "nope" ${IO}` }), /^unexpected directory name 'm' for model 'other'/);
});

test('two faults: the directory name before inputs and outputs, unless auto-complete is off', async () => {
  const config = `name: "other" backend: "python" ${BAD_INPUT}`;
  assert.match(await refusal({ config }), /^unexpected directory name 'm' for model 'other'/);
  assert.match(await refusal({ config, strict: true }), /^model input 'I' dimension must be integer >= 1/);
});

test('two faults: instance groups before inputs and outputs', async () => {
  assert.match(await refusal({ config: `backend: "python" instance_group { kind: KIND_CPU gpus: [0] } ${BAD_INPUT}` }),
    /^instance group m_0 of model m has kind KIND_CPU but specifies one or more GPUs/);
});

test("two faults: ValidateModelConfig and ValidateInstanceGroup before the backend's auto-complete", async () => {
  assert.match(await refusal({ config: `backend: "completing" max_batch_size: -1 ${IO}` }), /^'max_batch_size' must be non-negative value for m/);
  assert.match(await refusal({ config: `backend: "completing" instance_group { kind: KIND_MODEL gpus: [0] } ${IO}` }),
    /^instance group m_0 of model m has kind KIND_MODEL but specifies one or more GPUs/);
  assert.match(await refusal({ config: `backend: "completing" ${IO}` }), /the backend auto-completed the config/);
});

test("two faults: a batch input's data type before its source names (ValidateBatchIO)", async () => {
  assert.match(await refusal({ config: `backend: "python" ${IO} batch_input { kind: BATCH_ELEMENT_COUNT target_name: "B" data_type: TYPE_INT64 source_input: "Z" }` }),
    /^batch input data type must be TYPE_INT32 or TYPE_FP32 for m/);
});

test("two faults: a step model without a loaded version before another step's unknown input (CheckNode, then ValidateEnsembleConfig)", async () => {
  const ens = 'platform: "ensemble" input { name: "IN" data_type: TYPE_FP32 dims: [1] } output { name: "OUT" data_type: TYPE_FP32 dims: [1] }';
  const a = 'backend: "python" input { name: "x" data_type: TYPE_FP32 dims: [1] } output { name: "y" data_type: TYPE_FP32 dims: [1] }';
  const root = await mkdtemp(join(tmpdir(), 'nereid-config-words-'));
  try {
    const stepA = await prepare(root, 'a', a, false);
    const model = await prepare(root, 'm', `${ens} ensemble_scheduling {
      step { model_name: "a" model_version: -1 input_map { key: "zz" value: "IN" } output_map { key: "y" value: "T" } }
      step { model_name: "b" model_version: -1 input_map { key: "x" value: "T" } output_map { key: "y" value: "OUT" } } }`, false);
    const resolveModel = (name: string): unknown => {
      if (name === 'a') return { context: { config: stepA.config } };
      throw notFound(`no version of '${name}' is loaded`);
    };
    await assert.rejects(loadVersion(model, 1, { ...options(false), resolveModel: resolveModel as LoaderOptions['resolveModel'] & object }),
      (e: unknown) => isNereidError(e) && /^ensemble 'm' depends on 'b' which has no loaded version/.test(e.message));
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
