import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { ModelVersion } from './model-version.js';
import { trimHeap } from './heap-trim.js';

/**
 * What a model's load costs in memory: the growth of this process's resident set while the load ran, taken
 * only when no other load ran beside it (else the growth is not its own), against what its engines report
 * (BackendInstance.memory): the larger of the growth and the in-process report, plus what lives outside the
 * process (a Python stub's RSS). The RSS growth can fall short of a model's real cost when memory freed
 * earlier is reused, and the report can miss what an engine does not count, so each covers the other.
 */
export class LoadMeter {
  private running = 0;
  /** Backends that have loaded a model here: the first load of each also pays for the backend's runtime. */
  private readonly backendsSeen = new Set<string>();

  /** V8's full collection, under a budget (see the constructor). */
  private readonly collect: (() => void) | undefined;

  /**
   * `trim`: before each reading the JavaScript heap is collected and the C heap trimmed (heap-trim.ts), so that
   * what a load allocated and freed again (an engine's copy of the file it read) does not count, and what a
   * model unloaded just before leaves (a JavaScript model's buffers, freed at V8's next collection) is not
   * taken off the new model's growth. Set under a memory budget, where loads run alone and the figure decides
   * what fits; a collection costs a pause of the event loop per load there.
   */
  constructor(private readonly trim = false) {
    this.collect = trim ? fullCollection() : undefined;
  }

  private settle(): void {
    this.collect?.();
    trimHeap();
  }
  /** Loads running now; each is marked when another one overlaps it. */
  private readonly open = new Set<Measure>();

  begin(): Measure {
    if (this.trim) this.settle();
    const m = new Measure(process.memoryUsage.rss());
    this.running++;
    if (this.running > 1) for (const other of this.open) other.overlapped = true;
    m.overlapped = this.running > 1;
    this.open.add(m);
    return m;
  }

  /**
   * Ends a measure and sets each loaded version's memoryBytes; `filesBytes` is the fallback for a load that
   * overlapped another and whose engines report nothing. Returns the total.
   */
  end(m: Measure, versions: readonly ModelVersion[], filesBytes: number, backend: string): number {
    this.running--;
    this.open.delete(m);
    if (versions.length === 0) return 0;
    // The first model of a backend also starts the backend's runtime (ONNX Runtime's environment and thread
    // pools: some 25 MB): that growth is the backend's, so its engine's report is taken where there is one.
    const first = !this.backendsSeen.has(backend);
    this.backendsSeen.add(backend);
    if (this.trim && !m.overlapped) this.settle();
    const growth = m.overlapped ? undefined : Math.max(0, process.memoryUsage.rss() - m.rssBefore) / versions.length;
    let total = 0;
    for (const v of versions) {
      const e = v.engineMemory();
      const measured = growth !== undefined && !(first && e.reported);
      const own = measured ? Math.max(growth!, e.inProcess) : e.reported ? e.inProcess : filesBytes / versions.length;
      v.memoryBytes = Math.round(own + e.external);
      v.stats.memoryBytes = v.memoryBytes;
      total += v.memoryBytes;
    }
    return total;
  }
}

/** V8's full garbage collection as a function: the process's own when it runs with --expose-gc, else one V8 gives. */
function fullCollection(): (() => void) | undefined {
  const own = (globalThis as { gc?: () => void }).gc;
  if (typeof own === 'function') return own;
  setFlagsFromString('--expose-gc');
  const gc: unknown = runInNewContext('gc');
  return typeof gc === 'function' ? (gc as () => void) : undefined;
}

/** One load's measure: the RSS before it, and whether another load ran beside it. */
export class Measure {
  overlapped = false;
  constructor(readonly rssBefore: number) {}
}

/** Most files counted in a model folder (a bound: the estimate is a guess anyway). */
const MAX_FILES = 10_000;

/**
 * The size of a model's files: the estimate of its memory before its first load (weights dominate both). At
 * most two levels of folders below `dir` (the version folder and one inside it) and MAX_FILES files.
 */
export async function folderBytes(dir: string, depth = 2): Promise<number> {
  let total = 0;
  let files = 0;
  const walk = async (d: string, left: number): Promise<void> => {
    const items = await readdir(d, { withFileTypes: true }).catch(() => []);
    for (const item of items) {
      if (++files > MAX_FILES) return;
      const p = join(d, item.name);
      if (item.isDirectory()) {
        if (left > 0) await walk(p, left - 1);
      } else {
        total += (await stat(p).catch(() => undefined))?.size ?? 0;
      }
    }
  };
  await walk(dir, depth);
  return total;
}
