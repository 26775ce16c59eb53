import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isNereidError } from '../../src/errors.js';
import {
  autoCompleteBackendFields, normalizeModelConfig, parseModelConfig, validateModelConfig, type DirEntry, type ModelConfig,
} from '../../src/config/index.js';

const file = (name: string): DirEntry => ({ name, isDirectory: false });
const dir = (name: string): DirEntry => ({ name, isDirectory: true });

function autofill(text: string, entries: DirEntry[], name = 'm'): ModelConfig {
  const c = parseModelConfig(text, 'config.pbtxt');
  autoCompleteBackendFields(c, entries, name);
  return c;
}
const trio = (c: ModelConfig) => [c.backend, c.platform, c.default_model_filename];

test('backend autofill from the version folder, in core order', () => {
  assert.deepEqual(trio(autofill('', [file('model.onnx')])), ['onnxruntime', 'onnxruntime_onnx', 'model.onnx']);
  assert.deepEqual(trio(autofill('', [dir('model.onnx')])), ['onnxruntime', 'onnxruntime_onnx', 'model.onnx']);
  assert.deepEqual(trio(autofill('', [file('model.plan'), file('model.onnx')])), ['tensorrt', 'tensorrt_plan', 'model.plan']);
  assert.deepEqual(trio(autofill('', [dir('model.savedmodel')])), ['tensorflow', 'tensorflow_savedmodel', 'model.savedmodel']);
  assert.deepEqual(trio(autofill('', [file('model.graphdef')])), ['tensorflow', 'tensorflow_graphdef', 'model.graphdef']);
  assert.deepEqual(trio(autofill('', [file('model.xml'), file('model.bin')])), ['openvino', '', 'model.xml']);
  assert.deepEqual(trio(autofill('', [file('model.pt')])), ['pytorch', 'pytorch_libtorch', 'model.pt']);
  assert.deepEqual(trio(autofill('', [file('model.pt2')])), ['pytorch', 'torch_aoti', 'model.pt2']);
  assert.deepEqual(trio(autofill('', [file('model.py')])), ['python', '', 'model.py']);
  // A directory named model.plan / model.pt is not a plan or a TorchScript file.
  assert.deepEqual(trio(autofill('', [dir('model.pt'), file('model.py')])), ['python', '', 'model.py']);
});

test('backend autofill from the config completes the pair', () => {
  assert.deepEqual(trio(autofill('platform: "onnxruntime_onnx"', [])), ['onnxruntime', 'onnxruntime_onnx', 'model.onnx']);
  assert.deepEqual(trio(autofill('backend: "onnxruntime"', [])), ['onnxruntime', 'onnxruntime_onnx', 'model.onnx']);
  assert.deepEqual(trio(autofill('platform: "tensorflow_graphdef"', [])), ['tensorflow', 'tensorflow_graphdef', 'model.graphdef']);
  assert.deepEqual(trio(autofill('default_model_filename: "model.plan"', [])), ['tensorrt', 'tensorrt_plan', 'model.plan']);
  assert.deepEqual(trio(autofill('backend: "python"', [file('model.onnx')])), ['python', '', 'model.py']);
  assert.deepEqual(trio(autofill('backend: "pytorch" runtime: "model.py"', [])), ['pytorch', 'pytorch_libtorch', '']);
  // A file in the folder does not override what the config says.
  assert.deepEqual(trio(autofill('default_model_filename: "x.bin"', [file('model.onnx')])), ['', '', 'x.bin']);
  assert.deepEqual(trio(autofill('platform: "ensemble"', [])), ['', 'ensemble', '']);
  assert.equal(autofill('', [file('model.py')], 'dir_name').name, 'dir_name');
});

test('custom backend from the model name, else an error', () => {
  assert.deepEqual(trio(autofill('', [], 'my_model.identity')), ['identity', '', 'model.identity']);
  assert.throws(() => autofill('', [], 'plain'), (e: unknown) => isNereidError(e) && e.code === 'INVALID_ARG' &&
    /Could not determine backend for model 'plain'.*model\.<backend_name>/.test(e.message));
});

function normalized(text: string, opts: { defaultCpuInstanceCount?: number; name?: string } = {}): ModelConfig {
  const c = parseModelConfig(text, 'config.pbtxt');
  normalizeModelConfig(c, { modelName: opts.name ?? 'm', ...(opts.defaultCpuInstanceCount !== undefined ? { defaultCpuInstanceCount: opts.defaultCpuInstanceCount } : {}) });
  return c;
}

