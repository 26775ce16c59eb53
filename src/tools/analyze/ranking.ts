/**
 * Model Analyzer's rules for choosing: a measurement passes when it meets every constraint; two measurements
 * compare by the weighted mean of their relative gains on each objective; the Pareto set holds the measurements no
 * other beats on both throughput and p99 latency.
 */
import type { LevelResult } from '../perf/measure.js';
import type { Objective } from './options.js';

export interface Constraints {
  readonly latencyBudgetMs: number | undefined;
  readonly minThroughput: number | undefined;
}

export const p99Ms = (r: LevelResult): number => r.latency.p99 / 1000;

export function passes(r: LevelResult, c: Constraints): boolean {
  return (c.latencyBudgetMs === undefined || p99Ms(r) <= c.latencyBudgetMs) && (c.minThroughput === undefined || r.throughput >= c.minThroughput);
}

/** How far a measurement misses the constraints, as a sum of relative shortfalls (0 when it passes). */
export function violation(r: LevelResult, c: Constraints): number {
  let v = 0;
  if (c.latencyBudgetMs !== undefined && p99Ms(r) > c.latencyBudgetMs) v += (p99Ms(r) - c.latencyBudgetMs) / c.latencyBudgetMs;
  if (c.minThroughput !== undefined && r.throughput < c.minThroughput) v += (c.minThroughput - r.throughput) / c.minThroughput;
  return v;
}

/** > 0 when a is better than b under the objectives. */
export function gain(a: LevelResult, b: LevelResult, objectives: ReadonlyMap<Objective, number>): number {
  let total = 0;
  let weights = 0;
  for (const [name, w] of objectives) {
    const [x, y] = name === 'perf_throughput' ? [a.throughput, b.throughput] : [p99Ms(b), p99Ms(a)];
    const mean = (Math.abs(x) + Math.abs(y)) / 2;
    total += w * (mean === 0 ? 0 : (x - y) / mean);
    weights += w;
  }
  return weights === 0 ? 0 : total / weights;
}

/** The best of some measurements: passing ones first, then by the objectives. */
export function best<T>(items: readonly T[], result: (t: T) => LevelResult, c: Constraints, objectives: ReadonlyMap<Objective, number>): T | undefined {
  let out: T | undefined;
  for (const it of items) {
    if (out === undefined) {
      out = it;
      continue;
    }
    const a = result(it);
    const b = result(out);
    const pa = passes(a, c);
    const pb = passes(b, c);
    if (pa !== pb ? pa : gain(a, b, objectives) > 0) out = it;
  }
  return out;
}

export function paretoSet<T>(items: readonly T[], result: (t: T) => LevelResult): T[] {
  return items.filter((it) => {
    const a = result(it);
    return !items.some((o) => {
      const b = result(o);
      return b !== a && b.throughput >= a.throughput && p99Ms(b) <= p99Ms(a) && (b.throughput > a.throughput || p99Ms(b) < p99Ms(a));
    });
  });
}
