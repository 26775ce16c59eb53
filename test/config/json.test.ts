import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isNereidError } from '../../src/errors.js';
import {
  modelConfigFromJson, modelConfigToJson, normalizeModelConfig, parseModelConfig,
} from '../../src/config/index.js';

/** The `simple` example of Triton's docs, as an ONNX model, after core normalization. */
const SIMPLE = `
name: "simple"
platform: "onnxruntime_onnx"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] } ]
dynamic_batching { max_queue_delay_microseconds: 100 priority_levels: 2 default_priority_level: 1
  priority_queue_policy { key: 2 value { default_timeout_microseconds: 7 } } }
instance_group { kind: KIND_CPU secondary_devices { device_id: 3 } }
`;

test('golden JSON for a small config: key order, defaults printed, int64 fix-ups and leftovers', () => {
  const cfg = parseModelConfig(SIMPLE, 'config.pbtxt');
  normalizeModelConfig(cfg, { modelName: 'simple', defaultCpuInstanceCount: 2 });
  const json = modelConfigToJson(cfg);
  const queuePolicy = (timeout: number) => ({
    timeout_action: 'REJECT', default_timeout_microseconds: timeout, allow_timeout_override: false, max_queue_size: 0,
  });
  const io = (name: string) => ({ name, data_type: 'TYPE_INT32' });
  const expected = {
    name: 'simple',
    platform: 'onnxruntime_onnx',
    backend: 'onnxruntime',
    runtime: '',
    version_policy: { latest: { num_versions: 1 } },
    max_batch_size: 8,
    input: [{ ...io('INPUT0'), format: 'FORMAT_NONE', dims: [16], is_shape_tensor: false, allow_ragged_batch: false, optional: false, is_non_linear_format_io: false }],
    output: [{ ...io('OUTPUT0'), dims: [16], label_filename: '', is_shape_tensor: false, is_non_linear_format_io: false }],
    batch_input: [],
    batch_output: [],
    optimization: {
      priority: 'PRIORITY_DEFAULT',
      input_pinned_memory: { enable: true },
      output_pinned_memory: { enable: true },
      gather_kernel_buffer_threshold: 0,
      eager_batching: false,
    },
    dynamic_batching: {
      preferred_batch_size: [8],
      max_queue_delay_microseconds: 100,
      preserve_ordering: false,
      priority_levels: 2,
      default_priority_level: 1,
      // JSON object keys are strings anyway; the timeout inside is fixed up to a number.
      priority_queue_policy: { 2: queuePolicy(7) },
    },
    instance_group: [{
      name: 'simple_0', kind: 'KIND_CPU', count: 2, gpus: [],
      // device_id is int64 and not in Triton's fix-up list: it stays a string.
      secondary_devices: [{ kind: 'KIND_NVDLA', device_id: '3' }],
      profile: [], passive: false, host_policy: '',
    }],
    default_model_filename: '',
    cc_model_filenames: {},
    metric_tags: {},
    parameters: {},
    model_warmup: [],
  };
  assert.deepEqual(json, expected);
  // Key order is .proto declaration order (backend before version_policy; instance_group after the schedulers).
  assert.deepEqual(Object.keys(json), Object.keys(expected));
  assert.deepEqual(Object.keys((json['input'] as object[])[0]!), Object.keys(expected.input[0]!));
  assert.deepEqual(Object.keys((json['instance_group'] as object[])[0]!), Object.keys(expected.instance_group[0]!));
});

/** A value deep inside printed JSON, by a dotted path (array indices as numbers). */
const get = (o: unknown, path: string): unknown => path.split('.').reduce((a, k) => (a as Record<string, unknown>)[k], o);

