/**
 * `nereid analyze`: Model Analyzer's profile on one model. Each candidate config is written into the output model
 * repository as a copy of the model, served by its own `nereid serve` process, and measured by the perf load
 * generator over a sweep of concurrencies; the results are ranked under the constraints and objectives.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseModelConfig, type ModelConfig } from '../../config/index.js';
import type { LevelResult } from '../perf/measure.js';
import { applyCandidate, bruteList, candidateKey, searchSpace, type Candidate } from './candidates.js';
import { measureConfig, type ConfigResult, type ConfigToMeasure } from './measure-config.js';
import type { AnalyzeOptions } from './options.js';
import { quickSearch } from './quick-search.js';
import { best, p99Ms, paretoSet, passes, type Constraints } from './ranking.js';
import { durationText, TimeLeft } from './time-left.js';

export class AnalyzeError extends Error {}

export type { ConfigResult } from './measure-config.js';

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

type Measure = (c: ConfigToMeasure) => Promise<ConfigResult>;

/** The model's own config, measured --baseline-repeats times; the first run is recorded. */
async function measureBaseline(o: AnalyzeOptions, io: AnalyzeIo, base: ModelConfig, measure: Measure, record: (r: ConfigResult) => void): Promise<number[]> {
  const name = `${o.model}_config_default`;
  const config = structuredClone(base);
  config.name = name;
  const runs: number[] = [];
  for (let k = 0; k < o.baselineRepeats && !io.signal?.aborted; k++) {
    const r = await measure({ name, candidate: undefined, config, label: `starting config${o.baselineRepeats > 1 ? ` run ${k + 1}/${o.baselineRepeats}` : ''}` });
    if (r.error) throw new AnalyzeError(`the starting config of '${o.model}' did not serve: ${r.error}`);
    if (r.best) runs.push(r.best.throughput);
    if (k === 0) record(r);
  }
  return runs;
}

/** The ranking of what was measured: the chosen config and the Pareto set of every point. */
function rank(o: AnalyzeOptions, configs: ConfigResult[], constraints: Constraints): Pick<AnalyzeResult, 'chosen' | 'chosenPasses' | 'pareto'> {
  const chosen = best(configs.filter((c) => c.best), (c) => c.best!, constraints, o.objectives);
  const points = configs.flatMap((config) => config.measurements.map((result) => ({ config, result })));
  return { chosen, chosenPasses: chosen !== undefined && passes(chosen.best!, constraints), pareto: paretoSet(points, (p) => p.result) };
}

export async function runAnalyze(o: AnalyzeOptions, io: AnalyzeIo): Promise<AnalyzeResult> {
  const base = readBase(o);
  prepareOutput(o);
  const constraints: Constraints = { latencyBudgetMs: o.latencyBudgetMs, minThroughput: o.minThroughput };
  const configs: ConfigResult[] = [];
  const seen = new Set<string>();
  const started = Date.now();
  let counter = 0;
  const space = searchSpace(base, o);
  const planned = o.searchDisabled ? 1 : o.mode === 'brute' ? 1 + bruteList(space).length : Math.min(o.maxConfigs, 1 + bruteList(space).length);

  const left = new TimeLeft(started, planned + o.baselineRepeats - 1);
  let measuredConfigs = 0;
  const timeLeft = (): string => {
    const ms = left.at(Date.now(), measuredConfigs);
    return ms === undefined ? '' : ` · ${o.mode === 'quick' ? 'at most ' : ''}~${durationText(ms)} left`;
  };
  /** One config served and measured; every one, served or not, counts towards the time left. */
  const measure: Measure = async (c) => {
    try {
      return await measureConfig(o, io, c, constraints, timeLeft);
    } finally {
      measuredConfigs++;
    }
  };
  const record = (r: ConfigResult): void => {
    configs.push(r);
    const b = r.best;
    io.out(r.error ? `  ${r.name} (${r.description}): skipped: ${r.error}\n` : b ? `  ${r.name} (${r.description}): ${pointText(b)}${passes(b, constraints) ? '' : ' (misses the constraints)'}${unstableText(r)}\n` : `  ${r.name}: interrupted\n`);
  };

  io.out(`Profiling '${o.model}' in ${o.repository}: ${o.searchDisabled ? 'its own config only' : `${o.mode} search over ${planned - 1} candidate configs`}, concurrencies ${o.concurrencies.join(', ')}\n`);
  const baselineRuns = await measureBaseline(o, io, base, measure, record);

  const evaluate = async (c: Candidate): Promise<ConfigResult | undefined> => {
    const key = candidateKey(c);
    if (seen.has(key) || io.signal?.aborted) return configs.find((x) => x.candidate && candidateKey(x.candidate) === key);
    seen.add(key);
    const name = `${o.model}_config_${counter++}`;
    const r = await measure({ name, candidate: c, config: applyCandidate(base, c, name), label: `config ${configs.length + 1}/${planned}` });
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
  const interrupted = io.signal?.aborted === true;
  return { model: o.model, base, configs, baselineRuns, ...rank(o, configs, constraints), constraints, interrupted };
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
