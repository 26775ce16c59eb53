import { NereidError, invalidArg, unavailable, unsupported } from '../errors.js';
import { isCloudUrl, parseCloudUrl } from '../repository/cloud/url.js';
import type { ModelConfig } from '../config/types.js';
import { modelConfigToJson } from '../config/index.js';
import { defaultBackends, type BackendRegistry } from '../backends/registry.js';
import type { ModelCalls } from '../backends/backend.js';
import type { InferenceRequest, InferenceResponse, RequestBounds } from '../inference/index.js';
import { ResponseStream } from '../inference/stream.js';
import type { LoadWait } from '../models/on-demand.js';
import { ModelManager, type IndexEntry, type LoadRequest } from '../models/manager.js';
import { pollEvery } from '../models/polling.js';
import { InstanceBudget } from '../models/instance-budget.js';
import type { ModelVersion } from '../models/model-version.js';
import { routingKey } from '../models/router.js';
import type { DataType } from '../tensor/datatype.js';
import { createLogger, type Logger } from '../observability/logger.js';
import { LimitRefusals } from '../observability/limit-refusals.js';
import { TraceManager } from '../observability/trace/manager.js';
import { RateLimiter } from '../scheduler/rate-limiter.js';
import { LocalResponseCache } from '../cache/local.js';
import { RedisResponseCache } from '../cache/redis.js';
import { RedisSequenceStore } from '../scheduler/sequence-store-redis.js';
import type { SequenceStateStore } from '../scheduler/sequence-store.js';
import type { ResponseCache } from '../cache/cache.js';
import type { Registry, ServerMetrics } from '../observability/metrics/server-metrics.js';
import { parseMetricsConfig } from '../observability/metrics/settings.js';
import { usesSharedMemory } from '../sharedmemory/binding.js';
import { inferThroughSharedMemory, streamThroughSharedMemory } from '../sharedmemory/request-flows.js';
import { SharedMemoryRegistry } from '../sharedmemory/registry.js';
import { ReservedKeys } from '../sharedmemory/reserved-keys.js';
import { modelCalls } from './model-calls.js';
import { logRequest } from './request-log.js';
import { DEFAULT_SERVER_ID, NEREID_VERSION, type ServerOptions } from './options.js';

export type { LoadRequest };

export interface ServerMetadata {
  name: string;
  version: string;
  extensions: readonly string[];
}

export interface TensorMetadata {
  name: string;
  datatype: string;
  shape: number[];
}

/** An input or output of a model as clients see it (the batch dimension -1 for a batching model). */
export interface TensorInfo {
  readonly name: string;
  readonly datatype: DataType;
  readonly shape: readonly number[];
}

/**
 * A model as resolveModel() found it for one request: what a frontend needs before it decodes the request, and
 * what it hands back to infer() or inferStream() so that the model is not looked up again.
 */
export interface ResolvedModel {
  readonly name: string;
  /** The version found: the one named, else the highest ready one (with version weights the pick comes later). */
  readonly version: number;
  readonly decoupled: boolean;
  /** What a request to it may hold at most (with version weights, the loosest of the ready versions'). */
  readonly bounds: RequestBounds;
  readonly maxBatchSize: number;
  readonly inputs: ReadonlyMap<string, TensorInfo>;
  readonly outputs: ReadonlyMap<string, TensorInfo>;
}

export interface ModelMetadata {
  name: string;
  versions: string[];
  platform: string;
  inputs: TensorMetadata[];
  outputs: TensorMetadata[];
}

/**
 * Extensions in the order Triton lists them. `sequence` is the sequence batcher with its request parameters.
 */
const EXTENSIONS: readonly string[] = ['classification', 'sequence', 'model_repository', 'model_repository(unload_dependents)', 'schedule_policy', 'model_configuration', 'system_shared_memory', 'cuda_shared_memory', 'binary_tensor_data', 'parameters', 'statistics', 'trace', 'logging'];

type ServerState = 'starting' | 'ready' | 'stopping' | 'stopped';

