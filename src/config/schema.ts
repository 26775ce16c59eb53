/**
 * A descriptor of every message, field, enum and oneof of Triton's `model_config.proto` (package `inference`).
 * The text-format parser and printer, the JSON codec and the default filler are all driven by this one table,
 * so a field added here is understood everywhere at once.
 *
 * Names are the proto names; nested types are written with dots from the top-level message
 * (`ModelInstanceGroup.SecondaryDevice.SecondaryDeviceKind`). Fields are listed in *declaration* order, which
 * is the order protobuf's JSON printer uses; the text printer sorts by number instead.
 */

export type ScalarKind = 'string' | 'bool' | 'int32' | 'int64' | 'uint32' | 'uint64' | 'float' | 'double';

export type FieldType =
  | { readonly kind: 'scalar'; readonly scalar: ScalarKind }
  | { readonly kind: 'enum'; readonly name: string }
  | { readonly kind: 'message'; readonly name: string };

export type FieldLabel =
  | { readonly kind: 'singular' }
  | { readonly kind: 'repeated' }
  /** `map<key, value>`: the value type is the field's `type`. */
  | { readonly kind: 'map'; readonly key: ScalarKind };

export interface FieldDescriptor {
  readonly name: string;
  readonly number: number;
  readonly type: FieldType;
  readonly label: FieldLabel;
  /** The oneof group this field belongs to, if any. */
  readonly oneof?: string;
}

export interface MessageDescriptor {
  readonly name: string;
  readonly fields: readonly FieldDescriptor[];
  readonly oneofs: readonly string[];
}

export interface EnumDescriptor {
  readonly name: string;
  /** [value name, number], in declaration order; the first is the proto3 default. */
  readonly values: readonly (readonly [string, number])[];
}

// ---- builders, to keep the table below readable ----

const S = (scalar: ScalarKind): FieldType => ({ kind: 'scalar', scalar });
const E = (name: string): FieldType => ({ kind: 'enum', name });
const M = (name: string): FieldType => ({ kind: 'message', name });

interface FieldOpts { repeated?: boolean; map?: ScalarKind; oneof?: string }

function field(name: string, number: number, type: FieldType, opts: FieldOpts = {}): FieldDescriptor {
  const label: FieldLabel = opts.map ? { kind: 'map', key: opts.map } : opts.repeated ? { kind: 'repeated' } : { kind: 'singular' };
  return {
    name, number, type, label,
    ...(opts.oneof ? { oneof: opts.oneof } : {}),
  };
}

const R = { repeated: true } as const;
const MAP_SS = { map: 'string' } as const;

function message(name: string, fields: FieldDescriptor[]): MessageDescriptor {
  const oneofs: string[] = [];
  for (const f of fields) if (f.oneof && !oneofs.includes(f.oneof)) oneofs.push(f.oneof);
  return { name, fields, oneofs };
}

function enumOf(name: string, names: string[], numbers?: number[]): EnumDescriptor {
  return { name, values: names.map((n, i) => [n, numbers ? numbers[i]! : i] as const) };
}

// ---- enums ----

