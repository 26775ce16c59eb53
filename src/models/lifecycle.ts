import { join } from 'node:path';
import { NereidError, invalidArg, isNereidError } from '../errors.js';
import { modelConfigToJson } from '../config/index.js';
import type { Logger } from '../observability/logger.js';
import { listVersions, modelTimestamps, selectVersions, type ModelLocation } from '../repository/local.js';
import { writeOverrides, type OverrideDir } from '../repository/overrides.js';
import { redactPaths, shownPaths, type PathShown } from '../repository/redact.js';
import { loadVersion, prepareModel, type LoaderOptions, type PreparedModel } from './loader.js';
import type { ModelVersion } from './model-version.js';
import type { ModelTable } from './model-table.js';
import type { LoadRequest, ModelEntry } from './model-entry.js';
import { LoadMeter, folderBytes } from './load-meter.js';
import type { MemoryBudget } from './memory-budget.js';

/** Triton's reason when a model to load could not be read from the repository (or written from overrides). */
export const POLL_FAILED = 'failed to poll from model repository';

/** A config read and checked, ready for its versions to load; or the load's failure. */
interface Prepared {
  readonly prepared: PreparedModel;
  readonly overrides: OverrideDir | undefined;
  readonly stamps: Map<string, bigint>;
  readonly shown: readonly PathShown[];
}

/** One version's load: the version, and either the loaded model or why it failed. */
type Loaded = readonly [version: number, model: ModelVersion | undefined, reason: string, error: unknown];

/**
 * The state machine of each model's versions, as Triton's model lifecycle: a version goes LOADING, then READY
 * or UNAVAILABLE; a reload loads the new versions beside the old, which keep serving until the new ones are
 * READY and then drain before they are released (UNLOADING, then UNAVAILABLE "unloaded").
 */
export class ModelLifecycle {
  /** Every version loaded and not yet released, those being unloaded included (for abort()). */
  private readonly live = new Set<ModelVersion>();
  private readonly meter: LoadMeter;

  /** `budget`: --model-memory-budget (loads then run one at a time, each measured alone). */
  constructor(private readonly table: ModelTable, private readonly opts: LoaderOptions, private readonly logger: Logger, private readonly budget?: MemoryBudget) {
    this.meter = new LoadMeter(budget !== undefined);
  }

  /**
   * Loads or reloads one model. Returns the failure (its message is the reason), or undefined on success. On
   * failure the versions that were serving keep serving.
   */
  async load(e: ModelEntry, location: ModelLocation | undefined, req: LoadRequest): Promise<NereidError | undefined> {
    const ready = await this.prepare(e, location, req);
    if (isNereidError(ready)) return ready;
    const { prepared, stamps, shown } = ready;
    const configJson = JSON.stringify(modelConfigToJson(prepared.config));
    const wanted = selectVersions(prepared.config.version_policy, await listVersions(prepared.modelDir));
    const sameConfig = configJson === e.configJson && !ready.overrides && !e.overrides;
    const reuse = (v: number) => sameConfig && e.versions.get(v)?.state === 'READY' && stamps.get(String(v)) === e.timestamps.get(String(v));
    const loaded = await this.loadVersions(e, prepared, wanted.filter((v) => !reuse(v)), shown);
    const previous = e.overrides;
    const retired = this.swapIn(e, loaded);
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
    await this.keepOverrides(e, ready.overrides, previous, loaded.some(([, m]) => m));
    if (wanted.length === 0) return failure(`load failed for model '${e.name}': ${e.failure}`, undefined);
    const failed = loaded.filter(([, m]) => !m);
    if (failed.length === 0) return undefined;
    const reasons = failed.map(([v, , r]) => `version ${v} is at UNAVAILABLE state: ${r};`).join(' ');
    return failure(`load failed for model '${e.name}': ${reasons}`, failed.find(([, , , err]) => isNereidError(err) && err.limit)?.[3]);
  }

  /**
   * Loads the versions, measuring what they take (load-meter.ts). With a budget the load runs alone, after
   * room is made for its estimate (what it took last time, or its files' size), and idle models go after it
   * if it took more; versions that cannot fit fail with the budget's reason.
   */
  private async loadVersions(e: ModelEntry, prepared: PreparedModel, versions: readonly number[], shown: readonly PathShown[]): Promise<Loaded[]> {
    if (versions.length === 0) return [];
    const budget = this.budget;
    const run = async (): Promise<Loaded[]> => {
      const files = (await Promise.all(versions.map((v) => folderBytes(join(prepared.modelDir, String(v)), 1)))).reduce((a, b) => a + b, 0);
      const backend = prepared.config.backend || prepared.config.platform;
      if (budget !== undefined) {
        try {
          await budget.makeRoom(e, budget.estimate(e, files, backend));
        } catch (err) {
          return versions.map((v) => this.refused(e, v, err));
        }
      }
      const measure = this.meter.begin();
      const loaded = await Promise.all(versions.map((v) => this.loadOne(e, prepared, v, shown)));
      const models = loaded.flatMap(([, m]) => (m ? [m] : []));
      const bytes = this.meter.end(measure, models, files, backend);
      if (models.length > 0) e.lastBytes = bytes;
      if (budget === undefined || models.length === 0) return loaded;
      try {
        await budget.settle(e, bytes);
        return loaded;
      } catch (err) {
        await Promise.all(models.map((m) => this.release(m)));
        return loaded.map(([v, m, r, x]) => (m ? this.refused(e, v, err) : [v, m, r, x]));
      }
    };
    return budget === undefined ? run() : budget.serially(run);
  }

