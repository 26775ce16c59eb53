import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { NereidError, invalidArg, isNereidError, unavailable } from '../errors.js';
import type { EnsembleStep, ModelConfig } from '../config/types.js';
import {
  autoCompleteBackendFields, normalizeModelConfig, parseModelConfig, validateDecoupledCache, validateDirectoryName, validateInstanceGroups,
  validateModelIO, validateModelSettings,
} from '../config/index.js';
import type { BackendRegistry } from '../backends/registry.js';
import { executeTimeoutMs, type Backend, type BackendInstance, type ExecutionTimes, type ModelCalls, type ModelFiles } from '../backends/backend.js';
import type { Logger } from '../observability/logger.js';
import { ModelStatistics, type InstanceStatistics } from '../observability/statistics.js';
import type { VersionInfo } from '../observability/metrics/reporter.js';
import { DirectScheduler } from '../scheduler/direct.js';
import type { Scheduler } from '../scheduler/scheduler.js';
import { SequenceBatcher } from '../scheduler/sequence.js';
import type { SequenceStateStore } from '../scheduler/sequence-store.js';
import { DynamicBatcher } from '../scheduler/dynamic.js';
import type { RateLimiter } from '../scheduler/rate-limiter.js';
import type { ResponseCache } from '../cache/cache.js';
import { listEntries, listVersions, readText } from '../repository/local.js';
import { checkModelFileInside, resolveDataFile } from '../config/model-files.js';
import { ModelContext } from './context.js';
import { ModelVersion } from './model-version.js';
import { warmUp } from './warmup.js';
import { EnsembleScheduler, type ModelResolver } from './ensemble.js';
import { checkEnsemble } from './ensemble-check.js';
import { checkVersionWeights, completeRouterConfig, routerTargets, RouterScheduler, type RouteResolver } from './router.js';
import { WeightedRoutes } from './routing.js';
import { instanceCount, type InstanceBudget } from './instance-budget.js';

/** What loading needs from the server's options. */
export interface LoaderOptions {
  readonly backends: BackendRegistry;
  readonly strictModelConfig: boolean;
  readonly modelConfigName: string;
  readonly backendConfig: Readonly<Record<string, Readonly<Record<string, string>>>>;
  readonly logger: Logger;
  /** --model-load-thread-count: models loading at once. */
  readonly loadThreads: number;
  /** --model-load-retry-count: further attempts at creating a version after its creation failed. */
  readonly loadRetries?: number;
  /** --model-max-instances and --server-max-instances. */
  readonly instances: InstanceBudget;
  /** --rate-limit: instances with rate_limiter resources run only while those are free. */
  readonly rateLimiter?: RateLimiter;
  /** The server's response cache (--cache-config), for models with response_cache { enable: true }. */
  readonly responseCache?: ResponseCache;
  /** How an ensemble finds its composing models (the manager's resolve). */
  readonly resolveModel?: ModelResolver;
  /** What a running model may ask of the server (BLS), handed to every instance. */
  readonly calls?: ModelCalls;
  /** How a router reaches its targets (version weights applied), and which of them have a ready version. */
  readonly routeModel?: RouteResolver;
  readonly hasReadyVersion?: (name: string) => boolean;
  /** --sequence-state-store: where sequence batchers keep their sequences, shared with other replicas. */
  readonly sequenceStore?: SequenceStateStore;
  /** The server's metrics, when on: told of each version as it loads, before it takes requests. */
  readonly metrics?: MetricsBinder;
}

/** Binds a version's metric label sets and latency series (see observability/metrics). */
export interface MetricsBinder {
  bind(stats: ModelStatistics, info: VersionInfo): void;
}

/** A model's config, completed, normalized and validated, with the backend that will run it. */
export interface PreparedModel {
  readonly name: string;
  readonly modelDir: string;
  readonly config: ModelConfig;
  /** Undefined for ensembles, which run on other models rather than a backend. */
  readonly backend: Backend | undefined;
  readonly backendConfig: Readonly<Record<string, string>>;
  readonly labels: ReadonlyMap<string, string[]>;
  /** The config came with the load request (see ModelFiles.configFromRequest). */
  readonly configFromRequest: boolean;
}

