/**
 * `ModelConfig` and its parts, with Triton's snake_case field names (the boundary keeps Triton's spelling).
 *
 * Shape convention, guaranteed by every producer in this folder (text parser, JSON reader, `newMessage`):
 * every message object that is present has all its scalar fields (proto3 defaults: 0, '', false, first enum
 * name), repeated fields ([]) and map fields ({}) filled. Sub-message fields and oneof members are optional and
 * present only when set. Enums are their value names. 64-bit integers are JS numbers. Map fields are plain
 * objects; a uint64 key (priority_queue_policy) is its decimal string.
 *
 * The descriptors in schema.ts are the source of truth; these interfaces mirror them for the compiler.
 */

export type DataType =
  | 'TYPE_INVALID' | 'TYPE_BOOL' | 'TYPE_UINT8' | 'TYPE_UINT16' | 'TYPE_UINT32' | 'TYPE_UINT64'
  | 'TYPE_INT8' | 'TYPE_INT16' | 'TYPE_INT32' | 'TYPE_INT64' | 'TYPE_FP16' | 'TYPE_FP32' | 'TYPE_FP64'
  | 'TYPE_STRING' | 'TYPE_BF16';

export type InstanceGroupKind = 'KIND_AUTO' | 'KIND_GPU' | 'KIND_CPU' | 'KIND_MODEL';
export type SecondaryDeviceKind = 'KIND_NVDLA';
export type InputFormat = 'FORMAT_NONE' | 'FORMAT_NHWC' | 'FORMAT_NCHW';
export type BatchInputKind =
  | 'BATCH_ELEMENT_COUNT' | 'BATCH_ACCUMULATED_ELEMENT_COUNT' | 'BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO'
  | 'BATCH_MAX_ELEMENT_COUNT_AS_SHAPE' | 'BATCH_ITEM_SHAPE' | 'BATCH_ITEM_SHAPE_FLATTEN';
export type BatchOutputKind = 'BATCH_SCATTER_WITH_INPUT_SHAPE';
export type ModelPriority = 'PRIORITY_DEFAULT' | 'PRIORITY_MAX' | 'PRIORITY_MIN';
export type TimeoutAction = 'REJECT' | 'DELAY';
export type ControlKind = 'CONTROL_SEQUENCE_START' | 'CONTROL_SEQUENCE_READY' | 'CONTROL_SEQUENCE_END' | 'CONTROL_SEQUENCE_CORRID';

// ---- instance groups ----

export interface RateLimiterResource { name: string; global: boolean; count: number }
export interface ModelRateLimiter { resources: RateLimiterResource[]; priority: number }

export interface SecondaryDevice { kind: SecondaryDeviceKind; device_id: number }

export interface ModelInstanceGroup {
  name: string;
  kind: InstanceGroupKind;
  count: number;
  rate_limiter?: ModelRateLimiter;
  gpus: number[];
  secondary_devices: SecondaryDevice[];
  profile: string[];
  passive: boolean;
  host_policy: string;
}

// ---- inputs and outputs ----

export interface ModelTensorReshape { shape: number[] }

export interface ModelInput {
  name: string;
  data_type: DataType;
  format: InputFormat;
  dims: number[];
  reshape?: ModelTensorReshape;
  is_shape_tensor: boolean;
  allow_ragged_batch: boolean;
  optional: boolean;
  is_non_linear_format_io: boolean;
}

export interface ModelOutput {
  name: string;
  data_type: DataType;
  dims: number[];
  reshape?: ModelTensorReshape;
  label_filename: string;
  is_shape_tensor: boolean;
  is_non_linear_format_io: boolean;
}

export interface BatchInput { kind: BatchInputKind; target_name: string[]; data_type: DataType; source_input: string[] }
export interface BatchOutput { target_name: string[]; kind: BatchOutputKind; source_input: string[] }

// ---- version policy (oneof policy_choice) ----

export interface ModelVersionPolicy {
  latest?: { num_versions: number };
  all?: Record<string, never>;
  specific?: { versions: number[] };
}

// ---- optimization ----

export interface GraphSpecShape { dim: number[] }
export interface GraphSpecLowerBound { batch_size: number; input: Record<string, GraphSpecShape> }
export interface GraphSpec { batch_size: number; input: Record<string, GraphSpecShape>; graph_lower_bound?: GraphSpecLowerBound }
export interface CudaOptimization { graphs: boolean; busy_wait_events: boolean; graph_spec: GraphSpec[]; output_copy_stream: boolean }
export interface ExecutionAccelerator { name: string; parameters: Record<string, string> }
export interface ExecutionAccelerators {
  gpu_execution_accelerator: ExecutionAccelerator[];
  cpu_execution_accelerator: ExecutionAccelerator[];
}
export interface PinnedMemoryBuffer { enable: boolean }