test('normalization: name, version policy, batching defaults, pinned memory, instance groups', () => {
  const c = normalized('backend: "onnxruntime" max_batch_size: 8 dynamic_batching { }', { defaultCpuInstanceCount: 2 });
  assert.equal(c.name, 'm');
  assert.deepEqual(c.version_policy, { latest: { num_versions: 1 } });
  assert.deepEqual(c.dynamic_batching?.preferred_batch_size, [8]);
  assert.deepEqual(c.optimization?.input_pinned_memory, { enable: true });
  assert.deepEqual(c.optimization?.output_pinned_memory, { enable: true });
  assert.equal(c.instance_group.length, 1);
  assert.deepEqual([c.instance_group[0]!.name, c.instance_group[0]!.kind, c.instance_group[0]!.count], ['m', 'KIND_CPU', 2]);

  const s = normalized('max_batch_size: 4 sequence_batching { oldest { } }');
  assert.equal(s.sequence_batching?.max_sequence_idle_microseconds, 1_000_000);
  assert.deepEqual(s.sequence_batching?.oldest?.preferred_batch_size, [4]);
  assert.deepEqual(normalized('dynamic_batching { }').dynamic_batching?.preferred_batch_size, []);

  // Explicit values are kept.
  const k = normalized('optimization { input_pinned_memory { enable: false } } version_policy { all { } }');
  assert.deepEqual(k.optimization?.input_pinned_memory, { enable: false });
  assert.deepEqual(k.version_policy, { all: {} });
});

test('normalization of instance groups: names, KIND_AUTO, counts', () => {
  const c = normalized('backend: "onnxruntime" instance_group [ { }, { kind: KIND_CPU count: 3 }, { kind: KIND_GPU gpus: [0] }, { gpus: [1] } ]', { defaultCpuInstanceCount: 2 });
  assert.deepEqual(c.instance_group.map((g) => [g.name, g.kind, g.count, g.gpus]), [
    ['m_0', 'KIND_CPU', 2, []],
    ['m_1', 'KIND_CPU', 3, []],
    ['m_2', 'KIND_GPU', 1, [0]],
    ['m_3', 'KIND_CPU', 2, []],
  ]);
  assert.equal(normalized('backend: "python" instance_group { kind: KIND_CPU }').instance_group[0]!.count, 1);
  assert.equal(normalized('backend: "python"').instance_group[0]!.count, 1);
  // The CPU default is the backend's (its registration's traits), never the config module's own idea.
  assert.equal(normalized('backend: "onnxruntime"').instance_group[0]!.count, 1);
  assert.equal(normalized('backend: "tensorflow"', { defaultCpuInstanceCount: 2 }).instance_group[0]!.count, 2);
});

test('normalization leaves ensembles without instance groups or optimization, and is idempotent', () => {
  const e = normalized('platform: "ensemble" ensemble_scheduling { }');
  assert.deepEqual(e.instance_group, []);
  assert.equal(e.optimization, undefined);
  const c = normalized('backend: "python" max_batch_size: 2 dynamic_batching { }');
  const again = structuredClone(c);
  normalizeModelConfig(again, { modelName: 'm' });
  assert.deepEqual(again, c);
});

/** Parse, autofill with no files, normalize, validate; returns the validation error message or ''. */
function check(text: string, name = 'm', autoComplete = true): string {
  const c = parseModelConfig(text, 'config.pbtxt');
  try {
    autoCompleteBackendFields(c, [], name);
    normalizeModelConfig(c, { modelName: name });
    validateModelConfig(c, { modelName: name, autoComplete });
    return '';
  } catch (e) {
    assert.ok(isNereidError(e) && e.code === 'INVALID_ARG', String(e));
    return e.message;
  }
}

const IO = 'input { name: "I" data_type: TYPE_FP32 dims: [4] } output { name: "O" data_type: TYPE_FP32 dims: [4] }';
const PY = `backend: "python" ${IO}`;