/** Reads the config file Triton would read: `configs/<name>.pbtxt` when asked for and present, else config.pbtxt. */
export async function readConfig(modelDir: string, name: string, opts: LoaderOptions): Promise<ModelConfig | undefined> {
  // Errors name the file from the model's folder on: they reach clients, which must not see the server's paths.
  if (opts.modelConfigName) {
    const custom = join('configs', `${opts.modelConfigName}.pbtxt`);
    const text = await readText(join(modelDir, custom));
    if (text !== undefined) return parseModelConfig(text, join(name, custom));
  }
  const text = await readText(join(modelDir, 'config.pbtxt'));
  if (text !== undefined) return parseModelConfig(text, join(name, 'config.pbtxt'));
  if (opts.strictModelConfig) {
    throw invalidArg(`failed to open text file for read ${join(name, 'config.pbtxt')}: No such file or directory (auto-complete is disabled: --strict-model-config / --disable-auto-complete-config)`);
  }
  return undefined;
}

/**
 * Everything that happens once per model, before any version loads. The steps follow core's order, so that a
 * config with several faults is refused for the one Triton names: the repository reads, completes, normalizes
 * and validates the config and checks the folder name (model_repository_manager.cc); `TritonModel::Create`
 * then finds the backend and checks the instance groups, the backend completes the config from the model
 * file, and `Model::Init` validates it all again with the inputs and outputs.
 */
export async function prepareModel(name: string, modelDir: string, given: ModelConfig | undefined, opts: LoaderOptions): Promise<PreparedModel> {
  const config = given ?? (await readConfig(modelDir, name, opts)) ?? parseModelConfig('', join(name, 'config.pbtxt'));
  const versions = await listVersions(modelDir);
  const firstEntries = await firstVersionEntries(modelDir);
  autoCompleteBackendFields(config, firstEntries, name);
  checkVersionWeights(config);
  if (config.backend === 'router') completeRouterConfig(config, routerTargetConfigs(config, opts));
  const noBackend = config.platform === 'ensemble' || config.backend === 'router';
  const defaults = { modelName: name, defaultCpuInstanceCount: opts.backends.traits(config.backend).defaultCpuInstanceCount ?? 1 };
  normalizeModelConfig(config, defaults);
  validateModelSettings(config);
  if (opts.strictModelConfig) validateModelIO(config);
  validateDirectoryName(config, name);
  const configFromRequest = given !== undefined;
  if (noBackend) {
    validateInstanceGroups(config);
    validateModelIO(config);
    return { name, modelDir, config, backend: undefined, backendConfig: {}, labels: await readLabels(config, name, modelDir), configFromRequest };
  }
  const backend = await findBackend(config, opts);
  validateInstanceGroups(config);
  const backendConfig = { ...(opts.backendConfig[''] ?? {}), ...(opts.backendConfig[config.backend] ?? {}) };
  if (!opts.strictModelConfig && backend.autoComplete && versions.length > 0) {
    const files: ModelFiles = { name, modelDir, versionDir: join(modelDir, String(versions[versions.length - 1])), backendConfig, configFromRequest };
    await backend.autoComplete(files, config);
    // What the backend filled in gets core's defaults too.
    normalizeModelConfig(config, defaults);
  }
  validateModelSettings(config);
  validateModelIO(config);
  validateInstanceGroups(config);
  opts.instances.check(name, config);
  return { name, modelDir, config, backend, backendConfig, labels: await readLabels(config, name, modelDir), configFromRequest };
}

/** Core refuses a model whose backend it cannot find in its own words; Nereid's reason follows them. */
async function findBackend(config: ModelConfig, opts: LoaderOptions): Promise<Backend> {
  if (!opts.backends.has(config.backend)) {
    throw invalidArg(`unable to find backend library 'libtriton_${config.backend}.so' for model '${config.name}': Nereid has no backend '${config.backend}'`);
  }
  return opts.backends.get(config.backend);
}

