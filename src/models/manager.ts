import { NereidError, invalidArg, isNereidError, notFound, unavailable } from '../errors.js';
import type { ModelConfig } from '../config/types.js';
import { modelConfigToJson } from '../config/index.js';
import type { Logger } from '../observability/logger.js';
import { assertModelName, listVersions, modelTimestamps, scanRepositories, selectVersions, type ModelLocation } from '../repository/local.js';
import { writeOverrides, type OverrideDir } from '../repository/overrides.js';
import { loadVersion, prepareModel, readConfig, type LoaderOptions, type PreparedModel } from './loader.js';
import { EnsembleScheduler } from './ensemble.js';
import { routerTargets, stringParameter, VERSION_WEIGHTS_PARAMETER } from './router.js';
import { parseRoutes, WeightedRoutes } from './routing.js';
import type { ModelVersion } from './model-version.js';
import type { RequestBounds } from '../inference/request.js';

export type ModelState = 'UNKNOWN' | 'READY' | 'UNAVAILABLE' | 'LOADING' | 'UNLOADING';

export interface IndexEntry {
  name: string;
  version?: string;
  state?: ModelState;
  reason?: string;
}

interface VersionSlot {
  state: ModelState;
  reason: string;
  model: ModelVersion | undefined;
}

/** A model name and what is known of it: where it lives, its versions, and why it is not ready if it is not. */
interface ModelEntry {
  readonly name: string;
  location: ModelLocation | undefined;
  prepared: PreparedModel | undefined;
  configJson: string;
  versions: Map<number, VersionSlot>;
  /** Why the model as a whole failed (no version got as far as loading). */
  failure: string;
  timestamps: Map<string, bigint>;
  overrides: OverrideDir | undefined;
  /** Unloaded on request: not counted by strict readiness. */
  unloaded: boolean;
  /** Operations on one model run one at a time, in order. */
  busy: Promise<void>;
}

export interface LoadRequest {
  readonly config?: ModelConfig;
  readonly files?: ReadonlyMap<string, Uint8Array>;
}

/**
 * The lifecycle of every model: which versions are loaded, loading, ready or unavailable, and the swaps that
 * keep a model serving while a new version of it loads. A new version loads beside the old; only when it is
 * READY does it take new requests, and the old one drains before it is released.
 */
export class ModelManager {
  private readonly entries = new Map<string, ModelEntry>();
  /** Every version loaded and not yet released, those being unloaded included (for abort()). */
  private readonly live = new Set<ModelVersion>();

  private readonly opts: LoaderOptions;

  constructor(private readonly repositories: readonly string[], opts: LoaderOptions, private readonly logger: Logger) {
    this.opts = {
      ...opts,
      resolveModel: (name, version) => this.resolve(name, version),
      routeModel: (name, key) => this.resolveRouted(name, undefined, key),
      hasReadyVersion: (name) => this.readyVersions(name).length > 0,
    };
  }

  /**
   * The version an inference request runs on: the one it names; else, when the model's config splits traffic
   * between versions (nereid_version_weights), a weighted pick among the ready ones (sticky with a routing
   * key); else the highest ready version.
   */
  resolveRouted(name: string, version: number | undefined, routingKey: string | undefined): ModelVersion {
    const latest = this.resolve(name, version);
    if (version !== undefined) return latest;
    const routes = versionRoutes(latest);
    if (!routes) return latest;
    const entry = this.entries.get(name)!;
    const ready = (v: string): boolean => entry.versions.get(Number(v))?.state === 'READY';
    const picked = routes.pick(routingKey, ready);
    return picked === undefined ? latest : this.resolve(name, Number(picked));
  }

