import type { ModelConfig } from '../config/types.js';
import type { Logger } from '../observability/logger.js';
import type { ModelLocation, RepositoryScan } from '../repository/local.js';
import { readConfig, type LoaderOptions } from './loader.js';
import { EnsembleScheduler } from './ensemble.js';
import { routerTargets } from './router.js';
import type { ModelLifecycle } from './lifecycle.js';
import type { ModelTable } from './model-table.js';
import { hasReadyVersion, type ModelEntry } from './model-entry.js';

/**
 * Triton's dependency graph: which models run on which (an ensemble's steps, a router's targets), read from
 * their configs. It orders loads (a model before what runs on it), loads and unloads along the edges, and after
 * every change unloads an ensemble a step of which lost its model and loads it again once the model is back.
 */
export class DependencyGraph {
  constructor(
    private readonly table: ModelTable,
    private readonly lifecycle: ModelLifecycle,
    private readonly opts: LoaderOptions,
    private readonly logger: Logger,
  ) {}

  /**
   * Whether a model runs on other models (an ensemble, or a router), from its config (false when the config
   * cannot be read): such models load after the others. Also lets the model's backend start ahead
   * (Backend.prestart), as its config is read here before any load.
   */
  async runsOnOthers(name: string, dir: string): Promise<boolean> {
    const config = await readConfig(dir, name, this.opts).catch(() => undefined);
    if (config?.backend) this.opts.backends.prestart(config.backend, dir);
    return config?.platform === 'ensemble' || config?.backend === 'router';
  }

  /** The models the model in `dir` runs on, from its config (none when it cannot be read). */
  async dependencies(name: string, dir: string): Promise<string[]> {
    const config = await readConfig(dir, name, this.opts).catch(() => undefined);
    return config ? modelsRunOn(config) : [];
  }

  /** The named models and, for ensembles among them, every model they run on (--load-model of an ensemble). */
  async withDependencies(names: readonly string[], scan: RepositoryScan): Promise<string[]> {
    const out = [...names];
    for (let i = 0; i < out.length; i++) {
      for (const location of locationsOf(scan, out[i]!)) {
        await this.lifecycle.fetch(location);
        for (const d of await this.dependencies(location.name, location.dir)) if (!out.includes(d)) out.push(d);
      }
    }
    return out;
  }

  /**
   * Of the keys of models that run on others, those whose models do not run on another of them: the next level
   * to load. All of them when every one waits on another (a cycle), so that each fails clearly.
   */
  async nextLevel(left: readonly string[], scan: RepositoryScan): Promise<string[]> {
    const waiting = new Set(left.map((k) => scan.models.get(k)!.name));
    const ready: string[] = [];
    for (const n of left) {
      const location = scan.models.get(n)!;
      const deps = await this.dependencies(location.name, location.dir);
      if (!deps.some((d) => waiting.has(d) && d !== location.name)) ready.push(n);
    }
    return ready.length > 0 ? ready : [...left];
  }

  /**
   * Whether a model an ensemble runs on needs loading: it has no READY version, or (with namespacing) one of
   * the repositories has a model of that name that is not serving, such as one put back since.
   */
  notServing(name: string, scan: RepositoryScan | undefined): boolean {
    const ready = (e: ModelEntry | undefined): boolean => !!e && !e.unloaded && hasReadyVersion(e);
    const entries = this.table.entries;
    if (!this.table.namespacing) return !ready(entries.get(name));
    const keys = scan ? locationsOf(scan, name).map((l) => l.key) : this.table.named(name).map((e) => e.key);
    return keys.length === 0 || keys.some((k) => !ready(entries.get(k)));
  }

  /**
   * Unloads a model by name; with `dependents` the models it ran on go too, each that was not loaded by name and
   * that no other loaded model runs on, and so on down. A name Triton never loaded unloads without error
   * (qa/L0_lifecycle test_model_control: "Unload non-existing model, nothing should happen").
   */
  async unload(name: string, dependents: boolean): Promise<void> {
    const entries = this.table.named(name);
    if (entries.length === 0) return;
    const ranOn = entries.flatMap((e) => (e.prepared && !e.unloaded ? modelsRunOn(e.prepared.config) : []));
    // With namespacing, unloading a name unloads it in every repository, as Triton's global map has it.
    await Promise.all(entries.map((e) => this.lifecycle.unload(e.key)));
    if (!dependents) return;
    for (const other of new Set(ranOn)) {
      const alive = this.table.named(other).filter((o) => !o.unloaded);
      if (alive.length === 0 || alive.some((o) => o.explicit) || other === name || this.runOnBy(other)) continue;
      await this.unload(other, true);
    }
  }

  /** Whether a loaded model runs on `name`, or an ensemble waiting to load again (Triton's graph keeps its edges). */
  private runOnBy(name: string): boolean {
    for (const e of this.table.entries.values()) {
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
  async settle(): Promise<void> {
    const entries = this.table.entries;
    for (let pass = 0, changed = true; changed && pass <= entries.size; pass++) {
      changed = false;
      for (const e of [...entries.values()]) {
        if (e.waiting) changed = (await this.loadAgain(e)) || changed;
        else if (this.stranded(e)) changed = (await this.strand(e)) || changed;
      }
    }
  }

  /** A loaded ensemble that some step of cannot run on any model now. */
  private stranded(e: ModelEntry): boolean {
    const config = e.prepared?.config;
    if (e.unloaded || config?.platform !== 'ensemble' || !hasReadyVersion(e)) return false;
    return !this.stepsServe(e.namespace, config);
  }

  private stepsServe(namespace: string, config: ModelConfig): boolean {
    for (const step of EnsembleScheduler.composingModels(config)) {
      try {
        this.table.resolveFrom(namespace, step.name, step.version);
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
    return this.table.serially(e.key, async (x) => {
      if (!this.stranded(x)) return false;
      this.logger.error(`ensemble '${x.name}' is unloaded: a model one of its steps runs on is not available`);
      if (x.overrides) {
        await this.lifecycle.unloadNow(x);
        return true;
      }
      await this.lifecycle.retire(x, [...x.versions.keys()]);
      x.unloaded = true;
      x.waiting = true;
      return true;
    });
  }

  /** Loads a waiting ensemble again once every step of its config (read afresh) has a model to run on. */
  private async loadAgain(e: ModelEntry): Promise<boolean> {
    const config = e.configOverride ?? (e.location ? await readConfig(e.location.dir, e.name, this.opts).catch(() => undefined) : undefined);
    if (!config || !this.stepsServe(e.namespace, config)) return false;
    const failed = await this.table.serially(e.key, (x) => {
      if (!x.waiting) return Promise.resolve(undefined);
      x.waiting = false;
      return this.lifecycle.load(x, x.location, x.configOverride ? { config: x.configOverride } : {});
    });
    if (failed) this.logger.error(`failed to load '${e.name}' again: ${failed.message}`);
    return true;
  }
}

/** The models an ensemble's steps or a router's routes run on. */
export function modelsRunOn(config: ModelConfig): string[] {
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

/** The models of this name: one at most without namespacing, one per repository with it. */
export function locationsOf(scan: RepositoryScan, name: string): ModelLocation[] {
  return [...scan.models.values()].filter((l) => l.name === name);
}
