/**
 * Core's `ValidateModelConfig` and friends, on one normalized config. Each rule throws an INVALID_ARG
 * NereidError worded like Triton's message for the same mistake. Checks that need other models (an ensemble
 * step's tensor types) or the model files belong to the loader and backends, not here.
 *
 * Deliberate difference: KIND_GPU groups pass, with any device id that is not negative. Triton refuses them on a
 * build without GPUs; Nereid runs them on CPU and the loader logs a warning.
 */
import { NereidError } from '../errors.js';
import type {
  BatchInput, BatchOutput, ControlKind, ModelConfig, ModelDynamicBatching, ModelInput, ModelOutput, ModelSequenceBatching,
} from './types.js';
import { PLATFORM_BACKEND } from './normalize.js';

export interface ValidateOptions {
  /** The model's folder name, which the config's `name` must equal. */
  readonly modelName: string;
  /**
   * Auto-complete on (Triton's default): core checks inputs and outputs only once the backend has completed
   * them, after the folder name and the instance groups. Off (--disable-auto-complete-config): right after
   * `ValidateModelConfig`, as the repository reads the config.
   */
  readonly autoComplete?: boolean;
}

const fail = (message: string): never => {
  throw new NereidError('INVALID_ARG', message);
};

/**
 * All checks, in the order a repository load in core meets them, so that a config with several faults reports
 * the one Triton reports. model_repository_manager.cc runs `ValidateModelConfig`, then `ValidateModelIOConfig`
 * only when auto-complete is off, then the directory name; backend_model.cc `TritonModel::Create` then runs
 * `ValidateInstanceGroup`, and model.cc `Model::Init` runs `ValidateModelConfig` and `ValidateModelIOConfig`
 * once the backend has auto-completed the config. The loader calls the stages one by one, with the backend's
 * own work between them.
 */
export function validateModelConfig(cfg: ModelConfig, opts: ValidateOptions): void {
  validateModelSettings(cfg);
  const strict = opts.autoComplete === false;
  if (strict) validateModelIO(cfg);
  validateDirectoryName(cfg, opts.modelName);
  validateInstanceGroups(cfg);
  if (!strict) validateModelIO(cfg);
}

/** Core's `ValidateModelConfig`: everything but the inputs, the outputs and the instance groups. */
export function validateModelSettings(cfg: ModelConfig): void {
  validatePlatform(cfg);
  if (cfg.max_batch_size < 0) fail(`'max_batch_size' must be non-negative value for ${cfg.name}`);
  if (cfg.dynamic_batching) validateDynamicBatching(cfg, cfg.dynamic_batching);
  if (cfg.sequence_batching) validateSequenceBatching(cfg, cfg.sequence_batching);
  if (cfg.ensemble_scheduling) validateEnsemble(cfg);
  else if (cfg.platform === 'ensemble') fail(`ensemble scheduling must be set for ensemble ${cfg.name} whose platform is ensemble`);
  validateDecoupledCache(cfg);
  validateMetrics(cfg);
}

/** model_repository_manager.cc: a model's folder is named after it, so two folders cannot hold one model. */
export function validateDirectoryName(cfg: ModelConfig, modelName: string): void {
  if (cfg.name !== modelName) {
    fail(`unexpected directory name '${modelName}' for model '${cfg.name}', directory name must equal model name`);
  }
}

// ---- platform and backend ----

function validatePlatform(cfg: ModelConfig): void {
  if (!cfg.backend) {
    if (cfg.platform !== 'ensemble') fail(`unexpected platform type '${cfg.platform}' for ${cfg.name}`);
    return;
  }
  if (cfg.platform === 'ensemble') {
    fail(`Ensemble model '${cfg.name}' must have platform type '${cfg.platform}' and empty backend type`);
  }
  // Core compares backend *types*, and only for a backend it knows, which must come with one of its own
  // platforms. A backend it does not know (python, a custom one) may name any platform, a known one included.
  if (!KNOWN_BACKENDS.has(cfg.backend)) return;
  const platformType = PLATFORM_BACKEND[cfg.platform] ?? '';
  if (platformType !== cfg.backend) fail(`unexpected 'platform' and 'backend' pair, got:${cfg.platform}, ${cfg.backend}`);
}

const KNOWN_BACKENDS = new Set(Object.values(PLATFORM_BACKEND));

// ---- inputs and outputs ----

const WILDCARD = -1;

