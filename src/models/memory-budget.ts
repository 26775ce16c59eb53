import { setTimeout as sleep } from 'node:timers/promises';
import { NereidError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { ModelEntry } from './model-entry.js';
import type { ModelVersion } from './model-version.js';
import { trimHeap } from './heap-trim.js';

/** How often a load waiting for room looks again whether a model has become idle. */
const RETRY_MS = 25;

/** What the budget needs of the model layer. */
export interface BudgetHooks {
  entries(): Iterable<ModelEntry>;
  /** The names of the models a loaded ensemble or router runs on (none for other models). */
  runsOn(e: ModelEntry): readonly string[];
  /** Whether the model was pinned (--load-model, or its config's nereid_pinned). */
  pinned(e: ModelEntry): boolean;
  /** Unloads a model to make room; resolves once it is unloaded. */
  evict(e: ModelEntry, reason: string): Promise<void>;
}

/**
 * --model-memory-budget: the loaded models' measured memory (load-meter.ts) together stays within `bytes`.
 * Loads run one at a time (so each measures its own growth); before one, the least recently used idle models
 * are unloaded until its estimate fits, and after it, again if it took more than estimated. Idle: no request
 * in flight, no live sequence, no operation on it running, not pinned, and no loaded ensemble or router runs
 * on it (that one goes first, freeing its steps). A load that finds no idle model to unload waits for one up
 * to `waitMs`, then fails UNAVAILABLE; a model larger than the budget fails at once, naming both sizes.
 */
export class MemoryBudget {
  private lock: Promise<void> = Promise.resolve();
  /** Evictions, by model name (nereid_model_eviction_count). */
  readonly evictions = new Map<string, number>();

  constructor(readonly bytes: number, private readonly waitMs: number, private readonly hooks: BudgetHooks, private readonly logger: Logger) {}

  /** Models held against eviction while an ensemble or router that runs on them loads, with a count of holds. */
  private readonly held = new Map<string, number>();

  /**
   * A hold on models against eviction, for as long as an ensemble or router that runs on them loads: a model
   * loaded for an ensemble must still be there when the ensemble's own load runs.
   */
  hold(): { add(name: string): void; release(): void } {
    const names: string[] = [];
    return {
      add: (name) => {
        names.push(name);
        this.held.set(name, (this.held.get(name) ?? 0) + 1);
      },
      release: () => {
        for (const n of names.splice(0)) {
          const left = (this.held.get(n) ?? 1) - 1;
          if (left > 0) this.held.set(n, left);
          else this.held.delete(n);
        }
      },
    };
  }

  /** Runs `fn` with no other load of the budget running (see the class comment). */
  serially<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.lock.then(fn);
    this.lock = run.then(() => undefined, () => undefined);
    return run;
  }

  /** Memory of every loaded version, the versions of `except` left out. */
  used(except?: ModelEntry): number {
    let total = 0;
    for (const e of this.hooks.entries()) {
      if (e === except) continue;
      for (const v of versionsOf(e)) total += v.memoryBytes ?? 0;
    }
    return total;
  }

  /**
   * What a load of `e` is expected to take: its last load's measure; before its first, the larger of its files'
   * size and the mean of what the other models of its backend took (a repository of similar models then does
   * not overshoot the budget at each first load), never more than the budget. Only the model's own measure is
   * `known`: a guess must not hold the loads back (see makeRoom). A model that took more than the budget (and
   * was refused) says nothing about the others and is left out of the mean.
   */
  estimate(e: ModelEntry, filesBytes: number, backend: string): { bytes: number; known: boolean } {
    if (e.lastBytes > 0) return { bytes: e.lastBytes, known: true };
    let sum = 0;
    let n = 0;
    for (const other of this.hooks.entries()) {
      if (other === e || other.lastBytes === 0 || other.lastBytes > this.bytes) continue;
      if ((other.prepared?.config.backend || other.prepared?.config.platform) !== backend) continue;
      sum += other.lastBytes;
      n++;
    }
    return { bytes: Math.min(this.bytes, Math.max(filesBytes, n > 0 ? Math.round(sum / n) : 0)), known: false };
  }

  /**
   * Unloads idle models until `need` more bytes fit beside the others (those of `e` itself counted). When none
   * can go now, a known need waits for one (up to the wait); a guessed one loads at once, and its measure
   * decides (settle): waiting on a guess would hold every other load back for nothing.
   */
  async makeRoom(e: ModelEntry, need: { bytes: number; known: boolean }): Promise<void> {
    if (need.known && need.bytes > this.bytes) throw this.tooLarge(e, need.bytes);
    const deadline = performance.now() + this.waitMs;
    for (;;) {
      const used = this.used();
      if (used + need.bytes <= this.bytes) return;
      const victim = this.victim(e);
      if (victim !== undefined) {
        await this.evict(victim, `to make room for '${e.name}' (${need.bytes} bytes) within the model memory budget of ${this.bytes} bytes`);
        continue;
      }
      if (!need.known) return;
      if (performance.now() >= deadline) {
        throw new NereidError('UNAVAILABLE', `cannot load '${e.name}' (${need.bytes} bytes) within the model memory budget of ${this.bytes} bytes: the loaded models take ${used} bytes and none of them can be unloaded now`, { retryAfterSecs: 1, limit: 'model-memory-budget' });
      }
      await sleep(RETRY_MS);
    }
  }

  /**
   * After `e` loaded versions taking `added` bytes, not yet in service: unloads idle models while the total is
   * over the budget. Throws when they alone are larger than the budget (its caller unloads them); a total over
   * the budget because the others are busy is let be until they are idle (see the idle sweep).
   */
  async settle(e: ModelEntry, added: number): Promise<void> {
    if (added > this.bytes) throw this.tooLarge(e, added);
    while (this.used() + added > this.bytes) {
      const victim = this.victim(e);
      if (victim === undefined) {
        this.logger.warn(`the loaded models take ${this.used() + added} bytes, over the model memory budget of ${this.bytes} bytes, until some are idle`);
        return;
      }
      await this.evict(victim, `the loaded models were over the model memory budget of ${this.bytes} bytes after '${e.name}' loaded`);
    }
  }

  /** Over the budget with idle models to spare: unloads the least recently used (the idle sweep's call). */
  async trim(): Promise<void> {
    await this.serially(async () => {
      while (this.used() > this.bytes) {
        const victim = this.victim(undefined);
        if (victim === undefined) return;
        await this.evict(victim, `the loaded models were over the model memory budget of ${this.bytes} bytes`);
      }
    });
  }

  private async evict(victim: ModelEntry, why: string): Promise<void> {
    const bytes = this.used() - this.used(victim);
    this.evictions.set(victim.name, (this.evictions.get(victim.name) ?? 0) + 1);
    this.logger.info(`evicting '${victim.name}' (${bytes} bytes, least recently used) ${why}`);
    await this.hooks.evict(victim, 'unloaded: evicted to keep the loaded models within the model memory budget');
    trimHeap();
  }

  /** The least recently used model that may be unloaded now, `keep` aside; undefined when none may. */
  victim(keep: ModelEntry | undefined): ModelEntry | undefined {
    const runOn = new Set<string>();
    for (const e of this.hooks.entries()) if (e !== keep && loaded(e)) for (const n of this.hooks.runsOn(e)) runOn.add(n);
    let best: ModelEntry | undefined;
    let bestUse = Infinity;
    for (const e of this.hooks.entries()) {
      if (e === keep || !loaded(e) || runOn.has(e.name) || this.held.has(e.name) || e.ops > 0 || this.hooks.pinned(e) || !idle(e)) continue;
      const use = lastUse(e);
      if (use < bestUse) {
        best = e;
        bestUse = use;
      }
    }
    return best;
  }

  private tooLarge(e: ModelEntry, bytes: number): NereidError {
    return new NereidError('INVALID_ARG', `failed to load '${e.name}': it takes ${bytes} bytes, more than the model memory budget of ${this.bytes} bytes (--model-memory-budget)`, { limit: 'model-memory-budget' });
  }
}

/** The versions of a model that are loaded (serving, or draining out of service but not yet released). */
export function versionsOf(e: ModelEntry): ModelVersion[] {
  const out: ModelVersion[] = [];
  for (const slot of e.versions.values()) if (slot.model) out.push(slot.model);
  return out;
}

function loaded(e: ModelEntry): boolean {
  return !e.unloaded && versionsOf(e).length > 0;
}

/** No request in flight and no live sequence on any of its versions. */
export function idle(e: ModelEntry): boolean {
  for (const v of versionsOf(e)) if (v.busy()) return false;
  return true;
}

/** When the model was last used (its last request, or its load): the LRU order. */
export function lastUse(e: ModelEntry): number {
  let use = 0;
  for (const v of versionsOf(e)) use = Math.max(use, v.stats.lastInferenceMs, v.loadedAtMs);
  return use;
}
