import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  MESSAGES, messageDescriptor, modelConfigFromJson, modelConfigToJson, parseModelConfig, printModelConfig,
  type MessageDescriptor, type ModelConfig,
} from '../../src/config/index.js';

/** Dynamic batching, latest policy, and every field outside the scheduling choice. */
const FULL_A = `
name: "full_a"
platform: "onnxruntime_onnx"
backend: "onnxruntime"
runtime: "libtriton_onnxruntime.so"
version_policy { latest { num_versions: 2 } }
max_batch_size: 8
input {
  name: "IN" data_type: TYPE_FP32 format: FORMAT_NCHW dims: [3, 4, 4]
  reshape { shape: [48] } is_shape_tensor: true allow_ragged_batch: true optional: true is_non_linear_format_io: true
}
output {
  name: "OUT" data_type: TYPE_INT64 dims: [-1] reshape { shape: [-1] } label_filename: "labels.txt"
  is_shape_tensor: true is_non_linear_format_io: true
}
batch_input { kind: BATCH_ITEM_SHAPE target_name: "T" data_type: TYPE_INT32 source_input: "IN" }
batch_output { target_name: "OUT" kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: "IN" }
optimization {
  graph { level: -1 }
  priority: PRIORITY_MAX
  cuda {
    graphs: true busy_wait_events: true output_copy_stream: true
    graph_spec {
      batch_size: 4
      input { key: "IN" value { dim: [3, 4, 4] } }
      graph_lower_bound { batch_size: 1 input { key: "IN" value { dim: [3, 1, 1] } } }
    }
  }
  execution_accelerators {
    gpu_execution_accelerator { name: "tensorrt" parameters { key: "precision_mode" value: "FP16" } }
    cpu_execution_accelerator { name: "openvino" }
  }
  input_pinned_memory { enable: true }
  output_pinned_memory { enable: false }
  gather_kernel_buffer_threshold: 4
  eager_batching: true
}
dynamic_batching {
  preferred_batch_size: [2, 4]
  max_queue_delay_microseconds: 100
  preserve_ordering: true
  priority_levels: 3
  default_priority_level: 2
  default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 5 allow_timeout_override: true max_queue_size: 10 }
  priority_queue_policy { key: 1 value { max_queue_size: 3 } }
  priority_queue_policy { key: 3 value { default_timeout_microseconds: 9 } }
}
instance_group {
  name: "g" kind: KIND_GPU count: 2
  rate_limiter { resources { name: "R" global: true count: 2 } priority: 2 }
  gpus: [0, 1]
  secondary_devices { kind: KIND_NVDLA device_id: 7 }
  profile: "0"
  passive: true
  host_policy: "gpu_0"
}
default_model_filename: "model.onnx"
cc_model_filenames { key: "7.5" value: "model_75.onnx" }
metric_tags { key: "team" value: "x" }
parameters { key: "p" value { string_value: "v" } }
model_warmup { name: "w" batch_size: 2 inputs { key: "IN" value { data_type: TYPE_FP32 dims: [3, 4, 4] zero_data: true } } count: 3 }
model_warmup { name: "w2" batch_size: 1 inputs { key: "IN" value { data_type: TYPE_FP32 dims: [3, 4, 4] random_data: true } } }
model_warmup { name: "w3" inputs { key: "IN" value { data_type: TYPE_FP32 dims: [3, 4, 4] input_data_file: "raw" } } }
model_operations { op_library_filename: "libop.so" }
model_transaction_policy { decoupled: true }
model_repository_agents { agents { name: "checksum" parameters { key: "MD5:1/model.onnx" value: "abc" } } }
response_cache { enable: true }
model_metrics {
  metric_control {
    metric_identifier { family: "nv_inference_first_response_histogram_ms" }
    histogram_options { buckets: [1, 2.5, 10] }
  }
}
`;

/** Sequence batching with the oldest strategy, every control kind and implicit state; specific versions. */
const FULL_B = `
name: "full_b"
version_policy { specific { versions: [1, 3] } }
sequence_batching {
  oldest { max_candidate_sequences: 4 preferred_batch_size: [2] max_queue_delay_microseconds: 50 preserve_ordering: true }
  max_sequence_idle_microseconds: 5000000
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] } ] },
    { name: "READY" control { kind: CONTROL_SEQUENCE_READY fp32_false_true: [0, 1] } },
    { name: "END" control { kind: CONTROL_SEQUENCE_END bool_false_true: [false, true] } },
    { name: "CORRID" control { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } }
  ]
  state {
    input_name: "IN_STATE" output_name: "OUT_STATE" data_type: TYPE_FP32 dims: [-1]
    initial_state { data_type: TYPE_FP32 dims: [1] zero_data: true name: "zeros" }
    initial_state { data_type: TYPE_FP32 dims: [1] data_file: "init.bin" name: "file" }
    use_same_buffer_for_input_output: true
    use_growable_memory: true
  }
  iterative_sequence: true
}
`;