/** After the exit timeout, how long instances that were killed may take to let go before close() returns anyway. */
const ABORT_GRACE_MS = 1000;

export interface CreateOptions {
  logger?: Logger;
  backends?: BackendRegistry;
  /**
   * Where sequence batchers keep their sequences, instead of the Redis store --sequence-state-store names: an
   * application's own store. The server does not close it.
   */
  sequenceStore?: SequenceStateStore;
}

/**
 * The in-process API: what every frontend calls, and what a Node application embedding Nereid uses directly.
 *
 * ```ts
 * const server = await InferenceServer.create({ modelRepositories: ['./models'] });
 * const res = await server.infer({ model: 'simple', inputs: [...] });
 * await server.close();
 * ```
 */
export class InferenceServer {
  readonly logger: Logger;
  /** This module's own records, located here rather than at the root. */
  private readonly log: Logger;
  private state: ServerState = 'starting';
  private readonly manager: ModelManager;
  private readonly metadataValue: ServerMetadata;
  /** Ends poll mode's timer (see pollEvery); nothing to end in the other modes. */
  private stopPolling: () => void = () => undefined;
  private inflightRequests = 0;
  private idle: (() => void) | undefined;
  private closing: Promise<boolean> | undefined;
  /** Holds on readiness (see holdReadiness); the server is ready only when none is left. */
  private readinessHolds = 0;

  /**
   * Registered shared-memory regions (Triton's system and CUDA shared-memory extensions). Registering needs
   * allowClientShm; requests name regions in their inputs' and outputs' sharedMemory.
   */
  readonly sharedMemory: SharedMemoryRegistry;

  private readonly metrics: ServerMetrics | undefined;
  private readonly refusals: LimitRefusals;
  /**
   * Triton's trace settings and sampling. Frontends read `traces.active` before anything else of a request's
   * tracing: false while every setting is OFF, so that a request then pays one property read for it.
   */
  readonly traces: TraceManager;

  private constructor(
    private readonly options: ServerOptions, created: CreateOptions, Metrics: typeof ServerMetrics | undefined, traces: TraceManager,
    private readonly sequenceStore: SequenceStateStore | undefined,
    private readonly cache: ResponseCache | undefined,
  ) {
    this.traces = traces;
    this.logger = created.logger ?? defaultLogger();
    this.log = this.logger.child('inference-server.ts');
    this.refusals = new LimitRefusals(this.logger.child('limit-refusals.ts'));
    this.metrics = Metrics && options.metrics ? serverMetrics(Metrics, options, () => this.manager, this.refusals, this.log) : undefined;
    const ownSharedMemory = new ReservedKeys();
    this.sharedMemory = new SharedMemoryRegistry(options.allowClientShm ?? false, {
      maxRegions: options.shmMaxRegions, maxMappedBytes: options.shmMaxMappedBytes, reserved: ownSharedMemory,
    });
    const calls = modelCalls((r) => this.manager.resolveRouted(r.model, r.version, routingKey(r.parameters, r.sequenceId)), this, ownSharedMemory, this.metrics?.registry);
    this.manager = modelManager(options, created, this.logger, { cache, sequenceStore, calls, metrics: this.metrics });
    this.metadataValue = { name: options.id ?? DEFAULT_SERVER_ID, version: NEREID_VERSION, extensions: EXTENSIONS };
  }