const ENUM_LIST: EnumDescriptor[] = [
  enumOf('DataType', [
    'TYPE_INVALID', 'TYPE_BOOL', 'TYPE_UINT8', 'TYPE_UINT16', 'TYPE_UINT32', 'TYPE_UINT64', 'TYPE_INT8', 'TYPE_INT16',
    'TYPE_INT32', 'TYPE_INT64', 'TYPE_FP16', 'TYPE_FP32', 'TYPE_FP64', 'TYPE_STRING', 'TYPE_BF16',
  ]),
  enumOf('ModelInstanceGroup.Kind', ['KIND_AUTO', 'KIND_GPU', 'KIND_CPU', 'KIND_MODEL']),
  enumOf('ModelInstanceGroup.SecondaryDevice.SecondaryDeviceKind', ['KIND_NVDLA']),
  enumOf('ModelInput.Format', ['FORMAT_NONE', 'FORMAT_NHWC', 'FORMAT_NCHW']),
  enumOf('BatchInput.Kind', [
    'BATCH_ELEMENT_COUNT', 'BATCH_ACCUMULATED_ELEMENT_COUNT', 'BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO',
    'BATCH_MAX_ELEMENT_COUNT_AS_SHAPE', 'BATCH_ITEM_SHAPE', 'BATCH_ITEM_SHAPE_FLATTEN',
  ]),
  enumOf('BatchOutput.Kind', ['BATCH_SCATTER_WITH_INPUT_SHAPE']),
  enumOf('ModelOptimizationPolicy.ModelPriority', ['PRIORITY_DEFAULT', 'PRIORITY_MAX', 'PRIORITY_MIN']),
  enumOf('ModelQueuePolicy.TimeoutAction', ['REJECT', 'DELAY']),
  enumOf('ModelSequenceBatching.Control.Kind', [
    'CONTROL_SEQUENCE_START', 'CONTROL_SEQUENCE_READY', 'CONTROL_SEQUENCE_END', 'CONTROL_SEQUENCE_CORRID',
  ]),
];

// ---- messages (top-level first, then their nested types, as in the .proto) ----