  /**
   * The version a request should run on: the one asked for, or the highest READY one. Codes as Triton's model
   * lifecycle: a name it never had is INVALID_ARG, a version it does not have or no READY version at all
   * NOT_FOUND, a version that exists but is not READY UNAVAILABLE.
   */
  resolve(name: string, version: number | undefined): ModelVersion {
    const entry = this.entries.get(name);
    if (!entry) throw invalidArg(`Request for unknown model: '${name}' is not found`);
    if (version !== undefined) {
      const slot = entry.versions.get(version);
      if (!slot) throw notFound(`Request for unknown model: '${name}' version ${version} is not found`);
      if (slot.state !== 'READY' || !slot.model) throw unavailable(`Request for unknown model: '${name}' version ${version} is not at ready state`);
      return slot.model;
    }
    let best: ModelVersion | undefined;
    for (const [, slot] of entry.versions) {
      if (slot.state === 'READY' && slot.model && (!best || slot.model.version > best.version)) best = slot.model;
    }
    if (!best) throw notFound(`Request for unknown model: '${name}' has no available versions`);
    return best;
  }

  /**
   * The bounds of the version a request would reach (resolve's errors when there is none). With weighted
   * version routing the pick comes later, so the loosest of the ready versions' bounds.
   */
  requestBounds(name: string, version: number | undefined): RequestBounds {
    const latest = this.resolve(name, version);
    if (version !== undefined || !versionRoutes(latest)) return latest.context.bounds;
    let b = latest.context.bounds;
    for (const [, slot] of this.entries.get(name)!.versions) {
      const o = slot.state === 'READY' ? slot.model?.context.bounds : undefined;
      if (o) b = { ...b, inputs: Math.max(b.inputs, o.inputs), outputs: Math.max(b.outputs, o.outputs), rank: Math.max(b.rank, o.rank) };
    }
    return b;
  }

  /** Loaded config of a model version, as the config endpoint shows it. */
  config(name: string, version: number | undefined): ModelConfig {
    return this.resolve(name, version).context.config;
  }

  /**
   * The one state every report of a model's readiness reads: its ready endpoints (HTTP and gRPC) and the
   * repository index. A version the lifecycle holds READY whose instances cannot all serve (a stub that is
   * down, hung past the execute timeout, or could not start again) is UNAVAILABLE, with their reasons.
   */
  private versionState(slot: VersionSlot): { state: ModelState; reason: string } {
    if (slot.state !== 'READY' || !slot.model) return slot;
    const status = slot.model.status();
    return status.ready ? slot : { state: 'UNAVAILABLE', reason: status.reason };
  }

  /**
   * Whether a model version is ready, as the ready endpoints answer (see versionState). Throws as resolve()
   * for a name never known; false for a version that is not there or not READY.
   */
  isReady(name: string, version: number | undefined): boolean {
    let model: ModelVersion;
    try {
      model = this.resolve(name, version);
    } catch (e) {
      if (!this.entries.has(name)) throw e;
      return false;
    }
    return model.status().ready;
  }

  readyVersions(name: string): number[] {
    const entry = this.entries.get(name);
    if (!entry) return [];
    return [...entry.versions].filter(([, s]) => s.state === 'READY').map(([v]) => v).sort((a, b) => a - b);
  }

  isKnown(name: string): boolean {
    return this.entries.has(name);
  }

  /**
   * True when every model the server was asked to serve has a version the lifecycle holds READY (for
   * --strict-readiness), as Triton counts it: an instance that is down does not make the whole server unready,
   * or a server taken out of service for it would get no request to start the instance again with.
   */
  allReady(): boolean {
    for (const entry of this.entries.values()) {
      if (entry.unloaded) continue;
      if (![...entry.versions.values()].some((s) => s.state === 'READY')) return false;
    }
    return true;
  }