test('validation passes a plain config, and KIND_GPU on purpose', () => {
  assert.equal(check(PY), '');
  assert.equal(check(`${PY} instance_group { kind: KIND_GPU gpus: [0, 1] }`), '');
  assert.equal(check(`${PY} max_batch_size: 4 dynamic_batching { preferred_batch_size: [2, 4] priority_levels: 2 default_priority_level: 2 priority_queue_policy { key: 1 value { } } }`), '');
});

test('validation: name, platform and backend', () => {
  assert.match(check(`name: "other" ${PY}`), /^unexpected directory name 'm' for model 'other', directory name must equal model name$/);
  assert.match(check(`platform: "ensemble" backend: "python" ${IO}`), /^Ensemble model 'm' must have platform type 'ensemble' and empty backend type$/);
  // Core checks the pair only for a backend it knows; python is not one, so any platform goes with it.
  assert.equal(check(`backend: "python" platform: "onnxruntime_onnx" ${IO}`), '');
  assert.match(check(`backend: "onnxruntime" platform: "pytorch_libtorch" ${IO}`), /^unexpected 'platform' and 'backend' pair, got:pytorch_libtorch, onnxruntime$/);
  assert.match(check(`backend: "onnxruntime" platform: "tensorrt_plan" ${IO}`), /unexpected 'platform' and 'backend' pair/);
  assert.equal(check(`backend: "custom" platform: "whatever" ${IO}`), '');
  assert.match(check(`backend: "python" max_batch_size: -1 ${IO}`), /^'max_batch_size' must be non-negative value for m$/);
});

test('validation: inputs and outputs', () => {
  assert.match(check('backend: "python" input { data_type: TYPE_FP32 dims: [1] }'), /^model input must specify 'name' for m$/);
  assert.match(check('backend: "python" input { name: "I" dims: [1] }'), /^model input 'I' must specify 'data_type' for m$/);
  assert.match(check('backend: "python" output { name: "O" data_type: TYPE_FP32 }'), /^model output 'O' must specify 'dims' for m$/);
  assert.match(check('backend: "python" input { name: "I" data_type: TYPE_FP32 dims: [0] }'), /dimension must be integer >= 1, or -1/);
  assert.match(check('backend: "python" input { name: "I" data_type: TYPE_FP32 dims: [2, 3] reshape { shape: [5] } }'), /^model input 'I' has different size for dims and reshape for m$/);
  assert.equal(check('backend: "python" input { name: "I" data_type: TYPE_FP32 dims: [2, 3] reshape { shape: [6] } }'), '');
  assert.equal(check('backend: "python" input { name: "I" data_type: TYPE_FP32 dims: [2, 4, -1, 6] reshape { shape: [8, -1, 1, 6] } }'), '');
  assert.match(check('backend: "python" input { name: "I" data_type: TYPE_FP32 dims: [2, -1] reshape { shape: [-1, 2] } }'), /different size for dims and reshape/);
  assert.match(check('backend: "python" input { name: "I" data_type: TYPE_FP32 dims: [-1, -1] reshape { shape: [-1] } }'), /different number of variable-size dimensions/);
  // dims [1] with an empty reshape is the scalar-per-batch-item idiom; it needs batching.
  assert.equal(check('backend: "python" max_batch_size: 2 input { name: "I" data_type: TYPE_FP32 dims: [1] reshape { shape: [] } }'), '');
  assert.match(check('backend: "python" input { name: "I" data_type: TYPE_FP32 dims: [1] reshape { shape: [] } }'), /cannot have empty reshape for non-batching model/);
  assert.match(check('backend: "python" input { name: "I" data_type: TYPE_FP32 format: FORMAT_NHWC dims: [1, 2] }'), /NHWC\/NCHW require 3 dims/);
  assert.match(check('backend: "python" input { name: "I" data_type: TYPE_FP32 dims: [1] is_shape_tensor: true }'), /shape tensors are only supported for TensorRT/);
  assert.match(check('backend: "python" output { name: "O" data_type: TYPE_FP32 dims: [1] is_non_linear_format_io: true }'), /Non-linear IO format is only supported/);
});

