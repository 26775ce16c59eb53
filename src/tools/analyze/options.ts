/** `nereid analyze` flags: Model Analyzer's `profile` names and defaults, with Nereid's few additions. */
import { boolFlag, choiceFlag, intFlag, last, numFlag, parseArgv, UsageError, usageText, type FlagSpec } from '../argv.js';

export const ANALYZE_FLAGS: readonly FlagSpec[] = [
  { name: 'model-repository', short: 'm', takes: 'value', arg: '<dir>', help: 'The repository holding the model to profile (required).' },
  { name: 'profile-models', takes: 'value', arg: '<name>', help: 'The model to profile (required; one model).' },
  { name: 'model-version', takes: 'value', arg: '<version>', help: 'The version to measure; the server picks when omitted (Nereid).' },
  { name: 'output-model-repository-path', takes: 'value', arg: '<dir>', help: 'Where the candidate configs are written. Default ./output_model_repository.' },
  { name: 'override-output-model-repository', takes: 'optional', help: 'Replace the output model repository if it exists.' },
  { name: 'export-path', short: 'e', takes: 'value', arg: '<dir>', help: 'Where results, the report and the best config go. Default the current folder.' },
  { name: 'run-config-search-mode', takes: 'value', arg: 'brute|quick', help: 'brute: every combination; quick: hill-climbing from the smallest. Default brute.' },
  { name: 'run-config-search-disable', takes: 'optional', help: 'Measure only the model\'s own config.' },
  { name: 'run-config-search-min-concurrency', takes: 'value', arg: '<n>', help: 'Default 1.' },
  { name: 'run-config-search-max-concurrency', takes: 'value', arg: '<n>', help: 'Default 64.' },
  { name: 'run-config-search-min-model-batch-size', takes: 'value', arg: '<n>', help: 'Default 1.' },
  { name: 'run-config-search-max-model-batch-size', takes: 'value', arg: '<n>', help: 'Default 128.' },
  { name: 'run-config-search-min-instance-count', takes: 'value', arg: '<n>', help: 'Default 1.' },
  { name: 'run-config-search-max-instance-count', takes: 'value', arg: '<n>', help: 'Default 5.' },
  { name: 'run-config-search-max-queue-delays', takes: 'value', arg: '<us,...>', help: 'max_queue_delay_microseconds values to try with dynamic batching. Default 0 (Nereid).' },
  { name: 'run-config-search-preferred-batch-size', takes: 'optional', help: 'Also try preferred_batch_size = max_batch_size (Nereid).' },
  { name: 'run-config-search-intra-op-threads', takes: 'value', arg: '<n,...>', help: 'ONNX Runtime intra_op_thread_count values to try (Nereid).' },
  { name: 'run-config-search-inter-op-threads', takes: 'value', arg: '<n,...>', help: 'ONNX Runtime inter_op_thread_count values to try (Nereid).' },
  { name: 'run-config-search-max-configs', takes: 'value', arg: '<n>', help: 'Stop quick search after this many configs. Default 16 (Nereid).' },
  { name: 'concurrency', takes: 'value', arg: '<n,...>', help: 'Concurrencies to measure instead of the automatic sweep.' },
  { name: 'batch-sizes', takes: 'value', arg: '<n>', help: 'Batch size of each request. Default 1.' },
  { name: 'latency-budget', takes: 'value', arg: '<ms>', help: 'Constraint: p99 latency at most this.' },
  { name: 'min-throughput', takes: 'value', arg: '<infer/sec>', help: 'Constraint: throughput at least this.' },
  { name: 'objectives', takes: 'value', arg: 'name[:weight],...', help: 'perf_throughput, perf_latency_p99 (weighted). Default perf_throughput.' },
  { name: 'client-protocol', takes: 'value', arg: 'http|grpc', help: 'Protocol of the measurements. Default http.' },
  { name: 'measurement-interval', takes: 'value', arg: '<ms>', help: 'Window length of each measurement. Default 1000 (Nereid).' },
  { name: 'max-trials', takes: 'value', arg: '<n>', help: 'Windows tried for stability per concurrency. Default 10 (Nereid).' },
  { name: 'warmup-request-count', takes: 'value', arg: '<n>', help: 'Requests sent to each fresh server before measuring it. Default 2000 (Nereid).' },
  { name: 'baseline-repeats', takes: 'value', arg: '<n>', help: 'Measure the starting config this many times (fresh server each): a gain within their spread is no win. Default 2 (Nereid).' },
  { name: 'help', short: 'h', takes: 'optional', help: 'Print this text.' },
];

export const ANALYZE_USAGE = usageText("Usage: nereid analyze --model-repository <dir> --profile-models <model> [flags]   (Model Analyzer profile's flags)", ANALYZE_FLAGS);

export type Objective = 'perf_throughput' | 'perf_latency_p99';