  /**
   * Triton's repository index: every model in the repositories, with state and reason for those the server
   * has tried to load (a model never loaded is listed by name only); `readyOnly` keeps READY versions only.
   */
  async index(readyOnly: boolean): Promise<IndexEntry[]> {
    const scan = await scanRepositories(this.repositories).catch(() => undefined);
    const names = new Set([...this.entries.keys(), ...(scan?.models.keys() ?? []), ...(scan?.duplicates.keys() ?? [])]);
    const out: IndexEntry[] = [];
    for (const name of [...names].sort()) {
      const entry = this.entries.get(name);
      if (!entry) {
        if (!readyOnly) out.push({ name });
        continue;
      }
      if (entry.versions.size === 0) {
        if (!readyOnly) out.push({ name, state: 'UNAVAILABLE', reason: entry.failure || 'unloaded' });
        continue;
      }
      for (const v of [...entry.versions.keys()].sort((a, b) => a - b)) {
        const s = this.versionState(entry.versions.get(v)!);
        if (readyOnly && s.state !== 'READY') continue;
        out.push({ name, version: String(v), state: s.state, ...(s.reason ? { reason: s.reason } : {}) });
      }
    }
    return out;
  }

  /** Every ModelVersion that is READY (for statistics). */
  loadedVersions(name?: string): ModelVersion[] {
    const out: ModelVersion[] = [];
    for (const entry of this.entries.values()) {
      if (name !== undefined && entry.name !== name) continue;
      for (const s of entry.versions.values()) if (s.state === 'READY' && s.model) out.push(s.model);
    }
    return out.sort((a, b) => a.name.localeCompare(b.name) || a.version - b.version);
  }

  /** Loads every model in the repositories (modes none and poll), or the named ones. Returns the failures. */
  async loadAll(names?: readonly string[]): Promise<Map<string, string>> {
    const scan = await scanRepositories(this.repositories);
    for (const [name, repos] of scan.duplicates) {
      this.entry(name).failure = `model '${name}' is not unique across all model repositories: ${repos.join(', ')}`;
    }
    const wanted = names ? await this.withDependencies(names, scan.models) : [...scan.models.keys()];
    const failures = new Map<string, string>();
    for (const name of scan.duplicates.keys()) if (!names || names.includes(name)) failures.set(name, this.entry(name).failure);
    // Ensembles load after the models they run on, as Triton orders them.
    const ensembles = new Set<string>();
    for (const name of wanted) {
      const location = scan.models.get(name);
      if (location && (await this.isEnsemble(name, location.dir))) ensembles.add(name);
    }
    const ordered = [...wanted.filter((n) => !ensembles.has(n)), ...wanted.filter((n) => ensembles.has(n))];
    await this.loadNames(ordered, ensembles, scan, failures);
    return failures;
  }

  /** Loads models with at most --model-load-thread-count at once; ensembles wait until the others are done. */
  private async loadNames(ordered: string[], ensembles: Set<string>, scan: Awaited<ReturnType<typeof scanRepositories>>, failures: Map<string, string>): Promise<void> {
    const load = async (name: string): Promise<void> => {
      const location = scan.models.get(name);
      if (!location) {
        if (!scan.duplicates.has(name)) failures.set(name, this.fail(name, `failed to load '${name}', failed to poll from model repository`));
        return;
      }
      const err = await this.withEntry(name, (e) => this.loadEntry(e, location, {}));
      if (err) failures.set(name, err.message);
    };
    await runLimited(ordered.filter((n) => !ensembles.has(n)), this.opts.loadThreads, load);
    // An ensemble may run on another ensemble: load them in dependency order, one pass per level.
    let left = ordered.filter((n) => ensembles.has(n));
    while (left.length > 0) {
      const waiting = new Set(left);
      const ready: string[] = [];
      for (const n of left) {
        const deps = await this.dependencies(n, scan.models.get(n)!.dir);
        if (!deps.some((d) => waiting.has(d) && d !== n)) ready.push(n);
      }
      const batch = ready.length > 0 ? ready : left; // a cycle: load them anyway and let each fail clearly
      await runLimited(batch, this.opts.loadThreads, load);
      left = left.filter((n) => !batch.includes(n));
    }
  }

