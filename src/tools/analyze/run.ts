/**
 * `nereid analyze`: Model Analyzer's profile on one model. Each candidate config is written into the output model
 * repository as a copy of the model, served by its own `nereid serve` process, and measured by the perf load
 * generator over a sweep of concurrencies; the results are ranked under the constraints and objectives.
 */
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseModelConfig, type ModelConfig } from '../../config/index.js';
import type { LevelResult } from '../perf/measure.js';
import { parsePerfFlags } from '../perf/options.js';
import { PerfError, runPerf } from '../perf/run.js';
import { applyCandidate, bruteList, candidateAt, candidateKey, configText, describe, neighbours, searchSpace, type Candidate } from './candidates.js';
import type { AnalyzeOptions } from './options.js';
import { best, gain, p99Ms, paretoSet, passes, violation, type Constraints } from './ranking.js';
import { CandidateFailed, startServer } from './serve-process.js';
import { durationText, TimeLeft } from './time-left.js';

export class AnalyzeError extends Error {}

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

export interface AnalyzeResult {
  readonly model: string;
  readonly base: ModelConfig;
  readonly configs: ConfigResult[];
  readonly baselineRuns: number[];
  readonly chosen: ConfigResult | undefined;
  readonly chosenPasses: boolean;
  readonly pareto: ReadonlyArray<{ readonly config: ConfigResult; readonly result: LevelResult }>;
  readonly constraints: Constraints;
  readonly interrupted: boolean;
}

export interface AnalyzeIo {
  out(text: string): void;
  progress(text: string): void;
  readonly signal?: AbortSignal;
}

function readBase(o: AnalyzeOptions): ModelConfig {
  const dir = join(o.repository, o.model);
  if (!existsSync(o.repository) || !statSync(o.repository).isDirectory()) throw new AnalyzeError(`--model-repository ${o.repository} is not a folder`);
  if (!existsSync(dir)) throw new AnalyzeError(`no model '${o.model}' in ${o.repository} (it has: ${readdirSync(o.repository).join(', ') || 'nothing'})`);
  const file = join(dir, 'config.pbtxt');
  if (!existsSync(file)) throw new AnalyzeError(`model '${o.model}' has no config.pbtxt to start the search from`);
  try {
    return parseModelConfig(readFileSync(file, 'utf8'), file);
  } catch (e) {
    throw new AnalyzeError(`${file}: ${(e as Error).message}`);
  }
}

function prepareOutput(o: AnalyzeOptions): void {
  if (existsSync(o.outputRepository)) {
    if (!o.overrideOutput) throw new AnalyzeError(`the output model repository ${o.outputRepository} exists: remove it or pass --override-output-model-repository`);
    rmSync(o.outputRepository, { recursive: true, force: true });
  }
  mkdirSync(o.outputRepository, { recursive: true });
}

/** The model's folder copied under a new name with the candidate's config. */
function writeCandidate(o: AnalyzeOptions, name: string, cfg: ModelConfig): void {
  const dest = join(o.outputRepository, name);
  rmSync(dest, { recursive: true, force: true });
  cpSync(join(o.repository, o.model), dest, { recursive: true, filter: (src) => !src.endsWith(`${o.model}/config.pbtxt`) });
  writeFileSync(join(dest, 'config.pbtxt'), configText(cfg));
}