test('validation: batch inputs and outputs', () => {
  const bi = (body: string) => check(`${PY} max_batch_size: 2 batch_input { ${body} }`);
  assert.equal(bi('kind: BATCH_ELEMENT_COUNT target_name: "N" data_type: TYPE_INT32 source_input: "I"'), '');
  assert.match(bi('kind: BATCH_ITEM_SHAPE target_name: "N" data_type: TYPE_INT32'), /batch input kind 'BATCH_ITEM_SHAPE' expects 1 source input, got 0/);
  assert.match(bi('target_name: "N" data_type: TYPE_INT64 source_input: "I"'), /batch input data type must be TYPE_INT32 or TYPE_FP32/);
  assert.match(bi('target_name: "N" data_type: TYPE_FP32 source_input: "X"'), /unknown source input name 'X'/);
  const bo = (body: string) => check(`${PY} max_batch_size: 2 batch_output { ${body} }`);
  assert.equal(bo('target_name: "O" source_input: "I"'), '');
  assert.match(bo('target_name: "Z" source_input: "I"'), /unknown target output name 'Z'/);
  assert.match(bo('target_name: ["O", "O"] source_input: "I"'), /target output name 'O' can only be specified once/);
});

test('validation: dynamic batching', () => {
  const db = (body: string, mbs = 4) => check(`${PY} max_batch_size: ${mbs} dynamic_batching { ${body} }`);
  assert.match(db('preferred_batch_size: 8'), /^dynamic batching preferred size must be <= max batch size for m$/);
  assert.match(db('preferred_batch_size: 0'), /preferred size must be positive/);
  assert.match(db('priority_levels: 2'), /^default priority level must be in range \[1, 2\] for m$/);
  assert.match(db('priority_levels: 2 default_priority_level: 1 priority_queue_policy { key: 3 value { } }'), /priority queue policy must have priority level in range \[1, 2\]/);
  assert.match(db('priority_levels: 2 default_priority_level: 1 preserve_ordering: true'), /Only one priority level is allowed when 'preserve_ordering' is true/);
  assert.match(db('preserve_ordering: true default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 5 }'), /can not have DELAY as timeout action/);
  assert.equal(db('preserve_ordering: true default_queue_policy { timeout_action: DELAY }'), '');
});

test('validation: sequence batching controls and strategies', () => {
  const sb = (body: string) => check(`${PY} max_batch_size: 4 sequence_batching { ${body} }`);
  const ctl = (name: string, body: string) => `control_input { name: "${name}" control { ${body} } }`;
  assert.equal(sb(ctl('S', 'kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1]') + ctl('C', 'kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_STRING')), '');
  assert.match(sb(ctl('S', 'kind: CONTROL_SEQUENCE_START')), /must specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for CONTROL_SEQUENCE_START/);
  assert.match(sb(ctl('S', 'kind: CONTROL_SEQUENCE_END int32_false_true: [0, 1] bool_false_true: [false, true]')), /^sequence batching specifies more than one from 'int32_false_true', 'fp32_false_true' and 'bool_false_true' for CONTROL_SEQUENCE_END for m$/);
  assert.match(sb(ctl('S', 'kind: CONTROL_SEQUENCE_READY fp32_false_true: [1]')), /^sequence batching control 'fp32_false_true' must have exactly 2 entries for CONTROL_SEQUENCE_READY for m$/);
  assert.match(sb(ctl('A', 'kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1]') + ctl('B', 'kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1]')), /multiple CONTROL_SEQUENCE_START tensors/);
  assert.match(sb(ctl('C', 'kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_FP32')), /unexpected data type for control CONTROL_SEQUENCE_CORRID/);
  assert.match(sb(ctl('C', 'kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_INT64 int32_false_true: [0, 1]')), /must not specify/);
  assert.match(sb('oldest { preferred_batch_size: [5] }'), /sequence batching preferred batch size must be <= max batch size/);
  assert.match(sb('direct { minimum_slot_utilization: 1.5 }'), /minimum slot utilization must be in range/);
  assert.match(check(`${PY} sequence_batching { } response_cache { enable: true }`), /Response Cache does not currently support model m with sequence batching/);
});