export interface AnalyzeOptions {
  readonly help: boolean;
  readonly repository: string;
  readonly model: string;
  readonly version: string;
  readonly outputRepository: string;
  readonly overrideOutput: boolean;
  readonly exportPath: string;
  readonly mode: 'brute' | 'quick';
  readonly searchDisabled: boolean;
  readonly concurrencies: number[];
  readonly explicitConcurrency: boolean;
  readonly batchSizes: readonly number[];
  readonly instanceCounts: readonly number[];
  readonly queueDelaysUs: readonly number[];
  readonly preferred: boolean;
  readonly intraThreads: readonly number[];
  readonly interThreads: readonly number[];
  readonly maxConfigs: number;
  readonly requestBatch: number;
  readonly latencyBudgetMs: number | undefined;
  readonly minThroughput: number | undefined;
  readonly objectives: ReadonlyMap<Objective, number>;
  readonly protocol: 'http' | 'grpc';
  readonly intervalMs: number;
  readonly maxTrials: number;
  readonly baselineRepeats: number;
  readonly warmupRequests: number;
}

const intList = (f: ReturnType<typeof parseArgv>, name: string): number[] | undefined => {
  const v = last(f, name);
  if (v === undefined) return undefined;
  const xs = v.split(',').map((x) => x.trim());
  if (xs.some((x) => !/^\d+$/.test(x))) throw new UsageError(`--${name} takes a comma-separated list of integers, got '${v}'`);
  return xs.map(Number);
};

const powersOfTwo = (lo: number, hi: number): number[] => {
  const out: number[] = [];
  for (let v = 1; v <= hi; v *= 2) if (v >= lo) out.push(v);
  if (out.at(-1) !== hi) out.push(hi);
  return out;
};

export function parseAnalyzeFlags(argv: readonly string[]): AnalyzeOptions {
  const f = parseArgv(argv, ANALYZE_FLAGS);
  const help = boolFlag(f, 'help');
  const repository = last(f, 'model-repository') ?? '';
  const model = last(f, 'profile-models') ?? '';
  if (!help && repository === '') throw new UsageError('--model-repository is required');
  if (!help && model === '') throw new UsageError('--profile-models is required');
  if (model.includes(',')) throw new UsageError('--profile-models: one model at a time');
  const minC = intFlag(f, 'run-config-search-min-concurrency', 1, 1);
  const maxC = intFlag(f, 'run-config-search-max-concurrency', 64, 1);
  const minB = intFlag(f, 'run-config-search-min-model-batch-size', 1, 1);
  const maxB = intFlag(f, 'run-config-search-max-model-batch-size', 128, 1);
  const minI = intFlag(f, 'run-config-search-min-instance-count', 1, 1);
  const maxI = intFlag(f, 'run-config-search-max-instance-count', 5, 1);
  for (const [lo, hi, n] of [[minC, maxC, 'concurrency'], [minB, maxB, 'model-batch-size'], [minI, maxI, 'instance-count']] as const) {
    if (hi < lo) throw new UsageError(`--run-config-search-max-${n} (${hi}) is below --run-config-search-min-${n} (${lo})`);
  }
  const objectives = new Map<Objective, number>();
  for (const part of (last(f, 'objectives') ?? 'perf_throughput').split(',')) {
    const [name, w = '1'] = part.split(':').map((s) => s.trim());
    if (name !== 'perf_throughput' && name !== 'perf_latency_p99') throw new UsageError(`--objectives: '${name}' is not one of perf_throughput, perf_latency_p99`);
    if (!/^\d+(\.\d+)?$/.test(w) || Number(w) <= 0) throw new UsageError(`--objectives: weight '${w}' of ${name} must be a positive number`);
    objectives.set(name, Number(w));
  }
  const explicit = intList(f, 'concurrency');
  return {
    help,
    repository,
    model,
    version: last(f, 'model-version') ?? '',
    outputRepository: last(f, 'output-model-repository-path') ?? 'output_model_repository',
    overrideOutput: boolFlag(f, 'override-output-model-repository'),
    exportPath: last(f, 'export-path') ?? '.',
    mode: choiceFlag(f, 'run-config-search-mode', ['brute', 'quick'] as const, 'brute'),
    searchDisabled: boolFlag(f, 'run-config-search-disable'),
    concurrencies: explicit ?? powersOfTwo(minC, maxC),
    explicitConcurrency: explicit !== undefined,
    batchSizes: powersOfTwo(minB, maxB),
    instanceCounts: Array.from({ length: maxI - minI + 1 }, (_, k) => minI + k),
    queueDelaysUs: intList(f, 'run-config-search-max-queue-delays') ?? [0],
    preferred: boolFlag(f, 'run-config-search-preferred-batch-size'),
    intraThreads: intList(f, 'run-config-search-intra-op-threads') ?? [0],
    interThreads: intList(f, 'run-config-search-inter-op-threads') ?? [0],
    maxConfigs: intFlag(f, 'run-config-search-max-configs', 16, 1),
    requestBatch: intFlag(f, 'batch-sizes', 1, 1),
    latencyBudgetMs: numFlag(f, 'latency-budget', undefined, 0),
    minThroughput: numFlag(f, 'min-throughput', undefined, 0),
    objectives,
    protocol: choiceFlag(f, 'client-protocol', ['http', 'grpc'] as const, 'http'),
    intervalMs: intFlag(f, 'measurement-interval', 1000, 1),
    maxTrials: intFlag(f, 'max-trials', 10, 3),
    baselineRepeats: intFlag(f, 'baseline-repeats', 2, 1),
    warmupRequests: intFlag(f, 'warmup-request-count', 2000, 0),
  };
}