  /**
   * Starts a server on its repositories and loads models by the control mode. With exitOnError (the default)
   * a model that fails to load makes create() reject with its reason.
   */
  static async create(options: ServerOptions, created: CreateOptions = {}): Promise<InferenceServer> {
    if (options.modelRepositories.length === 0) throw invalidArg('at least one model repository is required');
    const url = options.modelRepositories.find((r) => /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(r) && !isCloudUrl(r));
    if (url !== undefined) throw invalidArg(`model repository ${url}: a repository is a local directory or an s3://, gs:// or as:// URL`);
    for (const r of options.modelRepositories) if (isCloudUrl(r)) parseCloudUrl(r);
    // prom-client is loaded only when metrics are on.
    const Metrics = options.metrics ? (await import('../observability/metrics/server-metrics.js')).ServerMetrics : undefined;
    const logger = created.logger ?? defaultLogger();
    const traces = await TraceManager.create(options.trace ?? [], logger.child('trace-file.ts'));
    const store = created.sequenceStore ? { load: created.sequenceStore.load.bind(created.sequenceStore), commit: created.sequenceStore.commit.bind(created.sequenceStore), close: async () => undefined }
      : options.sequenceStateStore ? await RedisSequenceStore.connect(options.sequenceStateStore) : undefined;
    let server: InferenceServer;
    let cache: ResponseCache | undefined;
    try {
      cache = await responseCache(options.responseCache, logger.child('cache/redis.ts'));
      server = new InferenceServer(options, { ...created, logger }, Metrics, traces, store, cache);
    } catch (e) {
      await cache?.close?.();
      await store?.close();
      await traces.close();
      throw e;
    }
    const failures = await loadAtStart(server.manager, options);
    if (failures.size > 0 && (options.exitOnError ?? true)) {
      await server.manager.close();
      await server.closeServices();
      const list = [...failures].map(([m, r]) => `'${m}': ${r}`).join('; ');
      throw unavailable(`failed to load all models: ${list}`);
    }
    server.state = 'ready';
    if (options.modelControlMode === 'poll') server.stopPolling = pollEvery((options.repositoryPollSecs ?? 15) * 1000, () => server.manager.poll(), server.log);
    return server;
  }

  /** Polls the repositories once now (poll mode's work, on demand). */
  pollRepository(): Promise<void> {
    return this.manager.poll();
  }

  isLive(): boolean {
    return this.state === 'ready' || this.state === 'stopping';
  }

  isReady(): boolean {
    if (this.state !== 'ready' || this.readinessHolds > 0) return false;
    return !(this.options.strictReadiness ?? true) || this.manager.allReady();
  }