const MESSAGE_LIST: MessageDescriptor[] = [
  message('ModelRateLimiter.Resource', [
    field('name', 1, S('string')),
    field('global', 2, S('bool')),
    field('count', 3, S('uint32')),
  ]),
  message('ModelRateLimiter', [
    field('resources', 1, M('ModelRateLimiter.Resource'), R),
    field('priority', 2, S('uint32')),
  ]),

  message('ModelInstanceGroup.SecondaryDevice', [
    field('kind', 1, E('ModelInstanceGroup.SecondaryDevice.SecondaryDeviceKind')),
    field('device_id', 2, S('int64')),
  ]),
  message('ModelInstanceGroup', [
    field('name', 1, S('string')),
    field('kind', 4, E('ModelInstanceGroup.Kind')),
    field('count', 2, S('int32')),
    field('rate_limiter', 6, M('ModelRateLimiter')),
    field('gpus', 3, S('int32'), R),
    field('secondary_devices', 8, M('ModelInstanceGroup.SecondaryDevice'), R),
    field('profile', 5, S('string'), R),
    field('passive', 7, S('bool')),
    field('host_policy', 9, S('string')),
  ]),

  message('ModelTensorReshape', [
    field('shape', 1, S('int64'), R),
  ]),

  message('ModelInput', [
    field('name', 1, S('string')),
    field('data_type', 2, E('DataType')),
    field('format', 3, E('ModelInput.Format')),
    field('dims', 4, S('int64'), R),
    field('reshape', 5, M('ModelTensorReshape')),
    field('is_shape_tensor', 6, S('bool')),
    field('allow_ragged_batch', 7, S('bool')),
    field('optional', 8, S('bool')),
    field('is_non_linear_format_io', 9, S('bool')),
  ]),

  message('ModelOutput', [
    field('name', 1, S('string')),
    field('data_type', 2, E('DataType')),
    field('dims', 3, S('int64'), R),
    field('reshape', 5, M('ModelTensorReshape')),
    field('label_filename', 4, S('string')),
    field('is_shape_tensor', 6, S('bool')),
    field('is_non_linear_format_io', 7, S('bool')),
  ]),

  message('BatchInput', [
    field('kind', 1, E('BatchInput.Kind')),
    field('target_name', 2, S('string'), R),
    field('data_type', 3, E('DataType')),
    field('source_input', 4, S('string'), R),
  ]),

  message('BatchOutput', [
    field('target_name', 1, S('string'), R),
    field('kind', 2, E('BatchOutput.Kind')),
    field('source_input', 3, S('string'), R),
  ]),

  message('ModelVersionPolicy.Latest', [field('num_versions', 1, S('uint32'))]),
  message('ModelVersionPolicy.All', []),
  message('ModelVersionPolicy.Specific', [field('versions', 1, S('int64'), R)]),
  message('ModelVersionPolicy', [
    field('latest', 1, M('ModelVersionPolicy.Latest'), { oneof: 'policy_choice' }),
    field('all', 2, M('ModelVersionPolicy.All'), { oneof: 'policy_choice' }),
    field('specific', 3, M('ModelVersionPolicy.Specific'), { oneof: 'policy_choice' }),
  ]),

  message('ModelOptimizationPolicy.Graph', [field('level', 1, S('int32'))]),
  message('ModelOptimizationPolicy.Cuda.GraphSpec.Shape', [field('dim', 1, S('int64'), R)]),
  message('ModelOptimizationPolicy.Cuda.GraphSpec.LowerBound', [
    field('batch_size', 1, S('int32')),
    field('input', 2, M('ModelOptimizationPolicy.Cuda.GraphSpec.Shape'), MAP_SS),
  ]),
  message('ModelOptimizationPolicy.Cuda.GraphSpec', [
    field('batch_size', 1, S('int32')),
    field('input', 2, M('ModelOptimizationPolicy.Cuda.GraphSpec.Shape'), MAP_SS),
    field('graph_lower_bound', 3, M('ModelOptimizationPolicy.Cuda.GraphSpec.LowerBound')),
  ]),
  message('ModelOptimizationPolicy.Cuda', [
    field('graphs', 1, S('bool')),
    field('busy_wait_events', 2, S('bool')),
    field('graph_spec', 3, M('ModelOptimizationPolicy.Cuda.GraphSpec'), R),
    field('output_copy_stream', 4, S('bool')),
  ]),
  message('ModelOptimizationPolicy.ExecutionAccelerators.Accelerator', [
    field('name', 1, S('string')),
    field('parameters', 2, S('string'), MAP_SS),
  ]),
  message('ModelOptimizationPolicy.ExecutionAccelerators', [
    field('gpu_execution_accelerator', 1, M('ModelOptimizationPolicy.ExecutionAccelerators.Accelerator'), R),
    field('cpu_execution_accelerator', 2, M('ModelOptimizationPolicy.ExecutionAccelerators.Accelerator'), R),
  ]),
  message('ModelOptimizationPolicy.PinnedMemoryBuffer', [field('enable', 1, S('bool'))]),
  message('ModelOptimizationPolicy', [
    field('graph', 1, M('ModelOptimizationPolicy.Graph')),
    field('priority', 2, E('ModelOptimizationPolicy.ModelPriority')),
    field('cuda', 3, M('ModelOptimizationPolicy.Cuda')),
    field('execution_accelerators', 4, M('ModelOptimizationPolicy.ExecutionAccelerators')),
    field('input_pinned_memory', 5, M('ModelOptimizationPolicy.PinnedMemoryBuffer')),
    field('output_pinned_memory', 6, M('ModelOptimizationPolicy.PinnedMemoryBuffer')),
    field('gather_kernel_buffer_threshold', 7, S('uint32')),
    field('eager_batching', 8, S('bool')),
  ]),

  message('ModelQueuePolicy', [
    field('timeout_action', 1, E('ModelQueuePolicy.TimeoutAction')),
    field('default_timeout_microseconds', 2, S('uint64')),
    field('allow_timeout_override', 3, S('bool')),
    field('max_queue_size', 4, S('uint32')),
  ]),

  message('ModelDynamicBatching', [
    field('preferred_batch_size', 1, S('int32'), R),
    field('max_queue_delay_microseconds', 2, S('uint64')),
    field('preserve_ordering', 3, S('bool')),
    field('priority_levels', 4, S('uint64')),
    field('default_priority_level', 5, S('uint64')),
    field('default_queue_policy', 6, M('ModelQueuePolicy')),
    field('priority_queue_policy', 7, M('ModelQueuePolicy'), { map: 'uint64' }),
  ]),

  message('ModelSequenceBatching.Control', [
    field('kind', 1, E('ModelSequenceBatching.Control.Kind')),
    field('int32_false_true', 2, S('int32'), R),
    field('fp32_false_true', 3, S('float'), R),
    field('bool_false_true', 5, S('bool'), R),
    field('data_type', 4, E('DataType')),
  ]),
  message('ModelSequenceBatching.ControlInput', [
    field('name', 1, S('string')),
    field('control', 2, M('ModelSequenceBatching.Control'), R),
  ]),
  message('ModelSequenceBatching.InitialState', [
    field('data_type', 1, E('DataType')),
    field('dims', 2, S('int64'), R),
    field('zero_data', 3, S('bool'), { oneof: 'state_data' }),
    field('data_file', 4, S('string'), { oneof: 'state_data' }),
    field('name', 5, S('string')),
  ]),
  message('ModelSequenceBatching.State', [
    field('input_name', 1, S('string')),
    field('output_name', 2, S('string')),
    field('data_type', 3, E('DataType')),
    field('dims', 4, S('int64'), R),
    field('initial_state', 5, M('ModelSequenceBatching.InitialState'), R),
    field('use_same_buffer_for_input_output', 6, S('bool')),
    field('use_growable_memory', 7, S('bool')),
  ]),
  message('ModelSequenceBatching.StrategyDirect', [
    field('max_queue_delay_microseconds', 1, S('uint64')),
    field('minimum_slot_utilization', 2, S('float')),
  ]),
  message('ModelSequenceBatching.StrategyOldest', [
    field('max_candidate_sequences', 1, S('int32')),
    field('preferred_batch_size', 2, S('int32'), R),
    field('max_queue_delay_microseconds', 3, S('uint64')),
    field('preserve_ordering', 4, S('bool')),
  ]),
  message('ModelSequenceBatching', [
    field('direct', 3, M('ModelSequenceBatching.StrategyDirect'), { oneof: 'strategy_choice' }),
    field('oldest', 4, M('ModelSequenceBatching.StrategyOldest'), { oneof: 'strategy_choice' }),
    field('max_sequence_idle_microseconds', 1, S('uint64')),
    field('control_input', 2, M('ModelSequenceBatching.ControlInput'), R),
    field('state', 5, M('ModelSequenceBatching.State'), R),
    field('iterative_sequence', 6, S('bool')),
  ]),

  message('ModelEnsembling.Step', [
    field('model_name', 1, S('string')),
    field('model_version', 2, S('int64')),
    field('input_map', 3, S('string'), MAP_SS),
    field('output_map', 4, S('string'), MAP_SS),
    field('model_namespace', 5, S('string')),
  ]),
  message('ModelEnsembling', [
    field('step', 1, M('ModelEnsembling.Step'), R),
    // Only this spelling: `max_inflight_responses` never shipped in a release proto, so protobuf refuses it.
    field('max_inflight_requests', 2, S('uint32')),
  ]),

  message('ModelParameter', [field('string_value', 1, S('string'))]),

  message('ModelWarmup.Input', [
    field('data_type', 1, E('DataType')),
    field('dims', 2, S('int64'), R),
    field('zero_data', 3, S('bool'), { oneof: 'input_data_type' }),
    field('random_data', 4, S('bool'), { oneof: 'input_data_type' }),
    field('input_data_file', 5, S('string'), { oneof: 'input_data_type' }),
  ]),
  message('ModelWarmup', [
    field('name', 1, S('string')),
    field('batch_size', 2, S('uint32')),
    field('inputs', 3, M('ModelWarmup.Input'), MAP_SS),
    field('count', 4, S('uint32')),
  ]),

  message('ModelOperations', [field('op_library_filename', 1, S('string'), R)]),
  message('ModelTransactionPolicy', [field('decoupled', 1, S('bool'))]),

  message('ModelRepositoryAgents.Agent', [
    field('name', 1, S('string')),
    field('parameters', 2, S('string'), MAP_SS),
  ]),
  message('ModelRepositoryAgents', [field('agents', 1, M('ModelRepositoryAgents.Agent'), R)]),

  message('ModelResponseCache', [field('enable', 1, S('bool'))]),

  message('ModelMetrics.MetricControl.MetricIdentifier', [field('family', 1, S('string'))]),
  message('ModelMetrics.MetricControl.HistogramOptions', [field('buckets', 1, S('double'), R)]),
  message('ModelMetrics.MetricControl', [
    field('metric_identifier', 1, M('ModelMetrics.MetricControl.MetricIdentifier')),
    field('histogram_options', 2, M('ModelMetrics.MetricControl.HistogramOptions'), { oneof: 'metric_options' }),
  ]),
  message('ModelMetrics', [field('metric_control', 1, M('ModelMetrics.MetricControl'), R)]),

  message('ModelConfig', [
    field('name', 1, S('string')),
    field('platform', 2, S('string')),
    field('backend', 17, S('string')),
    field('runtime', 25, S('string')),
    field('version_policy', 3, M('ModelVersionPolicy')),
    field('max_batch_size', 4, S('int32')),
    field('input', 5, M('ModelInput'), R),
    field('output', 6, M('ModelOutput'), R),
    field('batch_input', 20, M('BatchInput'), R),
    field('batch_output', 21, M('BatchOutput'), R),
    field('optimization', 12, M('ModelOptimizationPolicy')),
    field('dynamic_batching', 11, M('ModelDynamicBatching'), { oneof: 'scheduling_choice' }),
    field('sequence_batching', 13, M('ModelSequenceBatching'), { oneof: 'scheduling_choice' }),
    field('ensemble_scheduling', 15, M('ModelEnsembling'), { oneof: 'scheduling_choice' }),
    field('instance_group', 7, M('ModelInstanceGroup'), R),
    field('default_model_filename', 8, S('string')),
    field('cc_model_filenames', 9, S('string'), MAP_SS),
    field('metric_tags', 10, S('string'), MAP_SS),
    field('parameters', 14, M('ModelParameter'), MAP_SS),
    field('model_warmup', 16, M('ModelWarmup'), R),
    field('model_operations', 18, M('ModelOperations')),
    field('model_transaction_policy', 19, M('ModelTransactionPolicy')),
    field('model_repository_agents', 23, M('ModelRepositoryAgents')),
    field('response_cache', 24, M('ModelResponseCache')),
    field('model_metrics', 26, M('ModelMetrics')),
  ]),
];

