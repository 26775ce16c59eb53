import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { NereidError, invalidArg, isNereidError, notFound, unavailable } from '../errors.js';
import type { ModelConfig } from '../config/types.js';
import { modelConfigToJson } from '../config/index.js';
import { PLATFORM_BACKEND } from '../config/normalize.js';
import type { Logger } from '../observability/logger.js';
import { assertModelName, listVersions, modelKey, modelTimestamps, selectVersions, type ModelLocation, type RepositoryScan } from '../repository/local.js';
import { openSources, scanSources, type RepositorySource } from '../repository/source.js';
import { writeOverrides, type OverrideDir } from '../repository/overrides.js';
import { redactPaths, shownPaths, type PathShown } from '../repository/redact.js';
import { loadVersion, prepareModel, readConfig, type LoaderOptions, type PreparedModel } from './loader.js';
import { EnsembleScheduler } from './ensemble.js';
import { routerTargets, routingKey } from './router.js';
import type { WeightedRoutes } from './routing.js';
import { ModelVersion } from './model-version.js';
import { looserBounds, VersionSplit } from './version-split.js';
import type { InferenceRequest } from '../inference/request.js';

/** Triton's reason when a model to load could not be read from the repository (or written from overrides). */
const POLL_FAILED = 'failed to poll from model repository';

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

/** A model and what is known of it: where it lives, its versions, and why it is not ready if it is not. */
interface ModelEntry {
  readonly name: string;
  /** Its repository with --model-namespacing, else ''. */
  readonly namespace: string;
  /** Its key in the manager (see modelKey). */
  readonly key: string;
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
  /**
   * Loaded because it was asked for by name (a load request, --load-model, every model in modes none and
   * poll), not only as a model an ensemble runs on: unload_dependents leaves such a model loaded.
   */
  explicit: boolean;
  /**
   * Unloaded because a model one of its steps runs on stopped serving. Triton keeps such an ensemble in its
   * dependency graph and loads it again once every step has a model to run on, unless it is unloaded by name.
   */
  waiting: boolean;
  /** The config the last load was given in place of the repository's, for loading it again the same way. */
  configOverride: ModelConfig | undefined;
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
  /** By key: the name alone, or namespace and name with --model-namespacing. */
  private readonly entries = new Map<string, ModelEntry>();
  /** The entries of each name, with --model-namespacing (entries are never removed, so neither are these). */
  private readonly byName = new Map<string, ModelEntry[]>();
  /** Every version loaded and not yet released, those being unloaded included (for abort()). */
  private readonly live = new Set<ModelVersion>();

  private readonly opts: LoaderOptions;
  private readonly sources: RepositorySource[];

  /** `cacheDir`: where models of repositories at URLs are downloaded (--repository-cache-dir). */
  constructor(
    repositories: readonly string[],
    opts: LoaderOptions,
    private readonly logger: Logger,
    private readonly namespacing = false,
    cacheDir?: string,
  ) {
    this.sources = openSources(repositories, { logger: logger.child('source.ts'), ...(cacheDir ? { cacheDir } : {}) });
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
    if (version !== undefined || !latest.routes) return latest;
    return this.pick(name, latest, latest.routes, routingKey);
  }

  private pick(name: string, latest: ModelVersion, routes: WeightedRoutes, routingKey: string | undefined): ModelVersion {
    const entry = this.lookup(name)!;
    const ready = (v: string): boolean => entry.versions.get(Number(v))?.state === 'READY';
    const picked = routes.pick(routingKey, ready);
    return picked === undefined ? latest : this.resolve(name, Number(picked));
  }

  /**
   * The model a request names, looked up once, before the request is read: the version it names or the
   * highest READY one (resolve's errors when there is none). With version weights and no version named, a
   * VersionSplit, whose pick waits for the request's routing key (see route()).
   */
  target(name: string, version: number | undefined): ModelVersion | VersionSplit {
    const latest = this.resolve(name, version);
    const routes = version === undefined ? latest.routes : null;
    if (routes === null) return latest;
    let bounds = latest.bounds;
    for (const [, slot] of this.lookup(name)!.versions) {
      if (slot.state === 'READY' && slot.model) bounds = looserBounds(bounds, slot.model.bounds);
    }
    return new VersionSplit(latest, bounds, (key) => this.pick(name, latest, routes, key));
  }

