import { invalidArg, notFound, unavailable } from '../errors.js';
import type { ModelConfig } from '../config/types.js';
import { modelKey, type RepositoryScan } from '../repository/local.js';
import type { InferenceRequest } from '../inference/request.js';
import { routingKey } from './router.js';
import type { WeightedRoutes } from './routing.js';
import { ModelVersion } from './model-version.js';
import { looserBounds, VersionSplit } from './version-split.js';
import { hasReadyVersion, newEntry, type IndexEntry, type ModelEntry, type ModelState, type VersionSlot } from './model-entry.js';

/**
 * Every model the server knows, by key, and the answers that read them: which version a request runs on
 * (the one it names, the highest READY one, or a weighted pick), and whether a model is ready. Entries are
 * made on first use and never removed; the lifecycle changes their versions.
 */
export class ModelTable {
  /** By key: the name alone, or namespace and name with --model-namespacing. */
  readonly entries = new Map<string, ModelEntry>();
  /** The entries of each name, with --model-namespacing (entries are never removed, so neither are these). */
  private readonly byName = new Map<string, ModelEntry[]>();

  constructor(readonly namespacing: boolean) {}

  /** The entry of a key (see modelKey), made on first use; `name` is the model's name when the key is not. */
  entry(key: string, name = key): ModelEntry {
    let e = this.entries.get(key);
    if (!e) {
      e = newEntry(key, name, key === name ? '' : key.slice(0, key.length - name.length - 1));
      this.entries.set(key, e);
      const same = this.byName.get(name);
      if (same) same.push(e);
      else this.byName.set(name, [e]);
    }
    return e;
  }

  /** The entries a name stands for: one at most without namespacing, one per repository with it. */
  named(name: string): ModelEntry[] {
    if (this.namespacing) return this.byName.get(name) ?? [];
    const e = this.entries.get(name);
    return e ? [e] : [];
  }

  /** Records why a model failed before any version of it loaded; returns the reason. */
  fail(key: string, reason: string, name = key): string {
    const e = this.entry(key, name);
    if (e.versions.size === 0) e.failure = reason;
    return reason;
  }

  /** Runs `op` after every earlier operation on the same model. */
  serially<T>(key: string, op: (e: ModelEntry) => Promise<T>, name = key): Promise<T> {
    const e = this.entry(key, name);
    e.ops++;
    const run = e.busy.then(() => op(e));
    e.busy = run.then(() => void e.ops--, () => void e.ops--);
    return run;
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
  resolveFrom(namespace: string, name: string, version: number | undefined): ModelVersion {
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
   * True when every model the server was asked to serve has a version the lifecycle holds READY (for
   * --strict-readiness), as Triton counts it: an instance that is down does not make the whole server unready,
   * or a server taken out of service for it would get no request to start the instance again with.
   */
  allReady(): boolean {
    for (const entry of this.entries.values()) {
      if (entry.unloaded || entry.onDemand) continue;
      if (!hasReadyVersion(entry)) return false;
    }
    return true;
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

  /**
   * Triton's repository index over the models known and those `scan` found (undefined: the repositories could
   * not be read), with state and reason for those the server has tried to load (a model never loaded is listed
   * by name only); `readyOnly` keeps READY versions only.
   */
  index(scan: RepositoryScan | undefined, readyOnly: boolean): IndexEntry[] {
    const keys = new Set([...this.entries.keys(), ...(scan?.models.keys() ?? []), ...(scan?.duplicates.keys() ?? [])]);
    const nameOf = (key: string): string => this.entries.get(key)?.name ?? scan?.models.get(key)?.name ?? key;
    // By name; with namespacing one name may come once per repository, each with its own versions.
    const sorted = [...keys].map((key) => [nameOf(key), key] as const).sort(([a, ka], [b, kb]) => (a < b ? -1 : a > b ? 1 : ka < kb ? -1 : ka > kb ? 1 : 0));
    const out: IndexEntry[] = [];
    for (const [name, key] of sorted) {
      const entry = this.entries.get(key);
      if (!entry) {
        if (!readyOnly) out.push({ name });
      } else if (entry.versions.size === 0) {
        if (!readyOnly) out.push({ name, state: 'UNAVAILABLE', reason: entry.failure || 'unloaded' });
      } else {
        out.push(...versionLines(entry, readyOnly));
      }
    }
    return out;
  }
}

function versionLines(entry: ModelEntry, readyOnly: boolean): IndexEntry[] {
  const out: IndexEntry[] = [];
  for (const v of [...entry.versions.keys()].sort((a, b) => a - b)) {
    const s = versionState(entry.versions.get(v)!);
    if (readyOnly && s.state !== 'READY') continue;
    const bytes = entry.versions.get(v)!.model?.memoryBytes;
    out.push({ name: entry.name, version: String(v), state: s.state, ...(s.reason ? { reason: s.reason } : {}), ...(bytes !== undefined ? { nereid_memory_bytes: bytes } : {}) });
  }
  return out;
}

/**
 * The one state every report of a model's readiness reads: its ready endpoints (HTTP and gRPC) and the
 * repository index. A version the lifecycle holds READY whose instances cannot all serve (a stub that is
 * down, hung past the execute timeout, or could not start again) is UNAVAILABLE, with their reasons.
 */
function versionState(slot: VersionSlot): { state: ModelState; reason: string } {
  if (slot.state !== 'READY' || !slot.model) return slot;
  const status = slot.model.status();
  return status.ready ? slot : { state: 'UNAVAILABLE', reason: status.reason };
}