  /** A version the budget did not let in: UNAVAILABLE with the reason (a new slot made for it). */
  private refused(e: ModelEntry, v: number, err: unknown): Loaded {
    if (!e.versions.get(v)) e.versions.set(v, { state: 'LOADING', reason: '', model: undefined });
    const reason = reasonOf(err);
    this.logger.error(`failed to load '${e.name}' version ${v}: ${reason}`);
    return [v, undefined, reason, err];
  }

  /** Writes a load's file overrides and reads and checks the config; the failure when either fails. */
  private async prepare(e: ModelEntry, location: ModelLocation | undefined, req: LoadRequest): Promise<Prepared | NereidError> {
    let overrides: OverrideDir | undefined;
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
      const stamps = overrides ? new Map<string, bigint>() : await modelTimestamps(modelDir);
      const prepared = await prepareModel(e.name, modelDir, req.config ? structuredClone(req.config) : undefined, this.opts);
      return { prepared, overrides, stamps, shown };
    } catch (err) {
      await overrides?.remove();
      return this.prepareFailed(e, err, shown);
    }
  }

  /** Loads one version into its slot (made LOADING if the version is new); never throws. */
  private async loadOne(e: ModelEntry, prepared: PreparedModel, v: number, shown: readonly PathShown[]): Promise<Loaded> {
    if (!e.versions.get(v)) e.versions.set(v, { state: 'LOADING', reason: '', model: undefined });
    this.logger.info(`loading: ${e.name}:${v}`);
    try {
      const model = await this.createVersion(e, prepared, v, shown);
      this.live.add(model);
      this.logger.info(`successfully loaded '${e.name}' version ${v}`);
      return [v, model, '', undefined];
    } catch (err) {
      const reason = redactPaths(reasonOf(err), shown);
      this.logger.error(`failed to load '${e.name}' version ${v}: ${reason}`);
      return [v, undefined, reason, err];
    }
  }

  /**
   * Puts what loaded in its slot (READY); a version that failed keeps serving its old object if it had one,
   * else is UNAVAILABLE with the reason. Returns the objects replaced, to be released.
   */
  private swapIn(e: ModelEntry, loaded: readonly Loaded[]): ModelVersion[] {
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
    return retired;
  }

  /**
   * The folder of a file-override load goes as soon as nothing runs from it: at once when no version of it
   * loaded (the versions still serving, if any, came from the previous folder), else when it is replaced.
   */
  private async keepOverrides(e: ModelEntry, overrides: OverrideDir | undefined, previous: OverrideDir | undefined, anyLoaded: boolean): Promise<void> {
    const serving = [...e.versions.values()].some((slot) => slot.model);
    if (overrides && !anyLoaded) {
      await overrides.remove();
      overrides = serving ? previous : undefined;
    }
    e.overrides = overrides;
    if (previous && previous !== overrides) await previous.remove();
  }

  /**
   * Creates one version, and again after a failure up to --model-load-retry-count more times, as Triton's model
   * lifecycle retries the creation of a version (not the reading of its config).
   */
  private async createVersion(e: ModelEntry, prepared: PreparedModel, v: number, shown: readonly PathShown[]): Promise<ModelVersion> {
    const retries = this.opts.loadRetries ?? 0;
    // An ensemble's steps are looked for in its own repository first (with namespacing; else there is one).
    const opts = e.namespace === '' ? this.opts : { ...this.opts, resolveModel: (n: string, ver: number | undefined) => this.table.resolveFrom(e.namespace, n, ver) };
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
  async retire(e: ModelEntry, versions: number[]): Promise<void> {
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

  /** Unloads every version of a model and forgets how it was loaded (after earlier operations on it). */
  unload(key: string): Promise<void> {
    return this.table.serially(key, (e) => this.unloadNow(e));
  }

  /**
   * unload() for an operation already running on the model (see ModelTable.serially): waiting for the
   * model's earlier operations there would wait for that operation itself, for ever.
   */
  async unloadNow(e: ModelEntry): Promise<void> {
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
  }

  /** Brings a model of a repository at a URL into its local folder; the reason when that failed. */
  async fetch(location: ModelLocation): Promise<string | undefined> {
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
    for (const entry of this.table.entries.values()) for (const slot of entry.versions.values()) slot.model?.rejectQueued(error);
  }

  /**
   * Shutdown past the exit timeout: every version still loaded or unloading answers every request it holds
   * with `error` and kills its instances (see ModelVersion.abort), so that close() ends.
   */
  abort(error: NereidError): void {
    for (const v of this.live) v.abort(error);
  }

  /** Unloads a version no longer in its slot (it drains first). */
  private async release(model: ModelVersion): Promise<void> {
    await model.unload();
    this.live.delete(model);
  }
}

/** A load's failure: `reason`, with the code and limit of `cause` when a limit refused it. */
function failure(reason: string, cause: unknown): NereidError {
  if (isNereidError(cause) && cause.limit !== undefined) return new NereidError(cause.code, reason, { limit: cause.limit, retryAfterSecs: cause.retryAfterSecs });
  return invalidArg(reason);
}

export function reasonOf(err: unknown): string {
  return isNereidError(err) ? err.message : err instanceof Error ? err.message : String(err);
}