/** Core's backend detection looks at the lexicographically first subfolder of the model. */
async function firstVersionEntries(modelDir: string): Promise<{ name: string; isDirectory: boolean }[]> {
  const dirs = (await listEntries(modelDir)).filter((e) => e.isDirectory).map((e) => e.name).sort();
  return dirs.length > 0 ? listEntries(join(modelDir, dirs[0]!)) : [];
}

/** Output label files, relative to the model folder as in Triton. */
async function readLabels(config: ModelConfig, name: string, modelDir: string): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const o of config.output) {
    if (!o.label_filename) continue;
    const file = await resolveDataFile({ model: name, modelDir, sub: '' }, o.label_filename, `label_filename of output '${o.name}'`);
    const text = await readFile(file, 'utf8').catch(() => {
      throw invalidArg(`unable to read label file '${o.label_filename}' of output '${o.name}' for model '${name}'`);
    });
    out.set(o.name, text.split(/\r?\n/).filter((l, i, all) => l !== '' || i < all.length - 1));
  }
  return out;
}

/** Loads one version: creates its instances (warmed up) and its scheduler. */
export async function loadVersion(model: PreparedModel, version: number, opts: LoaderOptions): Promise<ModelVersion> {
  const startNs = process.hrtime.bigint();
  const context = new ModelContext(model.name, version, model.config, model.labels, model.backend?.inputCheck?.(model.config));
  const loaded = model.backend ? await loadInstances(model, context, opts)
    : model.config.backend === 'router' ? loadRouter(model, context, opts) : loadEnsemble(model, context, opts);
  loaded.stats.loadNs = Number(process.hrtime.bigint() - startNs);
  opts.metrics?.bind(loaded.stats, versionInfo(loaded, opts));
  return loaded;
}

function versionInfo(v: ModelVersion, opts: LoaderOptions): VersionInfo {
  const config = v.context.config;
  const buckets = new Map<string, readonly number[]>();
  for (const c of config.model_metrics?.metric_control ?? []) {
    if (c.metric_identifier?.family && c.histogram_options) buckets.set(c.metric_identifier.family, c.histogram_options.buckets);
  }
  return {
    name: v.name, version: v.version, metricTags: config.metric_tags, decoupled: v.decoupled,
    cached: cacheFor(config, opts) !== undefined, buckets,
  };
}

