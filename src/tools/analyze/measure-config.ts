/**
 * One config of `nereid analyze` measured: the model copied under the config's name into the output repository,
 * served by its own `nereid serve` process, and swept by the perf load generator until the latency budget is
 * spent or the throughput stops rising.
 */
import { cpSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ModelConfig } from '../../config/index.js';
import type { LevelResult } from '../perf/measure.js';
import { parsePerfFlags } from '../perf/options.js';
import { PerfError, runPerf } from '../perf/run.js';
import { configText, describe, type Candidate } from './candidates.js';
import type { AnalyzeOptions } from './options.js';
import { best, p99Ms, type Constraints } from './ranking.js';
import { CandidateFailed, startServer } from './serve-process.js';

export interface ConfigResult {
  /** The name it was served under: <model>_config_default, <model>_config_<n>. */
  readonly name: string;
  /** undefined for the model's own config. */
  readonly candidate: Candidate | undefined;
  readonly description: string;
  readonly config: ModelConfig;
  readonly measurements: LevelResult[];
  readonly error: string | undefined;
  /** Its best measurement under the constraints and objectives. */
  best: LevelResult | undefined;
}

export interface MeasureIo {
  progress(text: string): void;
  readonly signal?: AbortSignal;
}

/** A config to measure: the name it is served under, what it changes, and its label in the progress line. */
export interface ConfigToMeasure {
  readonly name: string;
  readonly candidate: Candidate | undefined;
  readonly config: ModelConfig;
  readonly label: string;
}

/** The model's folder copied under a new name with the candidate's config. */
function writeCandidate(o: AnalyzeOptions, name: string, cfg: ModelConfig): void {
  const dest = join(o.outputRepository, name);
  rmSync(dest, { recursive: true, force: true });
  cpSync(join(o.repository, o.model), dest, { recursive: true, filter: (src) => !src.endsWith(`${o.model}/config.pbtxt`) });
  writeFileSync(join(dest, 'config.pbtxt'), configText(cfg));
}

/** Whether the sweep of concurrencies ends after these levels. */
function sweepDone(o: AnalyzeOptions, rs: readonly LevelResult[]): boolean {
  const last = rs.at(-1)!;
  if (o.latencyBudgetMs !== undefined && p99Ms(last) > o.latencyBudgetMs) return true;
  if (o.explicitConcurrency || rs.length < 4) return false;
  // A plateau: the last three levels each gained under 5% over the best before them. Two were not enough:
  // on a busy machine a dip at two levels stopped sweeps that rose again further on.
  const peak = (n: number): number => Math.max(...rs.slice(0, n).map((x) => x.throughput));
  return [1, 2, 3].every((k) => rs.at(-k)!.throughput < peak(rs.length - k) * 1.05);
}

/**
 * Serves and measures one config; a config that does not serve or fails its measurement comes back with its
 * error, one interrupted with no measurement. `timeLeft` is appended to each progress line.
 */
export async function measureConfig(o: AnalyzeOptions, io: MeasureIo, c: ConfigToMeasure, constraints: Constraints, timeLeft: () => string): Promise<ConfigResult> {
  const { name, candidate, label } = c;
  const r: ConfigResult = { name, candidate, description: candidate ? describe(candidate) : 'starting config', config: c.config, measurements: [], error: undefined, best: undefined };
  writeCandidate(o, name, c.config);
  let server;
  try {
    server = await startServer(o.outputRepository, name, o.protocol === 'grpc', io.signal);
  } catch (e) {
    if (io.signal?.aborted) return r;
    return { ...r, error: e instanceof CandidateFailed ? e.message : String(e) };
  }
  try {
    const args = ['-m', name, '-u', o.protocol === 'grpc' ? server.grpcUrl! : server.httpUrl, '-i', o.protocol, '-p', String(o.intervalMs), '-r', String(o.maxTrials), '-b', String(o.requestBatch), '--warmup-request-count', String(o.warmupRequests)];
    if (o.version) args.push('-x', o.version);
    const run = await runPerf(parsePerfFlags(args), {
      out: () => undefined,
      signal: io.signal,
      progress: (t) => t && io.progress(`[${label} ${name}: ${r.description}] ${t.replace(/ · at least .*$/, '')}${timeLeft()}`),
    }, { levels: o.concurrencies, stopAfter: (rs) => sweepDone(o, rs) });
    r.measurements.push(...run.results);
    r.best = best(r.measurements, (x) => x, constraints, o.objectives);
    return r;
  } catch (e) {
    return { ...r, error: e instanceof PerfError ? e.message : String((e as Error).message ?? e) };
  } finally {
    await server.stop();
  }
}