  /** The named models and, for ensembles among them, every model they run on (--load-model of an ensemble). */
  private async withDependencies(names: readonly string[], models: ReadonlyMap<string, ModelLocation>): Promise<string[]> {
    const out = [...names];
    for (let i = 0; i < out.length; i++) {
      const location = models.get(out[i]!);
      if (!location) continue;
      for (const d of await this.dependencies(out[i]!, location.dir)) if (!out.includes(d)) out.push(d);
    }
    return out;
  }

  /**
   * Whether a model runs on other models (an ensemble, or a router), from its config (false when the config
   * cannot be read): such models load after the others.
   */
  /** Also lets the model's backend start ahead (Backend.prestart), as its config is read here before any load. */
  private async isEnsemble(name: string, dir: string): Promise<boolean> {
    const config = await readConfig(dir, name, this.opts).catch(() => undefined);
    if (config?.backend) this.opts.backends.prestart(config.backend, dir);
    return config?.platform === 'ensemble' || config?.backend === 'router';
  }

  private async dependencies(name: string, dir: string): Promise<string[]> {
    const config = await readConfig(dir, name, this.opts).catch(() => undefined);
    return config ? modelsRunOn(config) : [];
  }

  /** The repository API's load: (re)loads a model, with optional config and file overrides. */
  async load(name: string, req: LoadRequest): Promise<void> {
    assertModelName(name);
    if (req.files && req.files.size > 0 && !req.config) {
      throw invalidArg(`failed to load '${name}': a model config must be provided when file overrides are given`);
    }
    let location: ModelLocation | undefined;
    if (!req.files || req.files.size === 0) {
      const scan = await scanRepositories(this.repositories);
      if (scan.duplicates.has(name)) throw invalidArg(`failed to load '${name}': model is not unique across all model repositories`);
      location = scan.models.get(name);
      if (!location) throw invalidArg(`failed to load '${name}', failed to poll from model repository`);
    }
    // Loading an ensemble loads the composing models that are not loaded yet, as Triton does.
    const config = req.config ?? (location ? await readConfig(location.dir, name, this.opts).catch(() => undefined) : undefined);
    for (const other of config ? modelsRunOn(config) : []) {
      if (other !== name && this.readyVersions(other).length === 0) await this.load(other, {}).catch(() => undefined);
    }
    const err = await this.withEntry(name, (e) => this.loadEntry(e, location, req));
    // A refusal by a limit keeps its code and names the limit, so that the frontend counts it.
    if (err) throw new NereidError(err.limit ? err.code : 'INVALID_ARG', `failed to load '${name}', ${err.message}`, { limit: err.limit });
  }

  async unload(name: string): Promise<void> {
    const entry = this.entries.get(name);
    if (!entry) throw invalidArg(`failed to unload '${name}', model is not loaded`);
    await this.withEntry(name, async (e) => {
      await this.retire(e, [...e.versions.keys()]);
      e.unloaded = true;
      e.failure = '';
      await e.overrides?.remove();
      e.overrides = undefined;
      e.prepared = undefined;
      e.configJson = '';
      e.timestamps = new Map();
      return undefined;
    });
  }

  /** Poll mode: one pass over the repositories, loading what appeared or changed and unloading what went. */
  async poll(): Promise<void> {
    const scan = await scanRepositories(this.repositories);
    const work: Promise<unknown>[] = [];
    for (const [name, location] of scan.models) {
      const entry = this.entries.get(name);
      if (entry?.overrides) continue; // a model loaded from overrides is not the repository's
      const stamps = await modelTimestamps(location.dir);
      if (entry && sameStamps(entry.timestamps, stamps) && entry.location?.dir === location.dir) continue;
      work.push(this.withEntry(name, (e) => this.loadEntry(e, location, {})));
    }
    for (const [name, entry] of this.entries) {
      if (!scan.models.has(name) && !entry.overrides && entry.versions.size > 0) work.push(this.unload(name).catch(() => undefined));
    }
    await Promise.all(work);
  }

  /** Answers every queued request of every model with `error`; running executions finish. */
  rejectQueued(error: NereidError): void {
    for (const entry of this.entries.values()) for (const slot of entry.versions.values()) slot.model?.rejectQueued(error);
  }