async function loadInstances(model: PreparedModel, context: ModelContext, opts: LoaderOptions): Promise<ModelVersion> {
  const version = context.version;
  const versionDir = join(model.modelDir, String(version));
  const instances: BackendInstance[] = [];
  const stats = new ModelStatistics(model.name, version);
  const byInstance = new Map<BackendInstance, InstanceStatistics>();
  // Passive instances are created (and warmed up) but never given requests, as in Triton.
  const scheduled: BackendInstance[] = [];
  const folder = { model: model.name, modelDir: model.modelDir, sub: String(version) };
  for (const [cc, file] of Object.entries(model.config.cc_model_filenames)) {
    await checkModelFileInside(folder, file, `cc_model_filenames '${cc}'`);
  }
  const initialStates = await readInitialStates(model);
  const timeoutMs = executeTimeoutMs(model.config);
  const release = opts.instances.reserve(model.name, version, instanceCount(model.config));
  try {
    for (const group of model.config.instance_group) {
      for (let i = 0; i < group.count; i++) {
        const instanceName = `${group.name}_${i}`;
        const instance = await model.backend!.createInstance({
          name: model.name, modelDir: model.modelDir, versionDir, backendConfig: model.backendConfig, configFromRequest: model.configFromRequest,
          version, config: model.config, instanceName, kind: group.kind, logger: opts.logger.child(`${model.config.backend}/instance.ts`),
          ...(opts.calls ? { calls: opts.calls } : {}),
          ...(timeoutMs !== undefined ? { executeTimeoutMs: timeoutMs } : {}),
        });
        instances.push(instance);
        await warmUp(instance, model.config, { model: model.name, modelDir: model.modelDir }, instanceName);
        // Warmup runs unlimited; requests go through the rate limiter when it is on.
        const limited = opts.rateLimiter?.wrap(instance, group.rate_limiter) ?? instance;
        instances[instances.length - 1] = limited;
        byInstance.set(limited, stats.addInstance(instanceName, group.kind, group.passive));
        if (!group.passive) scheduled.push(limited);
      }
    }
    if (instances.length === 0) throw invalidArg(`model '${model.name}' has no instances (instance_group count is 0)`);
    if (scheduled.length === 0) throw invalidArg(`model '${model.name}' has no instances to run requests on: every instance_group is passive`);
  } catch (e) {
    await Promise.all(instances.map((i) => i.close().catch(() => undefined)));
    release();
    throw isNereidError(e) ? e : new NereidError('INTERNAL', (e as Error).message);
  }
  let versionRef: ModelVersion | undefined;
  const onExecution = (rows: number, times: ExecutionTimes, instance?: BackendInstance): void =>
    versionRef!.recordExecution(rows, times, instance && byInstance.get(instance));
  let scheduler: Scheduler;
  try {
    scheduler = model.config.sequence_batching
      ? new SequenceBatcher(model.name, model.config, initialStates, scheduled, onExecution, opts.sequenceStore
        ? { store: opts.sequenceStore, keyPrefix: `nereid:seq:${encodeURIComponent(model.name)}:${version}:` } : undefined,
        opts.logger.child('sequence.ts'))
      // Without max_batch_size a dynamic batcher still keeps its priority levels and queue policies (batches of one).
      : model.config.dynamic_batching
        ? new DynamicBatcher(model.config, scheduled, onExecution, opts.logger.child('dynamic.ts'))
        : new DirectScheduler(scheduled, onExecution);
  } catch (e) {
    await Promise.all(instances.map((i) => i.close().catch(() => undefined)));
    release();
    throw e;
  }
  versionRef = new ModelVersion(context, stats, scheduler, instances, cacheFor(model.config, opts), release);
  return versionRef;
}

/** The data files of sequence states' initial_state entries, by file name, from `<model folder>/initial_state`. */
async function readInitialStates(model: PreparedModel): Promise<Map<string, Uint8Array>> {
  const out = new Map<string, Uint8Array>();
  const folder = { model: model.name, modelDir: model.modelDir, sub: 'initial_state' };
  for (const st of model.config.sequence_batching?.state ?? []) {
    for (const init of st.initial_state) {
      if (!init.data_file || out.has(init.data_file)) continue;
      const file = await resolveDataFile(folder, init.data_file, `data_file of initial state of '${st.input_name}'`);
      out.set(init.data_file, new Uint8Array(await readFile(file)));
    }
  }
  return out;
}

/**
 * An ensemble version: no instances, a scheduler that runs the steps on the composing models. Every composing
 * model must be available when the ensemble loads, as Triton requires.
 */
function loadEnsemble(model: PreparedModel, context: ModelContext, opts: LoaderOptions): ModelVersion {
  const resolve = opts.resolveModel;
  if (!resolve) throw new NereidError('INTERNAL', `ensemble '${model.name}' cannot be loaded without a model resolver`);
  const config = model.config;
  const contextOf = (step: EnsembleStep): ModelContext => {
    const version = step.model_version >= 0 ? step.model_version : undefined;
    try {
      return (resolve(step.model_name, version) as ModelVersion).context;
    } catch (e) {
      throw unavailable(`${missingStep(model.name, step.model_name, version, e)} (${isNereidError(e) ? e.message : String(e)})`);
    }
  };
  // Core's CheckNode makes sure every step's model is loaded before ValidateEnsembleConfig compares any of them.
  const steps = new Map(config.ensemble_scheduling!.step.map((s) => [s, contextOf(s)]));
  // As Triton: the ensemble is decoupled exactly when a decoupled step feeds some of its tensors.
  const decoupled = checkEnsemble(config, (s) => steps.get(s)!.config);
  const labels = ensembleLabels(config, model.labels, steps);
  let ctx = context;
  if (decoupled !== context.decoupled || labels !== model.labels) {
    config.model_transaction_policy = { ...(config.model_transaction_policy ?? {}), decoupled } as NonNullable<ModelConfig['model_transaction_policy']>;
    // Core validates the ensemble's config again with the decoupled flag its steps gave it.
    validateDecoupledCache(config);
    ctx = new ModelContext(model.name, context.version, config, labels);
  }
  const stats = new ModelStatistics(model.name, ctx.version);
  const onSuccess = (rows: number, times: ExecutionTimes): void => stats.recordExecution(rows, times.inputNs, times.inferNs, times.outputNs);
  const onFailure = (durationNs: number): void => stats.recordFailure(durationNs, 'OTHER');
  return new ModelVersion(ctx, stats, new EnsembleScheduler(model.name, config, resolve, onSuccess, onFailure), [], cacheFor(config, opts));
}