// Cases of Triton's qa/L0_model_config (control_input without a name, one name twice, a typed START control).
test('validation: control inputs are named once each; a START, END or READY control may name a data_type', () => {
  const sb = (body: string) => check(`${PY} max_batch_size: 4 sequence_batching { ${body} }`);
  const ctl = (name: string, body: string) => `control_input { name: "${name}" control { ${body} } }`;
  const start = 'kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1]';
  assert.equal(sb(ctl('S', `${start} data_type: TYPE_INT32`) + ctl('E', 'kind: CONTROL_SEQUENCE_END fp32_false_true: [0, 1] data_type: TYPE_FP32')), '');
  assert.match(sb(ctl('', start)), /^sequence batching control tensor must have a name for m$/);
  // A nameless entry is refused even when it carries no control of a kind being looked for.
  assert.match(sb(ctl('S', start) + 'control_input { }'), /^sequence batching control tensor must have a name for m$/);
  assert.match(sb(ctl('S', start) + ctl('S', 'kind: CONTROL_SEQUENCE_END int32_false_true: [0, 1]')),
    /^sequence batching control tensor 'S' is specified for multiple control kinds for m$/);
  // Core walks the entries in order, so a second START in the first entry is reported before a later nameless one.
  assert.match(sb(`control_input { name: "S" control { ${start} } control { ${start} } } control_input { }`),
    /^sequence batching specifies multiple CONTROL_SEQUENCE_START tensors for m$/);
});

test('validation: a non-linear format tensor needs 3 dims', () => {
  const trt = (io: string) => check(`platform: "tensorrt_plan" ${io}`);
  assert.equal(trt('input { name: "I" data_type: TYPE_FP32 dims: [3, 4, 5] is_non_linear_format_io: true }'), '');
  assert.match(trt('input { name: "I" data_type: TYPE_FP32 dims: [4, 5] is_non_linear_format_io: true }'), /^Non-linear IO format input requires 3 dims for m$/);
  assert.match(trt('output { name: "O" data_type: TYPE_FP32 dims: [1, 3, 4, 5] is_non_linear_format_io: true }'), /^Non-linear IO format output requires 3 dims for m$/);
});

test('validation: a KIND_GPU group may name any device, but no negative one', () => {
  assert.equal(check(`${PY} instance_group { kind: KIND_GPU gpus: [0, 7] }`), '');
  assert.match(check(`${PY} instance_group { kind: KIND_GPU gpus: [0, -1] }`),
    /^instance group m_0 of model m specifies invalid or unsupported gpu id -1\. GPUs with at least the minimum required CUDA compute compatibility of 6\.000000 are: $/);
});

test('validation runs in core order: config, the directory name, instance groups, then inputs and outputs (inputs and outputs second when auto-complete is off)', () => {
  const badIO = 'input { name: "I" data_type: TYPE_FP32 dims: [0] }';
  // dynamic batching (ValidateModelConfig) before an input (ValidateModelIOConfig)
  assert.match(check(`backend: "python" max_batch_size: 2 dynamic_batching { preferred_batch_size: 4 } ${badIO}`), /preferred size must be <= max batch size/);
  // the directory name before an input, which core checks only once the backend has completed the config
  assert.match(check(`name: "other" backend: "python" ${badIO}`), /unexpected directory name/);
  assert.match(check(`backend: "python" instance_group { kind: KIND_CPU gpus: [0] } ${badIO}`), /has kind KIND_CPU but specifies one or more GPUs/);
  // with auto-complete off the repository checks inputs and outputs before the directory name
  assert.match(check(`name: "other" backend: "python" ${badIO}`, 'm', false), /dimension must be integer >= 1/);
  // the directory name before instance groups
  assert.match(check(`name: "other" ${PY} instance_group { kind: KIND_CPU gpus: [0] }`), /unexpected directory name/);
  // a sequence batcher with the response cache on is refused before its controls are read
  assert.match(check(`${PY} sequence_batching { control_input { } } response_cache { enable: true }`), /Response Cache does not currently support model m with sequence batching/);
});

const ENSEMBLE = `platform: "ensemble" max_batch_size: 0
input { name: "IN" data_type: TYPE_FP32 dims: [1] } output { name: "OUT" data_type: TYPE_FP32 dims: [1] }`;
const step = (model: string, inMap: string, outMap: string) =>
  `step { model_name: "${model}" model_version: -1 input_map { ${inMap} } output_map { ${outMap} } }`;