  /**
   * The version a request runs on, from the target() it was resolved to: that version itself while it serves
   * (no lookup), a split's pick, or a lookup afresh when the version began unloading since (a newer one
   * replaced it while the request was being read) or the target is not one of target()'s.
   */
  route(target: object, request: InferenceRequest): ModelVersion {
    if (target instanceof ModelVersion && !target.unloading) return target;
    const key = routingKey(request.parameters, request.sequenceId);
    const picked = target instanceof VersionSplit ? target.pick(key) : undefined;
    return picked !== undefined && !picked.unloading ? picked : this.resolveRouted(request.model, request.version, key);
  }

  /**
   * The version a request should run on: the one asked for, or the highest READY one. Codes as Triton's model
   * lifecycle: a name it never had is INVALID_ARG, a version it does not have or no READY version at all
   * NOT_FOUND, a version that exists but is not READY UNAVAILABLE.
   */
  resolve(name: string, version: number | undefined): ModelVersion {
    const entry = this.lookup(name);
    if (!entry) throw invalidArg(`Request for unknown model: '${name}' is not found`);
    return this.versionOf(entry, version);
  }

  /**
   * The entry a request naming `name` reaches. With --model-namespacing a name in several repositories is
   * ambiguous, in Triton's words; only models not unloaded count, as Triton forgets an unloaded model's namespace.
   */
  private lookup(name: string): ModelEntry | undefined {
    if (!this.namespacing) return this.entries.get(name);
    const all = this.byName.get(name);
    if (!all) return undefined;
    const live = all.filter((e) => !e.unloaded);
    if (live.length > 1) {
      throw invalidArg(`There are ${live.length} identifiers of model '${name}' in global map, model namespace must be provided to resolve ambiguity.`);
    }
    return live[0] ?? all[0];
  }

  /**
   * How an ensemble in `namespace` finds a step's model: in its own repository first, else wherever the name is
   * unique (Triton's preferred identifier, then its fuzzy match).
   */
  private resolveFrom(namespace: string, name: string, version: number | undefined): ModelVersion {
    const own = this.entries.get(modelKey(namespace, name));
    if (own && !own.unloaded) return this.versionOf(own, version);
    return this.resolve(name, version);
  }

  private versionOf(entry: ModelEntry, version: number | undefined): ModelVersion {
    const name = entry.name;
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
    this.lookup(name); // an ambiguous name is an error here too, as in Triton
    try {
      model = this.resolve(name, version);
    } catch {
      // Triton's ModelIsReady answers not-ready, never an error, for any name it cannot serve: one in the
      // repository but not loaded (explicit mode), one unloaded, and one not in the repository at all.
      return false;
    }
    return model.status().ready;
  }

  readyVersions(name: string): number[] {
    let entry: ModelEntry | undefined;
    try {
      entry = this.lookup(name);
    } catch {
      return []; // ambiguous: no one version list to give
    }
    if (!entry) return [];
    return [...entry.versions].filter(([, s]) => s.state === 'READY').map(([v]) => v).sort((a, b) => a - b);
  }