export async function runAnalyze(o: AnalyzeOptions, io: AnalyzeIo): Promise<AnalyzeResult> {
  const base = readBase(o);
  prepareOutput(o);
  const constraints: Constraints = { latencyBudgetMs: o.latencyBudgetMs, minThroughput: o.minThroughput };
  const configs: ConfigResult[] = [];
  const seen = new Set<string>();
  const started = Date.now();
  let counter = 0;
  let interrupted = false;
  const space = searchSpace(base, o);
  const planned = o.searchDisabled ? 1 : o.mode === 'brute' ? 1 + bruteList(space).length : Math.min(o.maxConfigs, 1 + bruteList(space).length);

  const left = new TimeLeft(started, planned + o.baselineRepeats - 1);
  let measuredConfigs = 0;
  const timeLeft = (): string => {
    const ms = left.at(Date.now(), measuredConfigs);
    return ms === undefined ? '' : ` · ${o.mode === 'quick' ? 'at most ' : ''}~${durationText(ms)} left`;
  };

  /** One config served and measured; every one, served or not, counts towards the time left. */
  async function measure(name: string, candidate: Candidate | undefined, cfg: ModelConfig, label: string): Promise<ConfigResult> {
    try {
      return await serveAndMeasure(name, candidate, cfg, label);
    } finally {
      measuredConfigs++;
    }
  }

  async function serveAndMeasure(name: string, candidate: Candidate | undefined, cfg: ModelConfig, label: string): Promise<ConfigResult> {
    const r: ConfigResult = { name, candidate, description: candidate ? describe(candidate) : 'starting config', config: cfg, measurements: [], error: undefined, best: undefined };
    writeCandidate(o, name, cfg);
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
      const perf = parsePerfFlags(args);
      const levels = o.concurrencies;
      const run = await runPerf(perf, {
        out: () => undefined,
        signal: io.signal,
        progress: (t) => t && io.progress(`[${label} ${name}: ${r.description}] ${t.replace(/ · at least .*$/, '')}${timeLeft()}`),
      }, {
        levels,
        stopAfter: (rs) => {
          const last = rs.at(-1)!;
          if (o.latencyBudgetMs !== undefined && p99Ms(last) > o.latencyBudgetMs) return true;
          if (o.explicitConcurrency || rs.length < 4) return false;
          // A plateau: the last three levels each gained under 5% over the best before them. Two were not enough:
          // on a busy machine a dip at two levels stopped sweeps that rose again further on.
          const peak = (n: number): number => Math.max(...rs.slice(0, n).map((x) => x.throughput));
          return [1, 2, 3].every((k) => rs.at(-k)!.throughput < peak(rs.length - k) * 1.05);
        },
      });
      r.measurements.push(...run.results);
      r.best = best(r.measurements, (x) => x, constraints, o.objectives);
      return r;
    } catch (e) {
      return { ...r, error: e instanceof PerfError ? e.message : String((e as Error).message ?? e) };
    } finally {
      await server.stop();
    }
  }

  const record = (r: ConfigResult): void => {
    configs.push(r);
    const b = r.best;
    io.out(r.error ? `  ${r.name} (${r.description}): skipped: ${r.error}\n` : b ? `  ${r.name} (${r.description}): ${pointText(b)}${passes(b, constraints) ? '' : ' (misses the constraints)'}${unstableText(r)}\n` : `  ${r.name}: interrupted\n`);
  };

  io.out(`Profiling '${o.model}' in ${o.repository}: ${o.searchDisabled ? 'its own config only' : `${o.mode} search over ${planned - 1} candidate configs`}, concurrencies ${o.concurrencies.join(', ')}\n`);
  const baseName = `${o.model}_config_default`;
  const baseCfg = structuredClone(base);
  baseCfg.name = baseName;
  const baselineRuns: number[] = [];
  for (let k = 0; k < o.baselineRepeats && !io.signal?.aborted; k++) {
    const r = await measure(baseName, undefined, baseCfg, `starting config${o.baselineRepeats > 1 ? ` run ${k + 1}/${o.baselineRepeats}` : ''}`);
    if (r.error) throw new AnalyzeError(`the starting config of '${o.model}' did not serve: ${r.error}`);
    if (r.best) baselineRuns.push(r.best.throughput);
    if (k === 0) record(r);
  }

  const evaluate = async (c: Candidate): Promise<ConfigResult | undefined> => {
    const key = candidateKey(c);
    if (seen.has(key) || io.signal?.aborted) return configs.find((x) => x.candidate && candidateKey(x.candidate) === key);
    seen.add(key);
    const name = `${o.model}_config_${counter++}`;
    const r = await measure(name, c, applyCandidate(base, c, name), `config ${configs.length + 1}/${planned}`);
    record(r);
    return r;
  };

  if (!o.searchDisabled) {
    if (o.mode === 'brute') {
      for (const c of bruteList(space)) {
        if (io.signal?.aborted) break;
        await evaluate(c);
      }
    } else {
      await quickSearch(space, evaluate, constraints, o, () => configs.length >= o.maxConfigs || io.signal?.aborted === true);
    }
  }
  interrupted = io.signal?.aborted === true;

  const measured = configs.filter((c) => c.best);
  const chosen = best(measured, (c) => c.best!, constraints, o.objectives);
  const points = configs.flatMap((config) => config.measurements.map((result) => ({ config, result })));
  return {
    model: o.model,
    base,
    configs,
    baselineRuns,
    chosen,
    chosenPasses: chosen !== undefined && passes(chosen.best!, constraints),
    pareto: paretoSet(points, (p) => p.result),
    constraints,
    interrupted,
  };
}

/** A measurement point as the log and the summary print it; `(not stable)` when its windows never agreed. */
export function pointText(b: LevelResult): string {
  return `${b.throughput.toFixed(1)} infer/sec at concurrency ${b.value}, p99 ${p99Ms(b).toFixed(2)} ms${b.stable ? '' : ' (not stable)'}`;
}

/** The concurrencies of a config whose windows never agreed, beside its best point's own mark. */
function unstableText(r: ConfigResult): string {
  const others = r.measurements.filter((m) => !m.stable && m !== r.best).map((m) => m.value);
  return others.length ? `; not stable at concurrency ${others.join(', ')}` : '';
}

/** Hill-climbing from the smallest point: move to the best neighbour while it beats the current one. */
async function quickSearch(
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
