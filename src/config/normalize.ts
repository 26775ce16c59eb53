/**
 * What Triton core does to every config before validation: the backend/platform/file-name autofill of
 * `AutoCompleteBackendFields` and the defaults of `NormalizeModelConfig` / `NormalizeInstanceGroup`.
 * Both mutate the config in place, as core does, and are idempotent.
 */
import { NereidError } from '../errors.js';
import type { ModelConfig, ModelInstanceGroup } from './types.js';
import { blank } from './message.js';

// ---- backend autofill ----

export interface DirEntry { readonly name: string; readonly isDirectory: boolean }

/** Platform strings and the backend that serves each (core constants.h). */
export const PLATFORM_BACKEND: Readonly<Record<string, string>> = {
  tensorflow_savedmodel: 'tensorflow',
  tensorflow_graphdef: 'tensorflow',
  tensorrt_plan: 'tensorrt',
  onnxruntime_onnx: 'onnxruntime',
  pytorch_libtorch: 'pytorch',
  libtorch: 'pytorch',
  torch_aoti: 'pytorch',
};

/**
 * Fills `name`, `backend`, `platform` and `default_model_filename` the way core does, from the config and the
 * entries of the model's lexicographically first subdirectory. Steps run in core's order (TensorFlow, TensorRT,
 * ONNX Runtime, OpenVINO, PyTorch, Python, custom); the first that claims the model fills the rest of the pair.
 * A model core cannot place is refused unless its name reads `<anything>.<backend>`.
 */
export function autoCompleteBackendFields(cfg: ModelConfig, firstVersionDirEntries: readonly DirEntry[], modelName: string): void {
  if (!cfg.name) cfg.name = modelName;
  const files = new Map(firstVersionDirEntries.map((e) => [e.name, e.isDirectory]));
  const isFile = (n: string): boolean => files.get(n) === false;
  const isDir = (n: string): boolean => files.get(n) === true;
  const has = (n: string): boolean => files.has(n);
  // A file in the version folder may only decide when the config says nothing about the model type.
  const undecided = (): boolean => !cfg.platform && !cfg.default_model_filename;
  if (tensorflow(cfg, isFile, isDir)) return;
  if (simpleBackend(cfg, 'tensorrt', 'tensorrt_plan', 'model.plan', undecided() && isFile('model.plan'))) return;
  if (simpleBackend(cfg, 'onnxruntime', 'onnxruntime_onnx', 'model.onnx', undecided() && has('model.onnx'))) return;
  if (simpleBackend(cfg, 'openvino', '', 'model.xml', undecided() && has('model.xml'))) return;
  if (pytorch(cfg, undecided() ? isFile : () => false)) return;
  if (simpleBackend(cfg, 'python', '', 'model.py', undecided() && has('model.py'))) return;
  customBackend(cfg, modelName);
}

/** TensorFlow is decided by platform, file name, or a `model.savedmodel` folder / `model.graphdef` file. */
function tensorflow(cfg: ModelConfig, isFile: (n: string) => boolean, isDir: (n: string) => boolean): boolean {
  if (!cfg.platform && (!cfg.backend || cfg.backend === 'tensorflow')) {
    if (cfg.default_model_filename === 'model.savedmodel') cfg.platform = 'tensorflow_savedmodel';
    else if (cfg.default_model_filename === 'model.graphdef') cfg.platform = 'tensorflow_graphdef';
    else if (!cfg.default_model_filename) {
      if (isDir('model.savedmodel')) cfg.platform = 'tensorflow_savedmodel';
      if (isFile('model.graphdef')) cfg.platform = 'tensorflow_graphdef';
    }
  }
  if (cfg.platform !== 'tensorflow_savedmodel' && cfg.platform !== 'tensorflow_graphdef') return false;
  if (!cfg.backend) cfg.backend = 'tensorflow';
  if (!cfg.default_model_filename) {
    cfg.default_model_filename = cfg.platform === 'tensorflow_savedmodel' ? 'model.savedmodel' : 'model.graphdef';
  }
  return true;
}

/** One step of core's chain for a backend with one platform (or none) and one default file. */
function simpleBackend(cfg: ModelConfig, backend: string, platform: string, file: string, fileFound: boolean): boolean {
  if (!cfg.backend) {
    const byConfig = (platform !== '' && cfg.platform === platform) || cfg.default_model_filename === file;
    if (byConfig || fileFound) cfg.backend = backend;
  }
  if (cfg.backend !== backend) return false;
  if (platform && !cfg.platform) cfg.platform = platform;
  if (!cfg.default_model_filename) cfg.default_model_filename = file;
  return true;
}