test('int64 fields outside the fix-up list print as strings', () => {
  const json = modelConfigToJson(parseModelConfig(`
    optimization { cuda { graph_spec { input { key: "x" value { dim: [2, -1] } } } } }
    sequence_batching { max_sequence_idle_microseconds: 5 state { dims: [4] initial_state { dims: [4] zero_data: true } }
      oldest { max_queue_delay_microseconds: 6 } }`, 'c.pbtxt'));
  assert.deepEqual(get(json, 'optimization.cuda.graph_spec.0.input.x.dim'), ['2', '-1']);
  assert.equal(get(json, 'sequence_batching.max_sequence_idle_microseconds'), 5);
  assert.equal(get(json, 'sequence_batching.oldest.max_queue_delay_microseconds'), 6);
  assert.deepEqual(get(json, 'sequence_batching.state.0.dims'), [4]);
  // Triton's fix-up code looks for these dims in the wrong object, so they stay strings.
  assert.deepEqual(get(json, 'sequence_batching.state.0.initial_state.0.dims'), ['4']);
  const ens = modelConfigToJson(parseModelConfig(
    'ensemble_scheduling { step { model_version: -1 } } version_policy { specific { versions: [2] } } model_warmup { inputs { key: "a" value { dims: [3] } } }', 'e'));
  assert.equal(get(ens, 'ensemble_scheduling.step.0.model_version'), -1);
  assert.deepEqual(get(ens, 'version_policy.specific.versions'), [2]);
  assert.deepEqual(get(ens, 'model_warmup.0.inputs.a.dims'), [3]);
  const direct = modelConfigToJson(parseModelConfig('sequence_batching { direct { max_queue_delay_microseconds: 8 } }', 'd'));
  assert.equal(get(direct, 'sequence_batching.direct.max_queue_delay_microseconds'), 8);
});

test('fromJson: enum names in any case or numbers, 64-bit ints as strings or numbers, camelCase names, nulls', () => {
  const cfg = modelConfigFromJson({
    name: 'm',
    maxBatchSize: 4,
    input: [{ name: 'x', data_type: 'type_fp32', dims: ['2', 3] }],
    instance_group: [{ kind: 2, count: '1' }],
    dynamic_batching: { priority_queue_policy: { 1: { timeout_action: 'delay' } }, max_queue_delay_microseconds: '10' },
    parameters: { k: { string_value: 'v' } },
    optimization: null,
  });
  assert.equal(cfg.max_batch_size, 4);
  assert.equal(cfg.input[0]!.data_type, 'TYPE_FP32');
  assert.deepEqual(cfg.input[0]!.dims, [2, 3]);
  assert.equal(cfg.input[0]!.format, 'FORMAT_NONE');
  assert.equal(cfg.instance_group[0]!.kind, 'KIND_CPU');
  assert.equal(cfg.dynamic_batching?.priority_queue_policy['1']?.timeout_action, 'DELAY');
  assert.equal(cfg.dynamic_batching?.max_queue_delay_microseconds, 10);
  assert.equal(cfg.parameters['k']?.string_value, 'v');
  assert.equal(cfg.optimization, undefined);
  assert.deepEqual(cfg.output, []);
});

function rejects(json: unknown, what: RegExp): void {
  assert.throws(() => modelConfigFromJson(json), (e: unknown) => {
    assert.ok(isNereidError(e));
    assert.equal(e.code, 'INVALID_ARG');
    assert.match(e.message, what);
    return true;
  });
}

test('fromJson rejects unknown fields (naming the path), wrong types, bad enums, ranges, oneof conflicts', () => {
  rejects({ bogus: 1 }, /bogus: unknown field "bogus" of inference.ModelConfig/);
  rejects({ input: [{ name: 'a' }, { name: 'b', dimz: [1] }] }, /input\[1\]\.dimz: unknown field "dimz" of inference.ModelInput/);
  rejects({ parameters: { k: { value: 'v' } } }, /parameters\["k"\]\.value: unknown field/);
  rejects({ max_batch_size: '4x' }, /max_batch_size: expected an integer/);
  rejects({ max_batch_size: 1.5 }, /max_batch_size: expected an integer/);
  rejects({ max_batch_size: 2 ** 31 }, /Integer out of range/);
  rejects({ name: 5 }, /name: expected a string/);
  rejects({ input: { name: 'a' } }, /input: expected an array/);
  rejects({ input: [{ optional: 'yes' }] }, /input\[0\]\.optional: expected true or false/);
  rejects({ input: [{ data_type: 'FP32' }] }, /"FP32" is not a value of enum inference.DataType/);
  rejects({ dynamic_batching: {}, sequence_batching: {} }, /both members of oneof "scheduling_choice"/);
  rejects({ dynamic_batching: { priority_queue_policy: { x: {} } } }, /priority_queue_policy\["x"\] \(key\): expected an integer/);
  rejects([], /\(root\): expected an object/);
  rejects('{not json', /not valid JSON/);
  rejects({ max_batch_size: 1, maxBatchSize: 2 }, /given twice/);
});