  /**
   * Whether a model an ensemble runs on needs loading: it has no READY version, or (with namespacing) one of
   * the repositories has a model of that name that is not serving, such as one put back since.
   */
  private notServing(name: string, scan: RepositoryScan | undefined): boolean {
    const ready = (e: ModelEntry | undefined): boolean => !!e && !e.unloaded && [...e.versions.values()].some((s) => s.state === 'READY');
    if (!this.namespacing) return !ready(this.entries.get(name));
    const keys = scan ? locationsOf(scan, name).map((l) => l.key) : (this.byName.get(name) ?? []).map((e) => e.key);
    return keys.length === 0 || keys.some((k) => !ready(this.entries.get(k)));
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
    const scan = await scanSources(this.sources, this.namespacing).catch(() => undefined);
    const keys = new Set([...this.entries.keys(), ...(scan?.models.keys() ?? []), ...(scan?.duplicates.keys() ?? [])]);
    const nameOf = (key: string): string => this.entries.get(key)?.name ?? scan?.models.get(key)?.name ?? key;
    // By name; with namespacing one name may come once per repository, each with its own versions.
    const sorted = [...keys].map((key) => [nameOf(key), key] as const).sort(([a, ka], [b, kb]) => (a < b ? -1 : a > b ? 1 : ka < kb ? -1 : ka > kb ? 1 : 0));
    const out: IndexEntry[] = [];
    for (const [name, key] of sorted) {
      const entry = this.entries.get(key);
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
    // A failure here only means no head start: the loads report their own errors.
    this.preloadCachedBackends().catch(() => undefined);
    const scan = await scanSources(this.sources, this.namespacing);
    for (const [name, repos] of scan.duplicates) {
      this.entry(name).failure = `model '${name}' is not unique across all model repositories: ${repos.join(', ')}`;
    }
    // Keys: a name asked for is every model of that name, one per repository with namespacing.
    let wanted = [...scan.models.keys()];
    if (names) {
      const wantedNames = await this.withDependencies(names, scan);
      const found = [...scan.models.values()].filter((l) => wantedNames.includes(l.name));
      // A name in no repository stays, under its name, to fail as Triton's failed poll.
      wanted = [...found.map((l) => l.key), ...wantedNames.filter((n) => !found.some((l) => l.name === n))];
    }
    for (const key of wanted) {
      const name = scan.models.get(key)?.name ?? key;
      if (!names || names.includes(name)) this.entry(key, name).explicit = true;
    }
    const failures = new Map<string, string>();
    for (const name of scan.duplicates.keys()) if (!names || names.includes(name)) failures.set(name, this.entry(name).failure);
    // Models of repositories at URLs are downloaded first; one that cannot be fails alone.
    await runLimited(wanted, this.opts.loadThreads, async (key) => {
      const location = scan.models.get(key);
      const reason = location && (await this.fetchModel(location));
      if (reason === undefined) return;
      failures.set(location!.name, this.fail(key, reason, location!.name));
      wanted = wanted.filter((k) => k !== key);
    });
    // Ensembles load after the models they run on, as Triton orders them.
    const ensembles = new Set<string>();
    for (const key of wanted) {
      const location = scan.models.get(key);
      if (location && (await this.isEnsemble(location.name, location.dir))) ensembles.add(key);
    }
    const ordered = [...wanted.filter((n) => !ensembles.has(n)), ...wanted.filter((n) => ensembles.has(n))];
    await this.loadNames(ordered, ensembles, scan, failures);
    return failures;
  }

  /**
   * While the repositories at URLs are listed, the backends that the configs in their download cache name
   * load, in the listing's wait for the store: a restart with the bucket unchanged then finds them loaded. A
   * config that changed since costs at most a backend loaded for nothing.
   */
  private async preloadCachedBackends(): Promise<void> {
    const backends = new Set<string>();
    for (const source of this.sources) {
      if (!source.fetchModel) continue;
      for (const name of await readdir(source.root).catch(() => [] as string[])) {
        const config = await readConfig(join(source.root, name), name, this.opts).catch(() => undefined);
        const backend = config?.backend || PLATFORM_BACKEND[config?.platform ?? ''];
        if (!backend || backends.has(backend)) continue;
        backends.add(backend);
        this.opts.backends.preload(backend);
      }
    }
  }

  /** Loads models with at most --model-load-thread-count at once; ensembles wait until the others are done. */
  private async loadNames(ordered: string[], ensembles: Set<string>, scan: RepositoryScan, failures: Map<string, string>): Promise<void> {
    const load = async (key: string): Promise<void> => {
      const location = scan.models.get(key);
      if (!location) {
        if (!scan.duplicates.has(key)) failures.set(key, this.fail(key, `failed to load '${key}', failed to poll from model repository`));
        return;
      }
      const err = await this.withEntry(key, (e) => this.loadEntry(e, location, {}), location.name);
      if (err) failures.set(location.name, err.message);
    };
    await runLimited(ordered.filter((n) => !ensembles.has(n)), this.opts.loadThreads, load);
    // An ensemble may run on another ensemble: load them in dependency order, one pass per level.
    let left = ordered.filter((n) => ensembles.has(n));
    while (left.length > 0) {
      const waiting = new Set(left.map((k) => scan.models.get(k)!.name));
      const ready: string[] = [];
      for (const n of left) {
        const location = scan.models.get(n)!;
        const deps = await this.dependencies(location.name, location.dir);
        if (!deps.some((d) => waiting.has(d) && d !== location.name)) ready.push(n);
      }
      const batch = ready.length > 0 ? ready : left; // a cycle: load them anyway and let each fail clearly
      await runLimited(batch, this.opts.loadThreads, load);
      left = left.filter((n) => !batch.includes(n));
    }
  }

  /** The named models and, for ensembles among them, every model they run on (--load-model of an ensemble). */
  private async withDependencies(names: readonly string[], scan: RepositoryScan): Promise<string[]> {
    const out = [...names];
    for (let i = 0; i < out.length; i++) {
      for (const location of locationsOf(scan, out[i]!)) {
        await this.fetchModel(location);
        for (const d of await this.dependencies(location.name, location.dir)) if (!out.includes(d)) out.push(d);
      }
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

  /**
   * The repository API's load: (re)loads a model, with optional config and file overrides. `explicit` is false
   * for the models an ensemble being loaded runs on.
   */
  async load(name: string, req: LoadRequest, explicit = true): Promise<void> {
    assertModelName(name);
    if (req.files && req.files.size > 0 && !req.config) {
      throw invalidArg(`failed to load '${name}': a model config must be provided when file overrides are given`);
    }
    // A model built from file overrides has no repository, so no namespace (as in Triton).
    let locations: (ModelLocation | undefined)[] = [undefined];
    let scan: RepositoryScan | undefined;
    if (!req.files || req.files.size === 0) {
      scan = await this.scanForLoad(name);
      if (scan.duplicates.has(name)) throw invalidArg(`failed to load '${name}', ${POLL_FAILED}: model is not unique across all model repositories`);
      const found = locationsOf(scan, name);
      if (found.length === 0) throw invalidArg(`failed to load '${name}', ${POLL_FAILED}`);
      locations = found;
      for (const location of found) {
        const reason = await this.fetchModel(location);
        if (reason !== undefined) throw new NereidError('INTERNAL', `failed to load '${name}', ${this.fail(location.key, reason, name)}`);
      }
    }
    // With namespacing every repository's model of that name loads.
    for (const location of locations) {
      // Loading an ensemble loads the composing models that are not loaded yet, as Triton does.
      const config = req.config ?? (location ? await readConfig(location.dir, name, this.opts).catch(() => undefined) : undefined);
      for (const other of config ? modelsRunOn(config) : []) {
        if (other !== name && this.notServing(other, scan)) await this.load(other, {}, false).catch(() => undefined);
      }
    }
    let first: NereidError | undefined;
    for (const location of locations) {
      const key = location?.key ?? name;
      if (explicit) this.entry(key, name).explicit = true;
      first ??= await this.withEntry(key, (e) => this.loadEntry(e, location, req), name);
    }
    await this.settleEnsembles();
    // A refusal by a limit keeps its code and names the limit, so that the frontend counts it.
    // A failed poll keeps Triton's INTERNAL; any other failure is the client's to fix (see failure()).
    if (first) throw new NereidError(first.limit || first.code === 'INTERNAL' ? first.code : 'INVALID_ARG', first.message, { limit: first.limit });
  }

  /** The repositories as a load sees them; one that cannot be read is Triton's failed poll, its path logged only. */
  private async scanForLoad(name: string): Promise<RepositoryScan> {
    try {
      return await scanSources(this.sources, this.namespacing);
    } catch (e) {
      this.logger.error(`failed to poll the model repositories for '${name}': ${reasonOf(e)}`);
      throw new NereidError('INTERNAL', `failed to load '${name}', ${POLL_FAILED}`);
    }
  }

  /**
   * Unloads a model. With `dependents` (the unload_dependents parameter), as Triton's dependency graph: the
   * models it ran on (an ensemble's steps, a router's targets) go too, each that was not loaded by name and
   * that no other loaded model runs on, and so on down.
   */
  async unload(name: string, dependents = false): Promise<void> {
    await this.unloadName(name, dependents);
    await this.settleEnsembles();
  }

  /**
   * A name Triton never loaded unloads without error (qa/L0_lifecycle test_model_control: "Unload non-existing
   * model, nothing should happen").
   */
  private async unloadName(name: string, dependents: boolean): Promise<void> {
    const entries = this.namespacing ? this.byName.get(name) ?? [] : [this.entries.get(name)].filter((e) => e !== undefined);
    if (entries.length === 0) return;
    const ranOn = entries.flatMap((e) => (e.prepared && !e.unloaded ? modelsRunOn(e.prepared.config) : []));
    // With namespacing, unloading a name unloads it in every repository, as Triton's global map has it.
    await Promise.all(entries.map((e) => this.unloadKey(e.key)));
    if (!dependents) return;
    for (const other of new Set(ranOn)) {
      const alive = (this.namespacing ? this.byName.get(other) ?? [] : [this.entries.get(other)]).filter((o) => o && !o.unloaded);
      if (alive.length === 0 || alive.some((o) => o!.explicit) || other === name || this.runOnBy(other)) continue;
      await this.unloadName(other, true);
    }
  }

  private async unloadKey(key: string): Promise<void> {
    await this.withEntry(key, async (e) => {
      await this.retire(e, [...e.versions.keys()]);
      e.unloaded = true;
      e.explicit = false;
      e.waiting = false;
      e.configOverride = undefined;
      e.failure = '';
      await e.overrides?.remove();
      e.overrides = undefined;
      e.prepared = undefined;
      e.configJson = '';
      e.timestamps = new Map();
      return undefined;
    });
  }

  /** Whether a loaded model runs on `name`, or an ensemble waiting to load again (Triton's graph keeps its edges). */
  private runOnBy(name: string): boolean {
    for (const e of this.entries.values()) {
      if ((!e.unloaded || e.waiting) && e.prepared && e.name !== name && modelsRunOn(e.prepared.config).includes(name)) return true;
    }
    return false;
  }

  /**
   * What Triton's dependency graph does after every load, unload and poll: an ensemble whose steps no longer all
   * have a model to run on is unloaded (its versions UNAVAILABLE, "unloaded"), and one unloaded that way loads
   * again once they all do (qa/L0_lifecycle test_model_control: unloading a composing model unloads the
   * ensemble). Repeats, for ensembles of ensembles, until nothing changes.
   */
  private async settleEnsembles(): Promise<void> {
    for (let pass = 0, changed = true; changed && pass <= this.entries.size; pass++) {
      changed = false;
      for (const e of [...this.entries.values()]) {
        if (e.waiting) changed = (await this.loadAgain(e)) || changed;
        else if (this.stranded(e)) changed = (await this.strand(e)) || changed;
      }
    }
  }

  /** A loaded ensemble that some step of cannot run on any model now. */
  private stranded(e: ModelEntry): boolean {
    const config = e.prepared?.config;
    if (e.unloaded || config?.platform !== 'ensemble' || ![...e.versions.values()].some((s) => s.state === 'READY')) return false;
    return !this.stepsServe(e.namespace, config);
  }

  private stepsServe(namespace: string, config: ModelConfig): boolean {
    for (const step of EnsembleScheduler.composingModels(config)) {
      try {
        this.resolveFrom(namespace, step.name, step.version);
      } catch {
        return false;
      }
    }
    return true;
  }

  /**
   * Unloads a stranded ensemble, keeping what loading it again needs. One loaded from file overrides has no
   * folder to come back from once they are removed, so it is unloaded for good.
   */
  private async strand(e: ModelEntry): Promise<boolean> {
    return this.withEntry(e.key, async (x) => {
      if (!this.stranded(x)) return false;
      this.logger.error(`ensemble '${x.name}' is unloaded: a model one of its steps runs on is not available`);
      if (x.overrides) {
        await this.unloadKey(x.key);
        return true;
      }
      await this.retire(x, [...x.versions.keys()]);
      x.unloaded = true;
      x.waiting = true;
      return true;
    });
  }

  /** Loads a waiting ensemble again once every step of its config (read afresh) has a model to run on. */
  private async loadAgain(e: ModelEntry): Promise<boolean> {
    const config = e.configOverride ?? (e.location ? await readConfig(e.location.dir, e.name, this.opts).catch(() => undefined) : undefined);
    if (!config || !this.stepsServe(e.namespace, config)) return false;
    const failed = await this.withEntry(e.key, (x) => {
      if (!x.waiting) return Promise.resolve(undefined);
      x.waiting = false;
      return this.loadEntry(x, x.location, x.configOverride ? { config: x.configOverride } : {});
    });
    if (failed) this.logger.error(`failed to load '${e.name}' again: ${failed.message}`);
    return true;
  }

  /** Poll mode: one pass over the repositories, loading what appeared or changed and unloading what went. */
  async poll(): Promise<void> {
    const scan = await scanSources(this.sources, this.namespacing);
    const work: Promise<unknown>[] = [];
    // What went first: with namespacing a name that stays in one repository stops being ambiguous.
    for (const [key, entry] of this.entries) {
      if (scan.models.has(key) || entry.overrides) continue;
      entry.waiting = false;
      if (!entry.unloaded && entry.versions.size > 0) work.push(this.unloadKey(key).catch(() => undefined));
    }
    await Promise.all(work.splice(0));
    for (const [key, location] of scan.models) {
      const entry = this.entries.get(key);
      if (entry?.overrides) continue; // a model loaded from overrides is not the repository's
      if (entry?.waiting) continue; // it loads again when its steps can run (settleEnsembles)
      // A model that cannot be downloaded now keeps serving what it served.
      if ((await this.fetchModel(location)) !== undefined) continue;
      const stamps = await modelTimestamps(location.dir);
      if (entry && sameStamps(entry.timestamps, stamps) && entry.location?.dir === location.dir) continue;
      work.push(this.withEntry(key, (e) => this.loadEntry(e, location, {}), location.name));
    }
    await Promise.all(work);
    await this.settleEnsembles();
  }

  /** Brings a model of a repository at a URL into its local folder; the reason when that failed. */
  private async fetchModel(location: ModelLocation): Promise<string | undefined> {
    if (!location.fetch) return undefined;
    try {
      await location.fetch();
      return undefined;
    } catch (e) {
      const reason = reasonOf(e);
      this.logger.error(`failed to fetch '${location.name}': ${reason}`);
      return reason;
    }
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
    await Promise.all([...this.entries.keys()].map((k) => this.unloadKey(k).catch(() => undefined)));
  }

  /** Unloads a version no longer in its slot (it drains first). */
  private async release(model: ModelVersion): Promise<void> {
    await model.unload();
    this.live.delete(model);
  }

  /** The entry of a key (see modelKey), made on first use; `name` is the model's name when the key is not. */
  private entry(key: string, name = key): ModelEntry {
    let e = this.entries.get(key);
    if (!e) {
      const namespace = key === name ? '' : key.slice(0, key.length - name.length - 1);
      e = {
        name, namespace, key, location: undefined, prepared: undefined, configJson: '', versions: new Map(), failure: '', timestamps: new Map(),
        overrides: undefined, unloaded: false, explicit: false, waiting: false, configOverride: undefined, busy: Promise.resolve(),
      };
      this.entries.set(key, e);
      const same = this.byName.get(name);
      if (same) same.push(e);
      else this.byName.set(name, [e]);
    }
    return e;
  }

  private fail(key: string, reason: string, name = key): string {
    const e = this.entry(key, name);
    if (e.versions.size === 0) e.failure = reason;
    return reason;
  }

  /** Runs `op` after every earlier operation on the same model. */
  private withEntry<T>(key: string, op: (e: ModelEntry) => Promise<T>, name = key): Promise<T> {
    const e = this.entry(key, name);
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
    } catch (err) {
      if (isNereidError(err)) return this.prepareFailed(e, err, []);
      // The file system refused the folder Triton calls the model's localized repository (a name too long, a
      // full disk): Triton's answer is a failed poll. The detail names server paths, so only the log has it.
      this.logger.error(`failed to write the file overrides of '${e.name}': ${reasonOf(err)}`);
      return this.prepareFailed(e, new NereidError('INTERNAL', POLL_FAILED), []);
    }
    const shown = shownPaths(e.name, overrides?.root, location);
    try {
      const modelDir = overrides?.modelDir ?? location!.dir;
      if (!overrides) stamps = await modelTimestamps(modelDir);
      prepared = await prepareModel(e.name, modelDir, req.config ? structuredClone(req.config) : undefined, this.opts);
    } catch (err) {
      await overrides?.remove();
      return this.prepareFailed(e, err, shown);
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
        const model = await this.createVersion(e, prepared, v, shown);
        this.live.add(model);
        this.logger.info(`successfully loaded '${e.name}' version ${v}`);
        return [v, model, '', undefined] as const;
      } catch (err) {
        const reason = redactPaths(reasonOf(err), shown);
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
    e.configOverride = req.config;
    e.configJson = configJson;
    e.location = location;
    e.timestamps = stamps;
    e.unloaded = false;
    if (loaded.some(([, m]) => m)) e.waiting = false;
    e.failure = wanted.length === 0 ? `at least one version must be available under the version policy of model '${e.name}'` : '';
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
    if (wanted.length === 0) return failure(`load failed for model '${e.name}': ${e.failure}`, undefined);
    if (failed.length === 0) return undefined;
    const reasons = failed.map(([v, , r]) => `version ${v} is at UNAVAILABLE state: ${r};`).join(' ');
    return failure(`load failed for model '${e.name}': ${reasons}`, failed.find(([, , , err]) => isNereidError(err) && err.limit)?.[3]);
  }

  /**
   * Creates one version, and again after a failure up to --model-load-retry-count more times, as Triton's model
   * lifecycle retries the creation of a version (not the reading of its config).
   */
  private async createVersion(e: ModelEntry, prepared: PreparedModel, v: number, shown: readonly PathShown[]): Promise<ModelVersion> {
    const retries = this.opts.loadRetries ?? 0;
    // An ensemble's steps are looked for in its own repository first (with namespacing; else there is one).
    const opts = e.namespace === '' ? this.opts : { ...this.opts, resolveModel: (n: string, ver: number | undefined) => this.resolveFrom(e.namespace, n, ver) };
    for (let attempt = 0; ; attempt++) {
      try {
        return await loadVersion(prepared, v, opts);
      } catch (err) {
        if (attempt >= retries) throw err;
        this.logger.warn(`failed to load '${prepared.name}' version ${v} (attempt ${attempt + 1} of ${retries + 1}), retrying: ${redactPaths(reasonOf(err), shown)}`);
      }
    }
  }

  /** A load that failed before any version loaded: the versions serving keep serving. */
  private prepareFailed(e: ModelEntry, err: unknown, shown: readonly PathShown[]): NereidError {
    const reason = redactPaths(reasonOf(err), shown);
    this.logger.error(`failed to load '${e.name}': ${reason}`);
    if (e.versions.size === 0) e.failure = reason;
    if (isNereidError(err) && err.code === 'INTERNAL' && err.message === POLL_FAILED) return new NereidError('INTERNAL', `failed to load '${e.name}', ${POLL_FAILED}`);
    // A limit of Nereid's own is no failed poll: it says which limit refused.
    if (isNereidError(err) && err.limit !== undefined) return failure(`failed to load '${e.name}', ${reason}`, err);
    // Triton reads and checks a model's config while it polls the repository, so a config it cannot use fails
    // the poll, in those words; Triton only logs why, Nereid tells the client too.
    return failure(`failed to load '${e.name}', ${POLL_FAILED}: ${reason}`, err);
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

/** The models of this name: one at most without namespacing, one per repository with it. */
function locationsOf(scan: RepositoryScan, name: string): ModelLocation[] {
  return [...scan.models.values()].filter((l) => l.name === name);
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