test('validation: ensembles', () => {
  const ok = `${ENSEMBLE} ensemble_scheduling { ${step('a', 'key: "x" value: "IN"', 'key: "y" value: "mid"')} ${step('b', 'key: "x" value: "mid"', 'key: "y" value: "OUT"')} }`;
  assert.equal(check(ok), '');
  assert.match(check(`${ENSEMBLE}`), /ensemble scheduling must be set for ensemble m whose platform is ensemble/);
  assert.match(check(`backend: "python" ${IO} ensemble_scheduling { }`), /ensemble scheduling cannot be set for model 'm' whose platform is not ensemble/);
  assert.match(check(`${ok} instance_group { }`), /instance group should not be specified for ensemble 'm'/);
  assert.match(check(`${ok} optimization { }`), /optimization should not be specified for ensemble 'm'/);
  assert.match(check(`${ok} model_warmup { }`), /model_warmup can not be specified for ensemble 'm'/);
  assert.match(check(`${ENSEMBLE} ensemble_scheduling { }`), /must specify 'step' for ensemble 'm'/);
  assert.match(check(`${ENSEMBLE} ensemble_scheduling { step { input_map { key: "x" value: "IN" } } }`), /must specify 'model_name' in step 0/);
  assert.match(check(`${ENSEMBLE} ensemble_scheduling { ${step('a', 'key: "x" value: "IN"', 'key: "y" value: "OUT"')} ${step('b', 'key: "x" value: "IN"', 'key: "y" value: "OUT"')} }`), /ensemble tensor 'OUT' can appear in an output map only once/);
  assert.match(check(`${ENSEMBLE} ensemble_scheduling { ${step('a', 'key: "x" value: "OTHER"', 'key: "y" value: "OUT"')} }`), /ensemble input 'IN' for ensemble m' is not used/);
  assert.match(check(`${ENSEMBLE} ensemble_scheduling { ${step('a', 'key: "x" value: "IN"', 'key: "y" value: "mid"')} }`), /ensemble output 'OUT' for ensemble m' is not used/);
  assert.match(check(`${ENSEMBLE} ensemble_scheduling { ${step('a', 'key: "x" value: "IN" } input_map { key: "z" value: "ghost"', 'key: "y" value: "OUT"')} }`), /output 'OUT' for ensemble 'm' is not written/);
  assert.match(check(`${ENSEMBLE} ensemble_scheduling { ${step('a', 'key: "x" value: "IN"', 'key: "y" value: "OUT" } output_map { key: "z" value: "dangling"')} }`), /ensemble tensor 'dangling' is unused in ensemble 'm'/);
});

test('validation: instance groups, decoupled cache, model metrics', () => {
  assert.match(check(`${PY} instance_group { kind: KIND_CPU gpus: [0] }`), /^instance group m_0 of model m has kind KIND_CPU but specifies one or more GPUs$/);
  assert.match(check(`${PY} instance_group { kind: KIND_MODEL gpus: [0] }`), /has kind KIND_MODEL but specifies one or more GPUs/);
  assert.match(check(`${PY} instance_group { profile: "0" }`), /specifies profile field which is only supported for TensorRT models/);
  assert.equal(check(`platform: "tensorrt_plan" ${IO} instance_group { kind: KIND_GPU profile: "0" }`), '');
  assert.match(check(`${PY} model_transaction_policy { decoupled: true } response_cache { enable: true }`), /Response Cache does not currently support model m with 'decoupled' transaction policy/);
  assert.equal(check(`${PY} model_transaction_policy { decoupled: true } response_cache { enable: false }`), '');
});

// Core's ValidateModelMetrics (model_config_utils.cc): four refusals, in its words, naming no model; a family
// core cannot customize only draws a warning at load (metric_model_reporter.cc), and bucket order is not checked.
test('validation: model_metrics, as core words it', () => {
  const metrics = (control: string) => check(`${PY} model_metrics { metric_control { ${control} } }`);
  assert.equal(metrics('histogram_options { buckets: [1] }'), "metric control must specify 'metric_identifier'");
  assert.equal(metrics('metric_identifier { } histogram_options { buckets: [1] }'), "metric identifier must specify non-empty 'family'");
  assert.equal(metrics('metric_identifier { family: "f" }'), "metric control must specify 'histogram_options'");
  assert.equal(metrics('metric_identifier { family: "f" } histogram_options { }'), "histogram options must specify non-empty 'buckets'");
  assert.equal(metrics('metric_identifier { family: "f" } histogram_options { buckets: [1, 2] }'), '');
  assert.equal(metrics('metric_identifier { family: "not_a_triton_family" } histogram_options { buckets: [5, 1] }'), '');
  assert.equal(check(`${PY} model_metrics { }`), '');
});
