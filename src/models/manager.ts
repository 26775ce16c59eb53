import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { NereidError, invalidArg } from '../errors.js';
import type { ModelConfig } from '../config/types.js';
import { PLATFORM_BACKEND } from '../config/normalize.js';
import type { Logger } from '../observability/logger.js';
import { assertModelName, type ModelLocation, type RepositoryScan } from '../repository/local.js';
import { openSources, scanSources, type RepositorySource } from '../repository/source.js';
import { readConfig, type LoaderOptions } from './loader.js';
import type { ModelVersion } from './model-version.js';
import type { VersionSplit } from './version-split.js';
import type { InferenceRequest } from '../inference/request.js';
import type { IndexEntry, LoadRequest, ModelEntry } from './model-entry.js';
import { ModelTable } from './model-table.js';
import { ModelLifecycle, POLL_FAILED, reasonOf } from './lifecycle.js';
import { DependencyGraph, locationsOf, modelsRunOn } from './dependency-graph.js';
import { pollRepositories } from './polling.js';
import { MemoryBudget } from './memory-budget.js';
import { OnDemandLoads, type LoadWait } from './on-demand.js';
import { IdleSweep } from './idle-sweep.js';
import { stringParameter } from './router.js';

export type { IndexEntry, LoadRequest, ModelState } from './model-entry.js';

/** --model-memory-budget, --model-load-on-demand and what goes with them (see memory-budget.ts, on-demand.ts). */
export interface MemoryOptions {
  readonly budgetBytes?: number | undefined;
  readonly onDemand?: boolean | undefined;
  readonly loadWaitSecs?: number | undefined;
  /** Models never evicted: those of --load-model (a config's nereid_pinned pins its own). */
  readonly pinned?: readonly string[] | undefined;
}

/** A model's config parameter that keeps it loaded whatever the budget ("true"). */
export const PINNED_PARAMETER = 'nereid_pinned';
/** How long a repository listing is reused to tell whether a model named by a request exists. */
const LISTING_TTL_MS = 1000;

/**
 * Every model the server serves, as one API over its parts: the table that finds the version a request runs
 * on (model-table.ts), the lifecycle of each model's versions (lifecycle.ts), the dependency graph of
 * ensembles and routers (dependency-graph.ts) and poll mode's pass (polling.ts). What is here is the
 * repository walk that decides what to load: at start, on a load request and on an unload request.
 */
export class ModelManager {
  private readonly table: ModelTable;
  private readonly lifecycle: ModelLifecycle;
  private readonly graph: DependencyGraph;
  private readonly opts: LoaderOptions;
  private readonly sources: RepositorySource[];
  /** Set with --model-memory-budget: loads then run one at a time, each measured alone. */
  readonly budget: MemoryBudget | undefined;
  /** Set with --model-load-on-demand. */
  readonly onDemand: OnDemandLoads | undefined;
  private readonly sweep: IdleSweep;
  private listing: { atMs: number; scan: Promise<RepositoryScan> } | undefined;

  /** `cacheDir`: where models of repositories at URLs are downloaded (--repository-cache-dir). */
  constructor(
    repositories: readonly string[],
    opts: LoaderOptions,
    private readonly logger: Logger,
    namespacing = false,
    cacheDir?: string,
    memory: MemoryOptions = {},
  ) {
    this.sources = openSources(repositories, { logger: logger.child('source.ts'), ...(cacheDir ? { cacheDir } : {}) });
    const table = new ModelTable(namespacing);
    this.table = table;
    this.opts = {
      ...opts,
      resolveModel: (name, version) => table.resolve(name, version),
      routeModel: (name, key) => table.resolveRouted(name, undefined, key),
      hasReadyVersion: (name) => table.readyVersions(name).length > 0,
    };
    const waitMs = (memory.loadWaitSecs ?? 60) * 1000;
    const pinned = new Set(memory.pinned ?? []);
    this.budget = memory.budgetBytes !== undefined ? new MemoryBudget(memory.budgetBytes, waitMs, {
      entries: () => table.entries.values(),
      runsOn: (e) => (e.prepared && !e.unloaded ? modelsRunOn(e.prepared.config) : []),
      pinned: (e) => pinned.has(e.name) || (e.prepared !== undefined && stringParameter(e.prepared.config, PINNED_PARAMETER) === 'true'),
      evict: (e, reason) => this.evict(e, reason),
    }, logger) : undefined;
    this.onDemand = memory.onDemand ? new OnDemandLoads((name) => this.loadOnDemand(name), waitMs) : undefined;
    this.lifecycle = new ModelLifecycle(table, this.opts, logger, this.budget);
    this.sweep = new IdleSweep(table, this.budget, (e, reason) => this.evict(e, reason), logger);
    this.graph = new DependencyGraph(table, this.lifecycle, this.opts, logger);
  }