/** Core's `ValidateModelIOConfig`: each input, each output, then the batch inputs and outputs. */
export function validateModelIO(cfg: ModelConfig): void {
  const suffix = ` for ${cfg.name}`;
  const wrap = (check: () => void): void => {
    try {
      check();
    } catch (e) {
      if (e instanceof Error) e.message += suffix;
      throw e;
    }
  };
  for (const io of cfg.input) wrap(() => validateInput(io, cfg));
  for (const io of cfg.output) wrap(() => validateOutput(io, cfg));
  wrap(() => validateBatchIO(cfg));
}

function validateInput(io: ModelInput, cfg: ModelConfig): void {
  validateShape(io, cfg.max_batch_size, 'model input');
  if ((io.format === 'FORMAT_NHWC' || io.format === 'FORMAT_NCHW') && io.dims.length !== 3) {
    fail(`model input NHWC/NCHW require 3 dims`);
  }
  validateTensorRtOnly(io, cfg.platform);
  validateNonLinearDims(io, 'input');
}

function validateOutput(io: ModelOutput, cfg: ModelConfig): void {
  validateShape(io, cfg.max_batch_size, 'model output');
  validateTensorRtOnly(io, cfg.platform);
  validateNonLinearDims(io, 'output');
}

function validateTensorRtOnly(io: ModelInput | ModelOutput, platform: string): void {
  if (platform === 'tensorrt_plan') return;
  if (io.is_shape_tensor) fail('shape tensors are only supported for TensorRT platform');
  if (io.is_non_linear_format_io) fail('Non-linear IO format is only supported for the TensorRT platform');
}

function validateNonLinearDims(io: ModelInput | ModelOutput, kind: 'input' | 'output'): void {
  if (io.is_non_linear_format_io && io.dims.length !== 3) fail(`Non-linear IO format ${kind} requires 3 dims`);
}

/** Core's `ValidateIOShape`: named, typed, non-empty dims, and a reshape with the same element count. */
function validateShape(io: ModelInput | ModelOutput, mbs: number, kind: string): void {
  const prefix = `${kind} '${io.name}'`;
  if (!io.name) fail(`${kind} must specify 'name'`);
  if (io.data_type === 'TYPE_INVALID') fail(`${prefix} must specify 'data_type'`);
  if (io.dims.length === 0) fail(`${prefix} must specify 'dims'`);
  if (io.reshape && io.reshape.shape.length === 0 && mbs === 0) {
    fail(`${prefix} cannot have empty reshape for non-batching model as scalar tensors are not supported`);
  }
  const badDim = (d: number): boolean => d < 1 && d !== WILDCARD;
  if (io.dims.some(badDim)) fail(`${prefix} dimension must be integer >= 1, or ${WILDCARD} to indicate a variable-size dimension`);
  if (!io.reshape) return;
  const shape = io.reshape.shape;
  if (shape.some(badDim)) {
    fail(`${prefix} reshape dimensions must be integer >= 1, or ${WILDCARD} to indicate a variable-size dimension`);
  }
  // Between variable-size dims, each run of fixed dims must hold as many elements in dims as in reshape
  // ([2, 4, -1, 6] → [8, -1, 1, 6] is fine); with no variable dims this is the plain element count.
  const dimRuns = runs(io.dims);
  const reshapeRuns = runs(shape);
  if (dimRuns.length !== reshapeRuns.length) {
    if (dimRuns.length === 1 || reshapeRuns.length === 1) fail(`${prefix} has different size for dims and reshape`);
    fail(`${prefix} has different number of variable-size dimensions for dims and reshape`);
  }
  if (dimRuns.some((n, i) => n !== reshapeRuns[i])) fail(`${prefix} has different size for dims and reshape`);
}

/** Element counts of the runs of fixed dims between variable (-1) dims. */
function runs(dims: readonly number[]): number[] {
  const out: number[] = [];
  let n = 1;
  for (const d of dims) {
    if (d === WILDCARD) { out.push(n); n = 1; } else n *= d;
  }
  out.push(n);
  return out;
}