  /**
   * Keeps the server unready until the returned function is called (once; later calls do nothing). A command
   * that opens several listeners holds readiness until the last one listens, so that a client that sees the
   * server ready on one protocol can connect on every other at once.
   */
  holdReadiness(): () => void {
    this.readinessHolds++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.readinessHolds--;
    };
  }

  metadata(): ServerMetadata {
    return this.metadataValue;
  }

  /** The model's ready endpoint: the same state as the repository index reports (see ModelManager.isReady). */
  isModelReady(name: string, version?: number): boolean {
    return this.manager.isReady(name, version);
  }

  modelMetadata(name: string, version?: number): ModelMetadata {
    const versions = version !== undefined ? [String(version)] : this.manager.readyVersions(name).map(String);
    return metadataOf(this.manager.resolve(name, version), name, versions);
  }

  modelConfig(name: string, version?: number): ModelConfig {
    return this.manager.config(name, version);
  }

  /** Triton's JSON form of a model's config, as GET /v2/models/{m}/config returns it. */
  modelConfigJson(name: string, version?: number): Record<string, unknown> {
    return modelConfigToJson(this.manager.config(name, version));
  }

  /**
   * The model a request names, looked up once: a frontend calls this before it decodes the request (to refuse
   * early what the model cannot take), then passes the result to infer() or inferStream() with the request.
   * Throws as infer() would when no version of the model can take a request.
   */
  resolveModel(name: string, version?: number): ResolvedModel {
    // As admit(): a request that arrives while the server stops is refused for that, not for the model that the
    // stop may already have unloaded.
    if (this.state !== 'ready') throw unavailable('Server is not ready: it is shutting down');
    return this.manager.target(name, version);
  }

  /** Set with --model-load-on-demand: frontends then wait for a model that must load before they answer. */
  get loadsOnDemand(): boolean {
    return this.manager.onDemand !== undefined;
  }

  /**
   * resolveModel(), or a promise of it after a load on demand of a model in the repository that is not loaded;
   * fails as resolveModel(), or with the load's failure, or UNAVAILABLE (Retry-After) past the load wait.
   */
  resolveLoaded(name: string, version: number | undefined, bounds: LoadWait = {}): ResolvedModel | Promise<ResolvedModel> {
    try {
      return this.resolveModel(name, version);
    } catch (e) {
      const loading = this.loadFirst(name, e, bounds);
      if (loading === undefined) throw e;
      return loading.then(() => this.resolveModel(name, version));
    }
  }

  /** For calls naming a model (metadata, config, ready): undefined, or a promise settled once it has loaded. */
  whenLoaded(name: string, bounds: LoadWait = {}): Promise<void> | undefined {
    return this.manager.loadFirst(name, undefined, bounds);
  }

  private loadFirst(name: string, e: unknown, bounds: LoadWait): Promise<void> | undefined {
    return this.state === 'ready' ? this.manager.loadFirst(name, e, bounds) : undefined;
  }

  /**
   * Runs one request and resolves with its response. `model`, from resolveModel() for the request's model and
   * version, saves looking the model up again; without it the request's model is looked up here.
   */
  infer(request: InferenceRequest, model?: ResolvedModel): Promise<InferenceResponse> {
    let version;
    try {
      version = this.admit(request, model);
    } catch (e) {
      const loading = this.loadFirst(request.model, e, request);
      return loading === undefined ? Promise.reject(e) : loading.then(() => this.infer(request));
    }
    this.inflightRequests++;
    const p = usesSharedMemory(request) ? inferThroughSharedMemory(this.sharedMemory, version, request) : version.infer(request);
    p.then(this.requestDone, this.requestDone);
    if (this.log.isVerbose(1)) logRequest(this.log, request, p);
    return p;
  }

  /**
   * As infer(), answered through `resolve` or `reject` rather than a promise: a model run on the event loop
   * at once (the direct scheduler, one request at a time) answers before this returns, so a frontend writes
   * the response without waiting for a turn of the promise jobs. An answer that comes later (a model run at
   * the end of the loop's turn, with the other requests of the turn) is delivered in a promise job, as a
   * promise's would be: answering between the turn's runs cost 7-12% more CPU per request at concurrency 8
   * (bench/HISTORY.md, the transport's seventh step). Each request is answered exactly once.
   */
  inferTo(request: InferenceRequest, model: ResolvedModel | undefined, resolve: (r: InferenceResponse) => void, reject: (e: unknown) => void): void {
    if (usesSharedMemory(request) || this.log.isVerbose(1)) {
      this.infer(request, model).then(resolve, reject);
      return;
    }
    let version;
    try {
      version = this.admit(request, model);
    } catch (e) {
      // A model not loaded (or evicted since the frontend looked it up) loads on demand first.
      const loading = this.loadFirst(request.model, e, request);
      if (loading === undefined) reject(e);
      else loading.then(() => this.inferTo(request, undefined, resolve, reject), reject);
      return;
    }
    this.inflightRequests++;
    // Exactly one answer, and a frontend's callback that throws does not reach the scheduler that called it
    // (which would answer the request again): it fails as a promise's callback would, unhandled.
    let settled = false;
    let inCall = true;
    const deliver = (answer: () => void): void => {
      try {
        answer();
      } catch (e) {
        rethrowLater(e);
      } finally {
        this.requestDone();
      }
    };
    const settle = (answer: () => void): void => {
      if (settled) return;
      settled = true;
      if (inCall) deliver(answer);
      else queueMicrotask(() => deliver(answer));
    };
    try {
      version.inferTo(request, (r) => settle(() => resolve(r)), (e) => settle(() => reject(e)));
    } catch (e) {
      settle(() => reject(e));
    }
    inCall = false;
  }

  /**
   * Every response of a request, as an async iterator: a decoupled model's zero or more responses as the model
   * sends them, or an ordinary model's one response. Errors are thrown from the iterator; leaving the loop
   * early cancels the request.
   *
   * ```ts
   * for await (const res of server.inferStream({ model: 'repeat_int32', inputs })) console.log(res.outputs);
   * ```
   */
  inferStream(request: InferenceRequest, model?: ResolvedModel): ResponseStream {
    let version;
    try {
      version = this.admit(request, model);
    } catch (e) {
      const loading = this.loadFirst(request.model, e, request);
      return loading === undefined ? ResponseStream.failed(e) : ResponseStream.later(loading.then(() => this.inferStream(request)));
    }
    this.inflightRequests++;
    const stream = usesSharedMemory(request) ? streamThroughSharedMemory(this.sharedMemory, version, request) : version.inferStream(request);
    void stream.settled.then(this.requestDone);
    if (this.log.isVerbose(1)) logRequest(this.log, request, stream.settled);
    return stream;
  }

  /** The model version a request goes to (a router's or weighted pick made); throws when it cannot be taken. */
  private admit(request: InferenceRequest, model: ResolvedModel | undefined): ModelVersion {
    if (this.state !== 'ready') throw unavailable('Server is not ready: it is shutting down');
    if (request.signal?.aborted) throw new NereidError('CANCELLED', 'request cancelled');
    return model !== undefined
      ? this.manager.route(model, request)
      : this.manager.resolveRouted(request.model, request.version, routingKey(request.parameters, request.sequenceId));
  }

  private readonly requestDone = (): void => {
    if (--this.inflightRequests === 0 && this.idle) this.idle();
  };

  repositoryIndex(readyOnly = false): Promise<IndexEntry[]> {
    return this.manager.index(readyOnly);
  }

  async loadModel(name: string, request: LoadRequest = {}): Promise<void> {
    checkControlMode(this.options);
    await this.manager.load(name, request);
  }

  /** With unloadDependents, the models it ran on that nothing else needs go too (see ModelManager.unload). */
  async unloadModel(name: string, options: { unloadDependents?: boolean } = {}): Promise<void> {
    checkControlMode(this.options);
    await this.manager.unload(name, options.unloadDependents ?? false);
  }

  /** Refusals by the server's limits so far, by limit name (nereid_limit_refusal_count). */
  limitRefusalCounts(): Record<string, number> {
    return Object.fromEntries(this.refusals.entries());
  }

  /**
   * Triton's statistics JSON: `{ model_stats: [...] }` for READY versions, with Nereid's additions: what is
   * queued and in flight now, as nv_inference_pending_request_count has it.
   */
  statistics(name?: string, version?: number): { model_stats: Record<string, unknown>[] } {
    return { model_stats: this.manager.statisticsOf(name, version).map((m) => ({ ...m.stats.toJSON(), nereid_pending_count: m.waiting(), nereid_inflight_count: m.inflight() })) };
  }

  /**
   * Nereid's per-instance statistics, which Triton does not report: for each READY version, each instance's
   * name, kind, whether it is passive, executions, inferences (rows) and compute times:
   * `{ model_stats: [{ name, version, instance_stats: [...] }] }`. Same selection and errors as statistics().
   */
  instanceStatistics(name?: string, version?: number): { model_stats: Record<string, unknown>[] } {
    return { model_stats: this.manager.statisticsOf(name, version).map((m) => m.stats.instancesJSON()) };
  }

  /**
   * The Prometheus exposition text (format 0.0.4) of Triton's metrics, as `nereid serve` serves it on
   * --metrics-port, for an application that exposes metrics itself. Fails when the server was created
   * without `metrics`.
   */
  metricsText(): Promise<string> {
    if (!this.metrics) return Promise.reject(unsupported('metrics are off: create the server with the metrics option'));
    return this.metrics.text();
  }

  /** The Content-Type of metricsText(). */
  get metricsContentType(): string {
    return this.metrics?.contentType ?? 'text/plain; version=0.0.4; charset=utf-8';
  }

  /**
   * The prom-client Registry behind metricsText(), undefined when metrics are off: an application can merge it
   * with its own (`Registry.merge([server.metricsRegistry, app])`) to serve both on one endpoint.
   */
  get metricsRegistry(): Registry | undefined {
    return this.metrics?.registry;
  }

  /**
   * Frontends call this with every error they answer: a refusal by one of the server's limits (an error with
   * a `limit`) is counted in `nereid_limit_refusal_count` and logged at most once a minute per limit.
   */
  reportError(e: unknown): void {
    // A frontend's own error type (the OpenAI one) may name a limit too.
    const limit = (e as { limit?: unknown } | null)?.limit;
    if (typeof limit === 'string') this.refusals.refused(limit, (e as Error).message);
  }

  /**
   * Stops the server: it turns unready and refuses new requests at once, lets the requests in flight finish,
   * then unloads every model (finalize() included), all within `timeoutSecs` (--exit-timeout-secs). Resolves
   * true when that was done in time. Otherwise, at the timeout, every request still queued or executing is
   * answered UNAVAILABLE, the processes and workers still running models are killed, and it resolves false
   * (tritonserver exits with status 1 then): past the timeout nothing waits on a backend that does not answer.
   */
  close(timeoutSecs = this.options.exitTimeoutSecs ?? 30): Promise<boolean> {
    this.closing ??= this.stop(timeoutSecs);
    return this.closing;
  }

  private async stop(timeoutSecs: number): Promise<boolean> {
    this.state = 'stopping';
    this.stopPolling();
    const secs = Math.max(0, timeoutSecs);
    if (this.inflightRequests > 0) this.log.info(`waiting for ${this.inflightRequests} in-flight inference requests (at most ${secs} s)`);
    const drained = (async () => {
      if (this.inflightRequests > 0) await new Promise<void>((resolve) => (this.idle = resolve));
      await this.manager.close();
    })();
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), secs * 1000)));
    const clean = await Promise.race([drained.then(() => true), expired]);
    clearTimeout(timer);
    if (!clean) {
      this.log.error(`exit timeout of ${secs} s expired with ${this.inflightRequests} inference requests in flight: answering them with an error and stopping the model instances still running`);
      this.manager.abort(unavailable(`Server is shutting down: the exit timeout of ${secs} s expired before this request finished`));
      // Killed instances settle at once; one that cannot be killed is given a moment, not more.
      await Promise.race([drained, new Promise((resolve) => setTimeout(resolve, ABORT_GRACE_MS).unref())]);
    }
    await this.closeServices();
    this.state = 'stopped';
    return clean;
  }

  /** Closes what the server opened beside its models: caches, stores, regions, metrics and trace exports. */
  private async closeServices(): Promise<void> {
    await this.cache?.close?.();
    await this.sequenceStore?.close();
    this.sharedMemory.close();
    this.metrics?.close();
    await this.traces.close();
  }
}