  /** See ModelTable.resolveRouted. */
  resolveRouted(name: string, version: number | undefined, routingKey: string | undefined): ModelVersion {
    return this.table.resolveRouted(name, version, routingKey);
  }

  /** See ModelTable.target. */
  target(name: string, version: number | undefined): ModelVersion | VersionSplit {
    return this.table.target(name, version);
  }

  /** See ModelTable.route. */
  route(target: object, request: InferenceRequest): ModelVersion {
    return this.table.route(target, request);
  }

  /** See ModelTable.resolve. */
  resolve(name: string, version: number | undefined): ModelVersion {
    return this.table.resolve(name, version);
  }

  /** Loaded config of a model version, as the config endpoint shows it. */
  config(name: string, version: number | undefined): ModelConfig {
    return this.table.config(name, version);
  }

  /** See ModelTable.isReady. */
  isReady(name: string, version: number | undefined): boolean {
    return this.table.isReady(name, version);
  }

  readyVersions(name: string): number[] {
    return this.table.readyVersions(name);
  }

  /** See ModelTable.allReady. */
  allReady(): boolean {
    return this.table.allReady();
  }

  /** Every ModelVersion that is READY (for statistics). */
  loadedVersions(name?: string): ModelVersion[] {
    return this.table.loadedVersions(name);
  }

  /**
   * The READY versions statistics report: every model's, or one model's (one version of it). INVALID_ARG, in
   * Triton's words, for a model or version that is not READY.
   */
  statisticsOf(name: string | undefined, version: number | undefined): ModelVersion[] {
    if (name !== undefined) {
      const readyVersions = this.table.readyVersions(name);
      if (readyVersions.length === 0 || (version !== undefined && !readyVersions.includes(version))) {
        throw invalidArg(`requested model '${name}' is not available`);
      }
    }
    return this.table.loadedVersions(name).filter((m) => version === undefined || m.version === version);
  }

  /** Triton's repository index (see ModelTable.index); a repository that cannot be read lists what is known. */
  async index(readyOnly: boolean): Promise<IndexEntry[]> {
    const scan = await scanSources(this.sources, this.table.namespacing).catch(() => undefined);
    return this.table.index(scan, readyOnly);
  }

  /** Loads every model in the repositories (modes none and poll), or the named ones. Returns the failures. */
  async loadAll(names?: readonly string[]): Promise<Map<string, string>> {
    // A failure here only means no head start: the loads report their own errors.
    this.preloadCachedBackends().catch(() => undefined);
    const scan = await scanSources(this.sources, this.table.namespacing);
    for (const [name, repos] of scan.duplicates) {
      this.table.entry(name).failure = `model '${name}' is not unique across all model repositories: ${repos.join(', ')}`;
    }
    let wanted = await this.keysToLoad(scan, names);
    const failures = new Map<string, string>();
    for (const name of scan.duplicates.keys()) if (!names || names.includes(name)) failures.set(name, this.table.entry(name).failure);
    // Models of repositories at URLs are downloaded first; one that cannot be fails alone.
    await runLimited(wanted, this.opts.loadThreads, async (key) => {
      const location = scan.models.get(key);
      const reason = location && (await this.lifecycle.fetch(location));
      if (reason === undefined) return;
      failures.set(location!.name, this.table.fail(key, reason, location!.name));
      wanted = wanted.filter((k) => k !== key);
    });
    // Ensembles load after the models they run on, as Triton orders them.
    const ensembles = new Set<string>();
    for (const key of wanted) {
      const location = scan.models.get(key);
      if (location && (await this.graph.runsOnOthers(location.name, location.dir))) ensembles.add(key);
    }
    const ordered = [...wanted.filter((n) => !ensembles.has(n)), ...wanted.filter((n) => ensembles.has(n))];
    await this.loadKeys(ordered, ensembles, scan, failures);
    return failures;
  }