  /**
   * Shutdown past the exit timeout: every version still loaded or unloading answers every request it holds
   * with `error` and kills its instances (see ModelVersion.abort), so that close() ends.
   */
  abort(error: NereidError): void {
    for (const v of this.live) v.abort(error);
  }

  /** Unloads everything, letting requests in flight finish. */
  async close(): Promise<void> {
    await Promise.all([...this.entries.keys()].map((n) => this.unload(n).catch(() => undefined)));
  }

  /** Unloads a version no longer in its slot (it drains first). */
  private async release(model: ModelVersion): Promise<void> {
    await model.unload();
    this.live.delete(model);
  }

  private entry(name: string): ModelEntry {
    let e = this.entries.get(name);
    if (!e) {
      e = { name, location: undefined, prepared: undefined, configJson: '', versions: new Map(), failure: '', timestamps: new Map(), overrides: undefined, unloaded: false, busy: Promise.resolve() };
      this.entries.set(name, e);
    }
    return e;
  }

  private fail(name: string, reason: string): string {
    const e = this.entry(name);
    if (e.versions.size === 0) e.failure = reason;
    return reason;
  }

  /** Runs `op` after every earlier operation on the same model. */
  private withEntry<T>(name: string, op: (e: ModelEntry) => Promise<T>): Promise<T> {
    const e = this.entry(name);
    const run = e.busy.then(() => op(e));
    e.busy = run.then(() => undefined, () => undefined);
    return run;
  }

  /**
   * Loads or reloads one model. Returns the failure (its message is the reason), or undefined on success. On
   * failure the versions that were serving keep serving.
   */
  private async loadEntry(e: ModelEntry, location: ModelLocation | undefined, req: LoadRequest): Promise<NereidError | undefined> {
    let overrides: OverrideDir | undefined;
    let prepared: PreparedModel;
    let stamps = new Map<string, bigint>();
    try {
      if (req.files && req.files.size > 0) overrides = await writeOverrides(e.name, req.files);
      const modelDir = overrides?.modelDir ?? location!.dir;
      if (!overrides) stamps = await modelTimestamps(modelDir);
      prepared = await prepareModel(e.name, modelDir, req.config ? structuredClone(req.config) : undefined, this.opts);
    } catch (err) {
      await overrides?.remove();
      const reason = reasonOf(err);
      this.logger.error(`failed to load '${e.name}': ${reason}`);
      if (e.versions.size === 0) e.failure = reason;
      return failure(reason, err);
    }
    const configJson = JSON.stringify(modelConfigToJson(prepared.config));
    const available = await listVersions(prepared.modelDir);
    const wanted = selectVersions(prepared.config.version_policy, available);
    const sameConfig = configJson === e.configJson && !overrides && !e.overrides;
    const versionStamps = (v: number) => stamps.get(String(v));
    const reuse = (v: number) => sameConfig && e.versions.get(v)?.state === 'READY' && versionStamps(v) === e.timestamps.get(String(v));
    const toLoad = wanted.filter((v) => !reuse(v));
    const loaded = await Promise.all(toLoad.map(async (v) => {
      const slot = e.versions.get(v);
      if (!slot) e.versions.set(v, { state: 'LOADING', reason: '', model: undefined });
      this.logger.info(`loading: ${e.name}:${v}`);
      try {
        const model = await loadVersion(prepared, v, this.opts);
        this.live.add(model);
        this.logger.info(`successfully loaded '${e.name}' version ${v}`);
        return [v, model, '', undefined] as const;
      } catch (err) {
        const reason = reasonOf(err);
        this.logger.error(`failed to load '${e.name}' version ${v}: ${reason}`);
        return [v, undefined, reason, err] as const;
      }
    }));
    const failed = loaded.filter(([, m]) => !m);
    const previous = e.overrides;
    // Swap in what loaded; retire versions no longer wanted and the old objects of reloaded versions.
    const retired: ModelVersion[] = [];
    for (const [v, model, reason] of loaded) {
      const slot = e.versions.get(v)!;
      if (model) {
        if (slot.model) retired.push(slot.model);
        slot.model = model;
        slot.state = 'READY';
        slot.reason = '';
      } else if (!slot.model) {
        slot.state = 'UNAVAILABLE';
        slot.reason = reason;
      }
    }
    for (const [v, slot] of e.versions) if (!wanted.includes(v) && !slot.model) e.versions.delete(v);
    const dropped = [...e.versions.keys()].filter((v) => !wanted.includes(v));
    e.prepared = prepared;
    e.configJson = configJson;
    e.location = location;
    e.timestamps = stamps;
    e.unloaded = false;
    e.failure = wanted.length === 0 ? `no version is available for model '${e.name}'` : '';
    await Promise.all([this.retire(e, dropped), ...retired.map((m) => this.release(m))]);
    // The folder of a file-override load goes as soon as nothing runs from it: at once when no version of it
    // loaded (the versions still serving, if any, came from the previous folder), else when it is replaced.
    const serving = [...e.versions.values()].some((slot) => slot.model);
    if (overrides && !loaded.some(([, m]) => m)) {
      await overrides.remove();
      overrides = serving ? previous : undefined;
    }
    e.overrides = overrides;
    if (previous && previous !== overrides) await previous.remove();
    if (wanted.length === 0) return failure(e.failure, undefined);
    if (failed.length === 0) return undefined;
    return failure(failed.map(([v, , r]) => `version ${v}: ${r}`).join('; '), failed.find(([, , , err]) => isNereidError(err) && err.limit)?.[3]);
  }