function validateBatchIO(cfg: ModelConfig): void {
  const inputs = new Set(cfg.input.map((i) => i.name));
  const outputs = new Set(cfg.output.map((o) => o.name));
  const sourceCount = (b: BatchInput | BatchOutput, what: string): void => {
    if (b.source_input.length !== 1) fail(`${what} kind '${b.kind}' expects 1 source input, got ${b.source_input.length}`);
  };
  const sourceNames = (b: BatchInput | BatchOutput): void => {
    for (const s of b.source_input) if (!inputs.has(s)) fail(`unknown source input name '${s}'`);
  };
  // Core's `ValidateBatchIO` checks a batch input's data type before its source names.
  for (const b of cfg.batch_input) {
    sourceCount(b, 'batch input');
    if (b.data_type !== 'TYPE_INT32' && b.data_type !== 'TYPE_FP32') fail('batch input data type must be TYPE_INT32 or TYPE_FP32');
    sourceNames(b);
  }
  for (const b of cfg.batch_output) {
    sourceCount(b, 'batch output');
    sourceNames(b);
    const seen = new Set<string>();
    for (const t of b.target_name) {
      if (!outputs.has(t)) fail(`unknown target output name '${t}'`);
      if (seen.has(t)) fail(`target output name '${t}' can only be specified once`);
      seen.add(t);
    }
  }
}

// ---- scheduling ----

function validatePreferred(sizes: readonly number[], cfg: ModelConfig, what: string): void {
  for (const s of sizes) {
    if (s <= 0) fail(`${what} must be positive for ${cfg.name}`);
    if (s > cfg.max_batch_size) fail(`${what} must be <= max batch size for ${cfg.name}`);
  }
}

function validateDynamicBatching(cfg: ModelConfig, db: ModelDynamicBatching): void {
  validatePreferred(db.preferred_batch_size, cfg, 'dynamic batching preferred size');
  const levels = db.priority_levels;
  if (levels !== 0) {
    const inRange = (l: number): boolean => l >= 1 && l <= levels;
    if (!inRange(db.default_priority_level)) fail(`default priority level must be in range [1, ${levels}] for ${cfg.name}`);
    for (const key of Object.keys(db.priority_queue_policy)) {
      if (!inRange(Number(key))) fail(`priority queue policy must have priority level in range [1, ${levels}] for ${cfg.name}`);
    }
  }
  if (!db.preserve_ordering) return;
  if (levels > 1) fail(`Only one priority level is allowed when 'preserve_ordering' is true for ${cfg.name}`);
  const policies = [db.default_queue_policy, ...Object.values(db.priority_queue_policy)];
  for (const p of policies) {
    if (p && p.default_timeout_microseconds !== 0 && p.timeout_action === 'DELAY') {
      fail(`Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true for ${cfg.name}`);
    }
  }
}

function validateSequenceBatching(cfg: ModelConfig, sb: ModelSequenceBatching): void {
  if (cfg.response_cache?.enable) {
    fail(`Response Cache does not currently support model ${cfg.name} with sequence batching scheduler. Please disable the response cache.`);
  }
  for (const kind of ['CONTROL_SEQUENCE_START', 'CONTROL_SEQUENCE_END', 'CONTROL_SEQUENCE_READY'] as const) {
    findControl(cfg, sb, kind, (c) => validateBooleanControl(cfg, c, kind));
  }
  validateCorridControl(cfg, sb);
  if (sb.oldest) validatePreferred(sb.oldest.preferred_batch_size, cfg, 'sequence batching preferred batch size');
  const util = sb.direct?.minimum_slot_utilization ?? 0;
  if (util < 0 || util > 1) fail(`sequence batching minimum slot utilization must be in range (0.0, 1.0] for ${cfg.name}`);
}

type Control = ModelSequenceBatching['control_input'][number]['control'][number];

/**
 * Core's walk over `control_input` for one control kind: every entry needs a name, no name may appear twice,
 * and the kind may be given once; `check` runs on the control as it is met. Core walks once per kind and
 * stops at the first fault in entry order.
 */
function findControl(cfg: ModelConfig, sb: ModelSequenceBatching, kind: ControlKind, check: (c: Control) => void): Control | undefined {
  const seen = new Set<string>();
  let found: Control | undefined;
  for (const ci of sb.control_input) {
    if (!ci.name) fail(`sequence batching control tensor must have a name for ${cfg.name}`);
    if (seen.has(ci.name)) fail(`sequence batching control tensor '${ci.name}' is specified for multiple control kinds for ${cfg.name}`);
    seen.add(ci.name);
    for (const c of ci.control) {
      if (c.kind !== kind) continue;
      if (found) fail(`sequence batching specifies multiple ${kind} tensors for ${cfg.name}`);
      found = c;
      check(c);
    }
  }
  return found;
}

