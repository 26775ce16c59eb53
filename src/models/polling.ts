import type { Logger } from '../observability/logger.js';
import { modelTimestamps } from '../repository/local.js';
import { scanSources, type RepositorySource } from '../repository/source.js';
import type { DependencyGraph } from './dependency-graph.js';
import type { ModelLifecycle } from './lifecycle.js';
import type { ModelTable } from './model-table.js';

/**
 * Poll mode's one pass over the repositories: a model gone from them unloads, a new one loads, and one whose
 * files changed (their timestamps) loads again; a model loaded from file overrides is not the repository's and
 * is left alone. With `loadedOnly` (models load on demand) only the models loaded now load again; the others
 * load when a request names them.
 */
export async function pollRepositories(sources: readonly RepositorySource[], table: ModelTable, lifecycle: ModelLifecycle, graph: DependencyGraph, loadedOnly = false): Promise<void> {
  const scan = await scanSources(sources, table.namespacing);
  const work: Promise<unknown>[] = [];
  // What went first: with namespacing a name that stays in one repository stops being ambiguous.
  for (const [key, entry] of table.entries) {
    if (scan.models.has(key) || entry.overrides) continue;
    entry.waiting = false;
    if (!entry.unloaded && entry.versions.size > 0) work.push(lifecycle.unload(key).catch(() => undefined));
  }
  await Promise.all(work.splice(0));
  for (const [key, location] of scan.models) {
    const entry = table.entries.get(key);
    if (entry?.overrides) continue; // a model loaded from overrides is not the repository's
    if (entry?.waiting) continue; // it loads again when its steps can run (DependencyGraph.settle)
    if (loadedOnly && (entry === undefined || entry.unloaded || entry.versions.size === 0)) continue;
    // A model that cannot be downloaded now keeps serving what it served.
    if ((await lifecycle.fetch(location)) !== undefined) continue;
    const stamps = await modelTimestamps(location.dir);
    if (entry && sameStamps(entry.timestamps, stamps) && entry.location?.dir === location.dir) continue;
    work.push(table.serially(key, (e) => lifecycle.load(e, location, {}), location.name));
  }
  await Promise.all(work);
  await graph.settle();
}

function sameStamps(a: Map<string, bigint>, b: Map<string, bigint>): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}

/**
 * Poll mode's timer: `pass` runs every `intervalMs`, each time counted from the end of the one before, so that
 * passes never overlap; a pass that fails is logged and the next one still comes. Returns what stops it.
 */
export function pollEvery(intervalMs: number, pass: () => Promise<void>, logger: Logger): () => void {
  if (intervalMs <= 0) return () => undefined;
  let stopped = false;
  let timer: NodeJS.Timeout;
  const tick = async (): Promise<void> => {
    try {
      await pass();
    } catch (e) {
      logger.error(`repository poll failed: ${(e as Error).message}`);
    }
    if (!stopped) timer = setTimeout(tick, intervalMs).unref();
  };
  timer = setTimeout(tick, intervalMs).unref();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