/**
 * The models the control mode loads at start: every model in modes none and poll, those --load-model names in
 * mode explicit (all with '*'). Returns the failures.
 */
function loadAtStart(manager: ModelManager, options: ServerOptions): Promise<Map<string, string>> {
  // Loading on demand, the modes none and poll start with nothing loaded.
  if ((options.modelControlMode ?? 'none') !== 'explicit') return options.modelLoadOnDemand ? Promise.resolve(new Map()) : manager.loadAll();
  const load = options.loadModels ?? [];
  return load.length === 0 ? Promise.resolve(new Map()) : manager.loadAll(load.includes('*') ? undefined : load);
}

/** The server's metrics (prom-client's module loaded as `Metrics`), reading the manager at scrape time. */
/** Triton's words and code when model control is off, in modes none and poll alike (its model_control_enabled). */
function checkControlMode(options: ServerOptions): void {
  if ((options.modelControlMode ?? 'none') !== 'explicit') {
    throw unavailable('explicit model load / unload is not allowed if polling is enabled');
  }
}

function serverMetrics(Metrics: typeof ServerMetrics, options: ServerOptions, manager: () => ModelManager, refusals: LimitRefusals, log: Logger): ServerMetrics {
  const m = options.metrics!;
  return new Metrics(() => manager().loadedVersions(), {
    settings: parseMetricsConfig(m.config ?? [], (w) => log.error(w)),
    intervalMs: m.intervalMs ?? 2000,
    cpu: m.cpu ?? true,
    limitRefusals: () => refusals.entries(),
    ...(options.modelMemoryBudget !== undefined || options.modelLoadOnDemand ? { modelLoads: () => manager().loadCounts() } : {}),
  });
}