  /** Takes versions out of service: new requests stop at once, running ones finish, then they are released. */
  private async retire(e: ModelEntry, versions: number[]): Promise<void> {
    await Promise.all(versions.map(async (v) => {
      const slot = e.versions.get(v);
      if (!slot) return;
      const model = slot.model;
      slot.state = 'UNLOADING';
      slot.model = undefined;
      if (model) await this.release(model);
      slot.state = 'UNAVAILABLE';
      slot.reason = 'unloaded';
      if (model) this.logger.info(`successfully unloaded '${e.name}' version ${v}`);
    }));
  }
}

/** A load's failure: `reason`, with the code and limit of `cause` when a limit refused it. */
function failure(reason: string, cause: unknown): NereidError {
  if (isNereidError(cause) && cause.limit !== undefined) return new NereidError(cause.code, reason, { limit: cause.limit });
  return invalidArg(reason);
}

function reasonOf(err: unknown): string {
  return isNereidError(err) ? err.message : err instanceof Error ? err.message : String(err);
}

function sameStamps(a: Map<string, bigint>, b: Map<string, bigint>): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}

/** Runs `fn` over `items` with at most `limit` at once (--model-load-thread-count). */
async function runLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
}


/** The models an ensemble's steps or a router's routes run on. */
function modelsRunOn(config: ModelConfig): string[] {
  if (config.platform === 'ensemble') return EnsembleScheduler.composingModels(config).map((s) => s.name);
  if (config.backend === 'router') {
    try {
      return routerTargets(config).map((r) => r.target);
    } catch {
      return []; // the load itself reports the bad parameter
    }
  }
  return [];
}

const versionRouteCache = new WeakMap<ModelVersion, WeightedRoutes | null>();

/** A version's nereid_version_weights, parsed once (null when it has none or they do not parse). */
function versionRoutes(v: ModelVersion): WeightedRoutes | null {
  let routes = versionRouteCache.get(v);
  if (routes === undefined) {
    const spec = stringParameter(v.context.config, VERSION_WEIGHTS_PARAMETER);
    routes = spec === undefined ? null : new WeightedRoutes(parseRoutes(spec, VERSION_WEIGHTS_PARAMETER));
    versionRouteCache.set(v, routes);
    if (routes) v.stats.routes = routes.counts;
  }
  return routes;
}
