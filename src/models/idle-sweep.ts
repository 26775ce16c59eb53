import type { Logger } from '../observability/logger.js';
import type { ModelEntry } from './model-entry.js';
import type { ModelTable } from './model-table.js';
import { idle, lastUse, versionsOf, type MemoryBudget } from './memory-budget.js';
import { stringParameter } from './router.js';
import { modelsRunOn } from './dependency-graph.js';

/** A model's config parameter: unload it once it has had no request for this many seconds (scale to zero). */
export const IDLE_UNLOAD_PARAMETER = 'nereid_idle_unload_secs';
const SWEEP_MS = 1000;

/**
 * Once a second: unloads the models whose config sets nereid_idle_unload_secs and that have been idle that
 * long (no request, nothing in flight, no live sequence, no loaded ensemble or router running on them), and,
 * with a memory budget, unloads idle models while the loaded ones are over it (a load that took more than
 * estimated while the others were busy). The timer does not keep the process alive.
 */
export class IdleSweep {
  private readonly timer: NodeJS.Timeout;
  private sweeping = false;

  constructor(
    private readonly table: ModelTable,
    private readonly budget: MemoryBudget | undefined,
    private readonly unload: (e: ModelEntry, reason: string) => Promise<void>,
    private readonly logger: Logger,
  ) {
    this.timer = setInterval(() => void this.sweep(), SWEEP_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      for (const [e, secs] of this.idleTooLong()) {
        this.logger.info(`unloading '${e.name}': idle for ${secs} s (${IDLE_UNLOAD_PARAMETER})`);
        await this.unload(e, `unloaded: idle for ${secs} s (${IDLE_UNLOAD_PARAMETER})`).catch(() => undefined);
      }
      if (this.budget !== undefined && this.budget.used() > this.budget.bytes) await this.budget.trim();
    } finally {
      this.sweeping = false;
    }
  }

  /** The loaded models idle past their nereid_idle_unload_secs, with that number. */
  private idleTooLong(): [ModelEntry, number][] {
    const now = Date.now();
    const out: [ModelEntry, number][] = [];
    let runOn: Set<string> | undefined;
    for (const e of this.table.entries.values()) {
      const spec = e.prepared !== undefined && !e.unloaded ? stringParameter(e.prepared.config, IDLE_UNLOAD_PARAMETER) : undefined;
      const secs = spec === undefined ? NaN : Number(spec);
      if (!(secs > 0) || versionsOf(e).length === 0 || e.ops > 0 || !idle(e) || now - lastUse(e) < secs * 1000) continue;
      runOn ??= this.runOn();
      if (!runOn.has(e.name)) out.push([e, secs]);
    }
    return out;
  }

  private runOn(): Set<string> {
    const names = new Set<string>();
    for (const e of this.table.entries.values()) if (e.prepared && !e.unloaded) for (const n of modelsRunOn(e.prepared.config)) names.add(n);
    return names;
  }
}