/** PyTorch: TorchScript `model.pt` (platform pytorch_libtorch) or AOTInductor `model.pt2` (torch_aoti). */
function pytorch(cfg: ModelConfig, isFile: (n: string) => boolean): boolean {
  if (!cfg.backend) {
    const platformSays = PLATFORM_BACKEND[cfg.platform] === 'pytorch';
    const fileSays = cfg.default_model_filename === 'model.pt' || cfg.default_model_filename === 'model.pt2';
    if (platformSays || fileSays || isFile('model.pt') || isFile('model.pt2')) cfg.backend = 'pytorch';
  }
  if (cfg.backend !== 'pytorch') return false;
  const aoti = cfg.platform === 'torch_aoti' || cfg.default_model_filename === 'model.pt2' ||
    (!cfg.platform && !cfg.default_model_filename && !isFile('model.pt') && isFile('model.pt2'));
  if (!cfg.platform) cfg.platform = aoti ? 'torch_aoti' : 'pytorch_libtorch';
  // A Python-based PyTorch runtime (runtime: "model.py") brings its own file name.
  if (cfg.runtime !== 'model.py' && !cfg.default_model_filename) cfg.default_model_filename = aoti ? 'model.pt2' : 'model.pt';
  return true;
}

/** Core's last resort: with nothing in the config, a model named `x.<backend>` uses backend `<backend>`. */
function customBackend(cfg: ModelConfig, modelName: string): void {
  if (cfg.backend || cfg.platform || cfg.default_model_filename) return;
  const dot = modelName.indexOf('.');
  if (dot < 0) {
    throw new NereidError('INVALID_ARG', `Invalid model name: Could not determine backend for model '${modelName}' ` +
      "with no backend in model configuration. Expected model name of the form 'model.<backend_name>'.");
  }
  const backend = modelName.slice(dot + 1);
  cfg.backend = backend;
  cfg.default_model_filename = `model.${backend}`;
}

// ---- normalization ----

export interface NormalizeOptions {
  readonly modelName: string;
  /**
   * Instances a KIND_CPU group without a count gets, as the model's backend wants it (core's
   * SetDefaultInstanceCount, where backends opt into more than one); absent: 1.
   */
  readonly defaultCpuInstanceCount?: number;
}

/** Sequence slots idle longer than this are released when the config gives no value (core's default, 1 s). */
export const SEQUENCE_IDLE_DEFAULT_MICROSECONDS = 1_000_000;

/** Core's `NormalizeModelConfig` + `NormalizeInstanceGroup` for a machine without GPUs. */
export function normalizeModelConfig(cfg: ModelConfig, opts: NormalizeOptions): void {
  if (!cfg.name) cfg.name = opts.modelName;
  if (!cfg.version_policy) cfg.version_policy = { latest: { num_versions: 1 } };
  normalizeBatching(cfg);
  // Ensembles own no instances and move no data across devices, so neither default applies to them.
  if (isEnsemble(cfg)) return;
  const optimization = (cfg.optimization ??= blank<NonNullable<ModelConfig['optimization']>>('ModelOptimizationPolicy'));
  optimization.input_pinned_memory ??= { enable: true };
  optimization.output_pinned_memory ??= { enable: true };
  normalizeInstanceGroups(cfg, opts);
}

function isEnsemble(cfg: ModelConfig): boolean {
  return cfg.ensemble_scheduling !== undefined || cfg.platform === 'ensemble';
}

function normalizeBatching(cfg: ModelConfig): void {
  const mbs = cfg.max_batch_size;
  const db = cfg.dynamic_batching;
  if (db && db.preferred_batch_size.length === 0 && mbs > 0) db.preferred_batch_size = [mbs];
  const sb = cfg.sequence_batching;
  if (!sb) return;
  if (sb.max_sequence_idle_microseconds === 0) sb.max_sequence_idle_microseconds = SEQUENCE_IDLE_DEFAULT_MICROSECONDS;
  if (sb.oldest && sb.oldest.preferred_batch_size.length === 0 && mbs > 0) sb.oldest.preferred_batch_size = [mbs];
}

function normalizeInstanceGroups(cfg: ModelConfig, opts: NormalizeOptions): void {
  if (cfg.instance_group.length === 0) {
    // Core's one group of kind AUTO, which becomes KIND_CPU below.
    const group = blank<ModelInstanceGroup>('ModelInstanceGroup');
    group.name = cfg.name;
    cfg.instance_group.push(group);
  }
  cfg.instance_group.forEach((g, i) => {
    if (!g.name) g.name = `${cfg.name}_${i}`;
    if (g.kind === 'KIND_AUTO') {
      // No GPU here, so core would pick KIND_CPU. Nereid runs GPU configs on CPU on purpose, so the GPU list
      // that made the group "auto" is dropped rather than turned into a KIND_CPU-with-gpus error.
      g.kind = 'KIND_CPU';
      g.gpus = [];
    }
    if (g.count < 1) g.count = g.kind === 'KIND_CPU' ? opts.defaultCpuInstanceCount ?? 1 : 1;
  });
}