/**
 * The labels classification uses for an ensemble's outputs: its own label_filename's where it has one, else
 * those of the composing model's output the ensemble output comes straight from. Triton's QA writes label files
 * only for the ensembles whose output does not come straight from the labelled model (the "fan" ones of
 * qa/common/gen_ensemble_model_utils.py) and expects "label<i>" from every ensemble (qa/common/infer_util.py).
 * The same map when nothing is added.
 */
function ensembleLabels(config: ModelConfig, own: ReadonlyMap<string, string[]>, steps: ReadonlyMap<EnsembleStep, ModelContext>): ReadonlyMap<string, string[]> {
  let out: Map<string, string[]> | undefined;
  for (const [step, ctx] of steps) {
    for (const [output, tensor] of Object.entries(step.output_map)) {
      const found = ctx.outputs.get(output)?.labels;
      if (!found || own.has(tensor) || !config.output.some((o) => o.name === tensor)) continue;
      (out ??= new Map(own)).set(tensor, [...found]);
    }
  }
  return out ?? own;
}

/**
 * Triton's dependency-graph words for a step whose model cannot serve: a name it cannot tell (unknown, or in
 * several repositories), a required version not loaded, or no loaded version at all.
 */
function missingStep(ensemble: string, step: string, version: number | undefined, cause: unknown): string {
  if (isNereidError(cause) && cause.code === 'INVALID_ARG') return `ensemble ${ensemble} contains models that are not available or ambiguous: ${step}`;
  if (version !== undefined) return `ensemble '${ensemble}' depends on '${step}' whose required version ${version} is not loaded.`;
  return `ensemble '${ensemble}' depends on '${step}' which has no loaded version.`;
}

/** The loaded configs of a router's targets, which must all be available when it loads. */
function routerTargetConfigs(config: ModelConfig, opts: LoaderOptions): { name: string; config: ModelConfig }[] {
  return routerTargets(config).map((r) => {
    try {
      return { name: r.target, config: (opts.resolveModel!(r.target, undefined) as ModelVersion).context.config };
    } catch (e) {
      throw unavailable(`router '${config.name}' routes to '${r.target}' which is not available: ${isNereidError(e) ? e.message : String(e)}`);
    }
  });
}

/** A router version (backend "router"): no instances, a scheduler that hands each request to one target. */
function loadRouter(model: PreparedModel, context: ModelContext, opts: LoaderOptions): ModelVersion {
  if (!opts.routeModel || !opts.hasReadyVersion) throw new NereidError('INTERNAL', `router '${model.name}' cannot be loaded without a model resolver`);
  const routes = new WeightedRoutes(routerTargets(model.config));
  const stats = new ModelStatistics(model.name, context.version);
  stats.routes = routes.counts;
  return new ModelVersion(context, stats, new RouterScheduler(model.name, routes, opts.routeModel, opts.hasReadyVersion), [], cacheFor(model.config, opts));
}

function cacheFor(config: ModelConfig, opts: LoaderOptions): ResponseCache | undefined {
  return config.response_cache?.enable ? opts.responseCache : undefined;
}