export const PACKAGE = 'inference';

export const MESSAGES: ReadonlyMap<string, MessageDescriptor> = new Map(MESSAGE_LIST.map((m) => [m.name, m]));
export const ENUMS: ReadonlyMap<string, EnumDescriptor> = new Map(ENUM_LIST.map((e) => [e.name, e]));

export function messageDescriptor(name: string): MessageDescriptor {
  const d = MESSAGES.get(name);
  if (!d) throw new Error(`unknown message type ${name}`);
  return d;
}

export function enumDescriptor(name: string): EnumDescriptor {
  const d = ENUMS.get(name);
  if (!d) throw new Error(`unknown enum type ${name}`);
  return d;
}

/** Field lookup by name, built once per message. */
const BY_NAME = new Map<string, Map<string, FieldDescriptor>>();
for (const m of MESSAGE_LIST) {
  const byName = new Map<string, FieldDescriptor>();
  for (const f of m.fields) byName.set(f.name, f);
  BY_NAME.set(m.name, byName);
}

/** A field of a message by name; also works for synthetic map-entry descriptors. */
export function findField(message: MessageDescriptor, name: string): FieldDescriptor | undefined {
  const byName = BY_NAME.get(message.name);
  return byName ? byName.get(name) : message.fields.find((f) => f.name === name);
}

/** The proto3 default of a singular scalar or enum field. */
export function scalarDefault(type: FieldType): string | number | boolean {
  if (type.kind === 'enum') return enumDescriptor(type.name).values[0]![0];
  if (type.kind === 'message') throw new Error('messages have no scalar default');
  switch (type.scalar) {
    case 'string': return '';
    case 'bool': return false;
    default: return 0;
  }
}

export function isSixtyFourBit(kind: ScalarKind): boolean {
  return kind === 'int64' || kind === 'uint64';
}