  /**
   * The keys loadAll loads: every model, or for `names` every model of those names (one per repository with
   * namespacing) and what they run on. The models named are marked as loaded by name.
   */
  private async keysToLoad(scan: RepositoryScan, names: readonly string[] | undefined): Promise<string[]> {
    let wanted = [...scan.models.keys()];
    if (names) {
      const wantedNames = await this.graph.withDependencies(names, scan);
      const found = [...scan.models.values()].filter((l) => wantedNames.includes(l.name));
      // A name in no repository stays, under its name, to fail as Triton's failed poll.
      wanted = [...found.map((l) => l.key), ...wantedNames.filter((n) => !found.some((l) => l.name === n))];
    }
    for (const key of wanted) {
      const name = scan.models.get(key)?.name ?? key;
      if (!names || names.includes(name)) this.table.entry(key, name).explicit = true;
    }
    return wanted;
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
  private async loadKeys(ordered: string[], ensembles: Set<string>, scan: RepositoryScan, failures: Map<string, string>): Promise<void> {
    const load = async (key: string): Promise<void> => {
      const location = scan.models.get(key);
      if (!location) {
        if (!scan.duplicates.has(key)) failures.set(key, this.table.fail(key, `failed to load '${key}', failed to poll from model repository`));
        return;
      }
      const err = await this.table.serially(key, (e) => this.lifecycle.load(e, location, {}), location.name);
      if (err) failures.set(location.name, err.message);
    };
    await runLimited(ordered.filter((n) => !ensembles.has(n)), this.opts.loadThreads, load);
    // An ensemble may run on another ensemble: load them in dependency order, one pass per level.
    let left = ordered.filter((n) => ensembles.has(n));
    while (left.length > 0) {
      const batch = await this.graph.nextLevel(left, scan);
      await runLimited(batch, this.opts.loadThreads, load);
      left = left.filter((n) => !batch.includes(n));
    }
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
    const scan = req.files && req.files.size > 0 ? undefined : await this.scanForLoad(name);
    const locations = scan ? await this.locationsToLoad(name, scan) : [undefined];
    // Under a memory budget the models it runs on are not evicted between their loads and its own.
    const held = this.budget?.hold();
    let first: NereidError | undefined;
    try {
      // With namespacing every repository's model of that name loads.
      for (const location of locations) {
        // Loading an ensemble loads the composing models that are not loaded yet, as Triton does.
        const config = req.config ?? (location ? await readConfig(location.dir, name, this.opts).catch(() => undefined) : undefined);
        for (const other of config ? modelsRunOn(config) : []) {
          if (other === name) continue;
          held?.add(other);
          if (this.graph.notServing(other, scan)) await this.load(other, {}, false).catch(() => undefined);
        }
      }
      for (const location of locations) {
        const key = location?.key ?? name;
        if (explicit) this.table.entry(key, name).explicit = true;
        first ??= await this.table.serially(key, (e) => this.lifecycle.load(e, location, req), name);
      }
    } finally {
      held?.release();
    }
    await this.graph.settle();
    // A refusal by a limit keeps its code and names the limit, so that the frontend counts it.
    // A failed poll keeps Triton's INTERNAL; any other failure is the client's to fix (see failure()).
    if (first) throw new NereidError(first.limit || first.code === 'INTERNAL' ? first.code : 'INVALID_ARG', first.message, { limit: first.limit });
  }

  /** The repositories as a load sees them; one that cannot be read is Triton's failed poll, its path logged only. */
  private async scanForLoad(name: string): Promise<RepositoryScan> {
    try {
      return await scanSources(this.sources, this.table.namespacing);
    } catch (e) {
      this.logger.error(`failed to poll the model repositories for '${name}': ${reasonOf(e)}`);
      throw new NereidError('INTERNAL', `failed to load '${name}', ${POLL_FAILED}`);
    }
  }

  /** Where a load request's model is, in every repository that has it, downloaded; Triton's failed poll if none. */
  private async locationsToLoad(name: string, scan: RepositoryScan): Promise<ModelLocation[]> {
    if (scan.duplicates.has(name)) throw invalidArg(`failed to load '${name}', ${POLL_FAILED}: model is not unique across all model repositories`);
    const found = locationsOf(scan, name);
    if (found.length === 0) throw invalidArg(`failed to load '${name}', ${POLL_FAILED}`);
    for (const location of found) {
      const reason = await this.lifecycle.fetch(location);
      if (reason !== undefined) throw new NereidError('INTERNAL', `failed to load '${name}', ${this.table.fail(location.key, reason, name)}`);
    }
    return found;
  }

  /**
   * Unloads a model. With `dependents` (the unload_dependents parameter), as Triton's dependency graph: the
   * models it ran on (an ensemble's steps, a router's targets) go too, each that was not loaded by name and
   * that no other loaded model runs on, and so on down.
   */
  async unload(name: string, dependents = false): Promise<void> {
    await this.graph.unload(name, dependents);
    await this.graph.settle();
  }

  /** Poll mode: one pass over the repositories, loading what appeared or changed and unloading what went. */
  poll(): Promise<void> {
    return pollRepositories(this.sources, this.table, this.lifecycle, this.graph, this.onDemand !== undefined);
  }

  /** Answers every queued request of every model with `error`; running executions finish. */
  rejectQueued(error: NereidError): void {
    this.lifecycle.rejectQueued(error);
  }

  /** See ModelLifecycle.abort: shutdown past the exit timeout. */
  abort(error: NereidError): void {
    this.lifecycle.abort(error);
  }

  /** Unloads a model to make room or because it idled, its versions' reason saying why. */
  private async evict(e: ModelEntry, reason: string): Promise<void> {
    await this.lifecycle.unload(e.key);
    for (const slot of e.versions.values()) if (slot.reason === 'unloaded') slot.reason = reason;
  }

  /** Evictions and loads on demand so far, by model name (their metrics). */
  loadCounts(): { evictions: ReadonlyMap<string, number>; onDemand: ReadonlyMap<string, number> } {
    return { evictions: this.budget?.evictions ?? new Map(), onDemand: this.onDemand?.counts ?? new Map() };
  }

  /** A load a request started: the model (each of its repositories' with namespacing) does not hold readiness. */
  private loadOnDemand(name: string): Promise<void> {
    for (const e of this.table.named(name)) e.onDemand = true;
    if (!this.table.namespacing) this.table.entry(name).onDemand = true;
    return this.load(name, {});
  }

  /** Whether some version of the model can take requests now. */
  serving(name: string): boolean {
    return this.table.readyVersions(name).length > 0;
  }

  /**
   * --model-load-on-demand: resolves once the model has loaded, starting its load if none runs (see
   * on-demand.ts); undefined when the model serves already, or loads on demand are off, or no repository has
   * it (the request is then answered as without on-demand loading).
   */
  async whenLoaded(name: string, bounds: LoadWait): Promise<boolean> {
    const loads = this.onDemand;
    if (loads === undefined || this.serving(name)) return false;
    if (!(await this.inRepository(name))) return false;
    await loads.wait(name, bounds);
    return true;
  }

  /**
   * The wait for `name` to load on demand: undefined when it serves, or nothing loads on demand (the call goes
   * on as usual); else a promise that settles once it has loaded, or rejects with the load's failure, or with
   * `refusal` (the error a request to it had) when no repository has the model.
   */
  loadFirst(name: string, refusal: unknown, bounds: LoadWait): Promise<void> | undefined {
    if (this.onDemand === undefined || this.serving(name)) return undefined;
    return this.whenLoaded(name, bounds).then((waited) => {
      if (!waited && refusal !== undefined) throw refusal;
    });
  }

  /** Whether a repository has the model, from a listing reused for a second (requests for unknown names are cheap). */
  private async inRepository(name: string): Promise<boolean> {
    const now = Date.now();
    if (this.listing === undefined || now - this.listing.atMs > LISTING_TTL_MS) {
      this.listing = { atMs: now, scan: scanSources(this.sources, this.table.namespacing) };
    }
    const scan = await this.listing.scan.catch(() => undefined);
    return scan !== undefined && locationsOf(scan, name).length > 0;
  }

  /** Unloads everything, letting requests in flight finish. */
  async close(): Promise<void> {
    this.sweep.stop();
    await Promise.all([...this.table.entries.keys()].map((k) => this.lifecycle.unload(k).catch(() => undefined)));
  }
}

/** Runs `fn` over `items` with at most `limit` at once (--model-load-thread-count). */
async function runLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
}