/** Exactly one of the false/true lists, with two entries; core sets no rule on `data_type` here. */
function validateBooleanControl(cfg: ModelConfig, c: Control, kind: ControlKind): void {
  const lists = { int32_false_true: c.int32_false_true, fp32_false_true: c.fp32_false_true, bool_false_true: c.bool_false_true };
  const given = Object.entries(lists).filter(([, l]) => l.length > 0);
  const where = `for ${kind} for ${cfg.name}`;
  if (given.length === 0) fail(`sequence batching must specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' ${where}`);
  if (given.length > 1) fail(`sequence batching specifies more than one from 'int32_false_true', 'fp32_false_true' and 'bool_false_true' ${where}`);
  const [field, list] = given[0]!;
  if (list.length !== 2) fail(`sequence batching control '${field}' must have exactly 2 entries ${where}`);
}

const CORRID_TYPES = new Set(['TYPE_UINT64', 'TYPE_INT64', 'TYPE_UINT32', 'TYPE_INT32', 'TYPE_STRING']);

function validateCorridControl(cfg: ModelConfig, sb: ModelSequenceBatching): void {
  const kind = 'CONTROL_SEQUENCE_CORRID';
  const found = findControl(cfg, sb, kind, (c) => {
    if (c.int32_false_true.length || c.fp32_false_true.length || c.bool_false_true.length) {
      fail(`sequence batching must not specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for ${kind} for ${cfg.name}`);
    }
  });
  if (found && !CORRID_TYPES.has(found.data_type)) {
    fail(`unexpected data type for control ${kind} for ${cfg.name}. Allowed data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING`);
  }
}

// ---- ensembles ----

interface EnsembleTensor { readonly name: string; ready: boolean; isOutput: boolean; prev: EnsembleTensor[]; next: EnsembleTensor[] }

/** Core's `ValidateEnsembleSchedulingConfig`: the checks that need only this config. */
function validateEnsemble(cfg: ModelConfig): void {
  const name = cfg.name;
  if (cfg.platform !== 'ensemble') fail(`ensemble scheduling cannot be set for model '${name}' whose platform is not ensemble`);
  if (cfg.instance_group.length !== 0) fail(`instance group should not be specified for ensemble '${name}'`);
  if (cfg.optimization) fail(`optimization should not be specified for ensemble '${name}'`);
  if (cfg.model_warmup.length !== 0) fail(`model_warmup can not be specified for ensemble '${name}'`);
  const steps = cfg.ensemble_scheduling!.step;
  if (steps.length === 0) fail(`must specify 'step' for ensemble '${name}'`);
  const tensors = buildEnsembleGraph(cfg);
  propagateReadiness(cfg, tensors);
  const outputs = new Set<string>();
  for (const o of cfg.output) {
    const t = tensors.get(o.name);
    if (!t) fail(`ensemble output '${o.name}' for ensemble ${name}' is not used`);
    if (!t!.ready) fail(`output '${o.name}' for ensemble '${name}' is not written${notConnected(o.name, t!)}`);
    outputs.add(o.name);
  }
  for (const [tname, t] of tensors) {
    if (outputs.has(tname)) continue;
    if (!t.ready || t.next.length === 0) fail(`ensemble tensor '${tname}' is unused in ensemble '${name}'`);
  }
}

/**
 * Core names the first tensor it finds, walking back from an unwritten output through not-ready tensors, that
 * has nothing not-ready before it: the place where the flow is cut.
 */
function notConnected(outputName: string, output: EnsembleTensor): string {
  let last = output;
  let prev: EnsembleTensor[] | undefined = output.prev;
  const seen = new Set<string>();
  while (prev && prev.length > 0) {
    const nodes: EnsembleTensor[] = prev;
    prev = undefined;
    for (const n of nodes) {
      if (!n.ready && !seen.has(n.name)) {
        seen.add(n.name);
        last = n;
        prev = n.prev;
        break;
      }
    }
  }
  return last.name === outputName ? '' : `: at least one of its depending tensors, '${last.name}', is not connected`;
}

