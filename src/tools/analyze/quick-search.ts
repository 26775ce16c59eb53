/** `nereid analyze --run-config-search-mode quick`: hill-climbing over the search space. */
import type { LevelResult } from '../perf/measure.js';
import { candidateAt, neighbours, type Candidate, type searchSpace } from './candidates.js';
import type { ConfigResult } from './measure-config.js';
import type { AnalyzeOptions } from './options.js';
import { gain, passes, violation, type Constraints } from './ranking.js';

/** Hill-climbing from the smallest point: move to the best neighbour while it beats the current one. */
export async function quickSearch(
  space: ReturnType<typeof searchSpace>,
  evaluate: (c: Candidate) => Promise<ConfigResult | undefined>,
  constraints: Constraints,
  o: AnalyzeOptions,
  exhausted: () => boolean,
): Promise<void> {
  let at = space.axes.map(() => 0);
  let current = await evaluate(candidateAt(space, at));
  const visited = new Set([at.join(',')]);
  while (!exhausted()) {
    let bestNext: { index: number[]; r: ConfigResult } | undefined;
    for (const n of neighbours(space, at)) {
      if (exhausted()) break;
      if (visited.has(n.join(','))) continue;
      visited.add(n.join(','));
      const r = await evaluate(candidateAt(space, n));
      if (!r?.best) continue;
      if (!bestNext || better(r.best, bestNext.r.best!, constraints, o)) bestNext = { index: n, r };
    }
    if (!bestNext || (current?.best && !better(bestNext.r.best!, current.best, constraints, o))) return;
    at = bestNext.index;
    current = bestNext.r;
  }
}

function better(a: LevelResult, b: LevelResult, c: Constraints, o: AnalyzeOptions): boolean {
  const pa = passes(a, c);
  const pb = passes(b, c);
  if (pa !== pb) return pa;
  if (!pa && violation(a, c) !== violation(b, c)) return violation(a, c) < violation(b, c);
  return gain(a, b, o.objectives) > 0;
}