/** The direct strategy. */
const FULL_C = `
name: "full_c"
sequence_batching { direct { max_queue_delay_microseconds: 10 minimum_slot_utilization: 0.5 } }
`;

/** An ensemble, serving all versions. */
const FULL_D = `
name: "full_d"
platform: "ensemble"
version_policy { all {} }
ensemble_scheduling {
  step { model_name: "m" model_version: -1 input_map { key: "a" value: "b" } output_map { key: "c" value: "d" } model_namespace: "ns" }
  max_inflight_requests: 16
}
`;

const ALL = [FULL_A, FULL_B, FULL_C, FULL_D].map((t, i) => parseModelConfig(t, `full_${i}.pbtxt`));

/** Records `Message.field` for every field holding a non-default value, recursing into sub-messages. */
function collectSetFields(desc: MessageDescriptor, obj: Record<string, unknown>, out: Set<string>): void {
  for (const f of desc.fields) {
    const v = obj[f.name];
    if (v === undefined) continue;
    const values: unknown[] = f.label.kind === 'repeated' ? (v as unknown[]) : f.label.kind === 'map' ? Object.values(v as object) : [v];
    const isSet = f.label.kind !== 'singular' ? values.length > 0 : f.type.kind === 'message' || f.oneof !== undefined || (v !== 0 && v !== '' && v !== false && !/^(TYPE_INVALID|FORMAT_NONE|KIND_AUTO|KIND_NVDLA|BATCH_ELEMENT_COUNT|BATCH_SCATTER_WITH_INPUT_SHAPE|PRIORITY_DEFAULT|REJECT|CONTROL_SEQUENCE_START)$/.test(String(v)));
    if (isSet) out.add(`${desc.name}.${f.name}`);
    // Enums whose only value is the default count as covered by being present at all.
    if (f.type.kind === 'enum' && values.length > 0) out.add(`${desc.name}.${f.name}`);
    if (f.type.kind === 'message') for (const e of values) collectSetFields(messageDescriptor(f.type.name), e as Record<string, unknown>, out);
  }
}

test('the full configs set every field of every message in the schema', () => {
  const set = new Set<string>();
  for (const c of ALL) collectSetFields(messageDescriptor('ModelConfig'), c as unknown as Record<string, unknown>, set);
  const missing = [...MESSAGES.values()].flatMap((m) => m.fields.map((f) => `${m.name}.${f.name}`)).filter((k) => !set.has(k));
  assert.deepEqual(missing, []);
  assert.ok(MESSAGES.size >= 40, `only ${MESSAGES.size} messages in the schema`);
});

test('text round trip: parse → print → parse gives an equal config', () => {
  for (const c of ALL) {
    const printed = printModelConfig(c);
    assert.deepEqual(parseModelConfig(printed, 'printed.pbtxt'), c, printed);
    // Printing is stable.
    assert.equal(printModelConfig(parseModelConfig(printed, 'printed.pbtxt')), printed);
  }
});

test('JSON round trip: parse → JSON → fromJson gives an equal config (also through JSON text)', () => {
  for (const c of ALL) {
    const json = modelConfigToJson(c);
    assert.deepEqual(modelConfigFromJson(json), c);
    assert.deepEqual(modelConfigFromJson(JSON.stringify(json)), c);
  }
});

test('special float values survive both round trips', () => {
  const c: ModelConfig = parseModelConfig('model_metrics { metric_control { histogram_options { buckets: [nan, inf, -inf, -0, 1e-300] } } }', 'f.pbtxt');
  assert.deepEqual(parseModelConfig(printModelConfig(c), 'p'), c);
  const json = modelConfigToJson(c) as { model_metrics: { metric_control: { histogram_options: { buckets: unknown[] } }[] } };
  assert.deepEqual(json.model_metrics.metric_control[0]!.histogram_options.buckets, ['NaN', 'Infinity', '-Infinity', -0, 1e-300]);
  assert.deepEqual(modelConfigFromJson(JSON.parse(JSON.stringify(json))).model_metrics, {
    metric_control: [{ histogram_options: { buckets: [NaN, Infinity, -Infinity, 0, 1e-300] } }],
  });
});