export interface ModelOptimizationPolicy {
  graph?: { level: number };
  priority: ModelPriority;
  cuda?: CudaOptimization;
  execution_accelerators?: ExecutionAccelerators;
  input_pinned_memory?: PinnedMemoryBuffer;
  output_pinned_memory?: PinnedMemoryBuffer;
  gather_kernel_buffer_threshold: number;
  eager_batching: boolean;
}

// ---- scheduling ----

export interface ModelQueuePolicy {
  timeout_action: TimeoutAction;
  default_timeout_microseconds: number;
  allow_timeout_override: boolean;
  max_queue_size: number;
}

export interface ModelDynamicBatching {
  preferred_batch_size: number[];
  max_queue_delay_microseconds: number;
  preserve_ordering: boolean;
  priority_levels: number;
  default_priority_level: number;
  default_queue_policy?: ModelQueuePolicy;
  /** Keyed by priority level as a decimal string. */
  priority_queue_policy: Record<string, ModelQueuePolicy>;
}

export interface SequenceControl {
  kind: ControlKind;
  int32_false_true: number[];
  fp32_false_true: number[];
  bool_false_true: boolean[];
  data_type: DataType;
}
export interface SequenceControlInput { name: string; control: SequenceControl[] }

export interface SequenceInitialState {
  data_type: DataType;
  dims: number[];
  /** oneof state_data */
  zero_data?: boolean;
  data_file?: string;
  name: string;
}

export interface SequenceState {
  input_name: string;
  output_name: string;
  data_type: DataType;
  dims: number[];
  initial_state: SequenceInitialState[];
  use_same_buffer_for_input_output: boolean;
  use_growable_memory: boolean;
}

export interface SequenceStrategyDirect { max_queue_delay_microseconds: number; minimum_slot_utilization: number }
export interface SequenceStrategyOldest {
  max_candidate_sequences: number;
  preferred_batch_size: number[];
  max_queue_delay_microseconds: number;
  preserve_ordering: boolean;
}

export interface ModelSequenceBatching {
  /** oneof strategy_choice */
  direct?: SequenceStrategyDirect;
  oldest?: SequenceStrategyOldest;
  max_sequence_idle_microseconds: number;
  control_input: SequenceControlInput[];
  state: SequenceState[];
  iterative_sequence: boolean;
}

export interface EnsembleStep {
  model_name: string;
  model_version: number;
  /** composing-model input name → ensemble tensor name */
  input_map: Record<string, string>;
  /** composing-model output name → ensemble tensor name */
  output_map: Record<string, string>;
  model_namespace: string;
}
export interface ModelEnsembling { step: EnsembleStep[]; max_inflight_requests: number }

// ---- small messages ----

export interface ModelParameter { string_value: string }

export interface WarmupInput {
  data_type: DataType;
  dims: number[];
  /** oneof input_data_type */
  zero_data?: boolean;
  random_data?: boolean;
  input_data_file?: string;
}
export interface ModelWarmup { name: string; batch_size: number; inputs: Record<string, WarmupInput>; count: number }

export interface ModelOperations { op_library_filename: string[] }
export interface ModelTransactionPolicy { decoupled: boolean }
export interface RepositoryAgent { name: string; parameters: Record<string, string> }
export interface ModelRepositoryAgents { agents: RepositoryAgent[] }
export interface ModelResponseCache { enable: boolean }

export interface MetricControl {
  metric_identifier?: { family: string };
  /** oneof metric_options */
  histogram_options?: { buckets: number[] };
}
export interface ModelMetrics { metric_control: MetricControl[] }

// ---- the config ----

export interface ModelConfig {
  name: string;
  platform: string;
  backend: string;
  runtime: string;
  version_policy?: ModelVersionPolicy;
  max_batch_size: number;
  input: ModelInput[];
  output: ModelOutput[];
  batch_input: BatchInput[];
  batch_output: BatchOutput[];
  optimization?: ModelOptimizationPolicy;
  /** oneof scheduling_choice: at most one of the next three. */
  dynamic_batching?: ModelDynamicBatching;
  sequence_batching?: ModelSequenceBatching;
  ensemble_scheduling?: ModelEnsembling;
  instance_group: ModelInstanceGroup[];
  default_model_filename: string;
  cc_model_filenames: Record<string, string>;
  metric_tags: Record<string, string>;
  parameters: Record<string, ModelParameter>;
  model_warmup: ModelWarmup[];
  model_operations?: ModelOperations;
  model_transaction_policy?: ModelTransactionPolicy;
  model_repository_agents?: ModelRepositoryAgents;
  response_cache?: ModelResponseCache;
  model_metrics?: ModelMetrics;
}