/** Triton's model metadata of a loaded version. */
function metadataOf(m: ModelVersion, name: string, versions: string[]): ModelMetadata {
  const c = m.context.config;
  const tensor = (t: { name: string; datatype: string; shape: readonly number[] }): TensorMetadata => ({ name: t.name, datatype: t.datatype, shape: [...t.shape] });
  return {
    name, versions, platform: c.platform || c.backend,
    inputs: [...m.context.inputs.values()].map(tensor),
    outputs: [...m.context.outputs.values()].map(tensor),
  };
}

/** The model manager of a server's options: its loader's settings, and loads on demand within a memory budget. */
function modelManager(options: ServerOptions, created: CreateOptions, logger: Logger, parts: {
  cache: ResponseCache | undefined; sequenceStore: SequenceStateStore | undefined; calls: ModelCalls; metrics: ServerMetrics | undefined;
}): ModelManager {
  return new ModelManager(options.modelRepositories, {
    backends: created.backends ?? defaultBackends(),
    strictModelConfig: options.strictModelConfig ?? false,
    modelConfigName: options.modelConfigName ?? '',
    backendConfig: options.backendConfig ?? {},
    logger,
    loadThreads: options.modelLoadThreadCount ?? 4,
    loadRetries: options.modelLoadRetryCount ?? 0,
    instances: new InstanceBudget(options.modelMaxInstances, options.serverMaxInstances),
    rateLimiter: new RateLimiter(options.rateLimit === 'execution_count', options.rateLimitResources ?? []),
    responseCache: parts.cache,
    ...(parts.sequenceStore ? { sequenceStore: parts.sequenceStore } : {}),
    calls: parts.calls,
    ...(parts.metrics ? { metrics: parts.metrics } : {}),
  }, logger.child('manager.ts'), options.modelNamespacing ?? false, options.repositoryCacheDir, {
    budgetBytes: options.modelMemoryBudget,
    onDemand: options.modelLoadOnDemand,
    loadWaitSecs: options.modelLoadWaitSecs,
    pinned: options.modelControlMode === 'explicit' ? (options.loadModels ?? []).filter((n) => n !== '*') : [],
  });
}