/** Tensors by name; an edge runs from each input tensor of a step to each of its output tensors. */
function buildEnsembleGraph(cfg: ModelConfig): Map<string, EnsembleTensor> {
  const tensors = new Map<string, EnsembleTensor>();
  const get = (n: string): EnsembleTensor => {
    let t = tensors.get(n);
    if (!t) tensors.set(n, (t = { name: n, ready: false, isOutput: false, prev: [], next: [] }));
    return t;
  };
  cfg.ensemble_scheduling!.step.forEach((step, i) => {
    const where = `in step ${i} of ensemble '${cfg.name}'`;
    if (!step.model_name) fail(`must specify 'model_name' ${where}`);
    if (Object.keys(step.input_map).length === 0) fail(`must specify 'input_map' ${where}`);
    if (Object.keys(step.output_map).length === 0) fail(`must specify 'output_map' ${where}`);
    const produced = Object.values(step.output_map).map((tname) => {
      const t = get(tname);
      if (t.isOutput) fail(`ensemble tensor '${tname}' can appear in an output map only once for ensemble '${cfg.name}' step ${i}`);
      t.isOutput = true;
      return t;
    });
    for (const tname of Object.values(step.input_map)) {
      const t = get(tname);
      for (const out of produced) { out.prev.push(t); t.next.push(out); }
    }
  });
  return tensors;
}

function propagateReadiness(cfg: ModelConfig, tensors: Map<string, EnsembleTensor>): void {
  const queue: EnsembleTensor[] = [];
  for (const i of cfg.input) {
    const t = tensors.get(i.name);
    if (!t) fail(`ensemble input '${i.name}' for ensemble ${cfg.name}' is not used`);
    t!.ready = true;
    queue.push(t!);
  }
  while (queue.length > 0) {
    const t = queue.pop()!;
    for (const n of t.next) {
      if (n.ready || !n.prev.every((p) => p.ready)) continue;
      n.ready = true;
      queue.push(n);
    }
  }
}

// ---- instance groups, cache, metrics ----

/** Core's `ValidateInstanceGroup`, which does not apply to ensembles. */
export function validateInstanceGroups(cfg: ModelConfig): void {
  if (cfg.ensemble_scheduling) return;
  if (cfg.instance_group.length === 0) fail(`must specify one or more 'instance group's for ${cfg.name}`);
  for (const g of cfg.instance_group) {
    const which = `instance group ${g.name} of model ${cfg.name}`;
    if (g.kind === 'KIND_AUTO') fail(`${which} has unexpected kind KIND_AUTO`);
    if ((g.kind === 'KIND_CPU' || g.kind === 'KIND_MODEL') && g.gpus.length > 0) {
      fail(`${which} has kind ${g.kind} but specifies one or more GPUs`);
    }
    // KIND_GPU runs on CPU here, so any device id would do; an id no GPU can have is still refused in core's
    // words, with the empty list of GPUs this machine offers.
    const badGpu = g.kind === 'KIND_GPU' ? g.gpus.find((id) => !Number.isInteger(id) || id < 0) : undefined;
    if (badGpu !== undefined) {
      fail(`${which} specifies invalid or unsupported gpu id ${badGpu}. GPUs with at least the minimum required CUDA compute compatibility of ${MIN_COMPUTE_CAPABILITY} are: `);
    }
    if (g.profile.length > 0 && cfg.platform !== 'tensorrt_plan' && cfg.backend !== 'tensorrt') {
      fail(`${which} and platform ${cfg.platform}specifies profile field which is only supported for TensorRT models`);
    }
  }
}

/** Core's default `--min-supported-compute-capability` (6.0), as C++'s std::to_string prints it. */
const MIN_COMPUTE_CAPABILITY = '6.000000';

/** Core refuses the response cache for a decoupled model, also for an ensemble made decoupled by its steps. */
export function validateDecoupledCache(cfg: ModelConfig): void {
  if (cfg.response_cache?.enable && cfg.model_transaction_policy?.decoupled) {
    fail(`Response Cache does not currently support model ${cfg.name} with 'decoupled' transaction policy. Please disable the response cache.`);
  }
}

/**
 * Core's ValidateModelMetrics, in its words (they name no model): each metric_control needs a
 * metric_identifier with a non-empty family and histogram_options with at least one bucket. A family core
 * cannot customize is accepted here (core only warns when the model loads), and so are buckets in any order.
 */
function validateMetrics(cfg: ModelConfig): void {
  for (const mc of cfg.model_metrics?.metric_control ?? []) {
    const { metric_identifier: id, histogram_options: histogram } = mc;
    if (!id) fail(`metric control must specify 'metric_identifier'`);
    else if (!id.family) fail(`metric identifier must specify non-empty 'family'`);
    else if (!histogram) fail(`metric control must specify 'histogram_options'`);
    else if (histogram.buckets.length === 0) fail(`histogram options must specify non-empty 'buckets'`);
  }
}