/** The response cache --cache-config asks for: Triton's `local` (a byte budget, LRU) or `redis`. */
async function responseCache(c: ServerOptions['responseCache'], logger: Logger): Promise<ResponseCache | undefined> {
  if (!c) return undefined;
  const names = Object.keys(c);
  if (names.length > 1) throw invalidArg(`one response cache at a time: --cache-config names ${names.join(' and ')}`);
  if (c['redis']) return RedisResponseCache.connect(c['redis'], logger);
  const other = names.find((n) => n !== 'local');
  if (other !== undefined) throw new NereidError('UNSUPPORTED', `response cache '${other}' is not available: Nereid has the 'local' and 'redis' caches`);
  const size = Number(c['local']?.['size']);
  if (!Number.isSafeInteger(size) || size <= 0) throw invalidArg(`--cache-config local needs size=<bytes> (a positive integer), got '${c['local']?.['size'] ?? ''}'`);
  return new LocalResponseCache(size);
}

function defaultLogger(): Logger {
  return createLogger({ info: true, warning: true, error: true, verbose: 0, format: 'default', file: '' });
}

/** An error thrown by a callback that must not see it thrown back: raised on its own, as an unhandled rejection is. */
function rethrowLater(e: unknown): void {
  queueMicrotask(() => {
    throw e;
  });
}
