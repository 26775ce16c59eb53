import type { Metric, Registry } from 'prom-client';
import type { FailureReason, ModelStatistics } from '../statistics.js';
import type { BoundSummary } from './summary.js';
import { sortedLabels, type Labels, type MetricModelReporter, type Summaries } from './reporter.js';

/** What a family reads of one loaded model version at scrape time. */
export interface ScrapedVersion {
  readonly stats: ModelStatistics;
  readonly reporter: MetricModelReporter;
  /** Requests accepted and not yet executing. */
  readonly waiting: number;
  /** Requests accepted and not yet answered (queued or executing). */
  readonly inflight: number;
  /** Instances hung past the model's execute timeout. */
  readonly hung: number;
  /** The memory its load took, as measured then (undefined: not measured). */
  readonly memoryBytes: number | undefined;
}

export interface Sample {
  readonly value: number;
  readonly labels: Labels | Readonly<Record<string, string | number>>;
  /** For histogram and summary parts: `<name>_bucket`, `<name>_sum`, `<name>_count`. */
  readonly metricName?: string;
}

export type FamilyType = 'counter' | 'gauge' | 'histogram' | 'summary';

/**
 * A metric family whose samples are computed when scraped, in the shape prom-client's Registry reads
 * (`name`, `help`, `type`, `get()`), so it formats them and an application can merge Nereid's registry with
 * its own. Per-version families read the statistics objects directly: a request costs nothing here.
 */
export class ScrapeFamily {
  readonly aggregator = 'sum';

  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: FamilyType,
    /** The samples now; a promise for families that ask an engine (see engineLoadFamilies). */
    private readonly read: () => Sample[] | Promise<Sample[]>,
  ) {}

  async get(): Promise<{ name: string; help: string; type: FamilyType; aggregator: string; values: Sample[] }> {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: await this.read() };
  }

  /** Registry.resetMetrics() calls this; the values belong to the statistics, which are not reset. */
  reset(): void {}
}

/** Adds a family to a registry: the Registry takes any object of its shape, though its type names only its own classes. */
export function registerFamily(registry: Registry, family: ScrapeFamily): void {
  registry.registerMetric(family as unknown as Metric);
}

type Versions = () => ScrapedVersion[];
const us = (ns: number): number => Math.floor(ns / 1000);
const REASONS: readonly FailureReason[] = ['REJECTED', 'CANCELED', 'BACKEND', 'OTHER'];

/** A family with one sample per version. */
function perVersion(versions: Versions, name: string, help: string, type: FamilyType, value: (v: ScrapedVersion) => number, only?: (v: ScrapedVersion) => boolean): ScrapeFamily {
  return new ScrapeFamily(name, help, type, () => {
    const out: Sample[] = [];
    for (const v of versions()) if (!only || only(v)) out.push({ value: value(v), labels: v.reporter.labels });
    return out;
  });
}

/** Triton's per-model counters and gauges, read from each version's statistics. */
export function inferenceFamilies(versions: Versions, counterLatencies: boolean): ScrapeFamily[] {
  const f = (name: string, help: string, type: FamilyType, value: (v: ScrapedVersion) => number) => perVersion(versions, name, help, type, value);
  const out = [
    f('nv_inference_request_success', 'Number of successful inference requests, all batch sizes', 'counter', (v) => v.stats.success.count),
    new ScrapeFamily('nv_inference_request_failure', 'Number of failed inference requests, all batch sizes', 'counter', () =>
      versions().flatMap((v) => REASONS.map((r) => ({ value: v.stats.failures[r], labels: v.reporter.failureLabels.get(r)! })))),
    f('nv_inference_count', 'Number of inferences performed (does not include cached requests)', 'counter', (v) => v.stats.inferenceCount),
    f('nv_inference_exec_count', 'Number of model executions performed (does not include cached requests)', 'counter', (v) => v.stats.executionCount),
  ];
  if (counterLatencies) {
    out.push(
      // As Triton: a cache miss's lookup and insert time is added to the request duration.
      f('nv_inference_request_duration_us', 'Cumulative inference request duration in microseconds (includes cached requests)', 'counter', (v) => us(v.stats.success.ns + v.stats.cacheMiss.ns)),
      f('nv_inference_queue_duration_us', 'Cumulative inference queuing duration in microseconds (includes cached requests)', 'counter', (v) => us(v.stats.queue.ns)),
      f('nv_inference_compute_input_duration_us', 'Cumulative compute input duration in microseconds (does not include cached requests)', 'counter', (v) => us(v.stats.computeInput.ns)),
      f('nv_inference_compute_infer_duration_us', 'Cumulative compute inference duration in microseconds (does not include cached requests)', 'counter', (v) => us(v.stats.computeInfer.ns)),
      f('nv_inference_compute_output_duration_us', 'Cumulative inference compute output duration in microseconds (does not include cached requests)', 'counter', (v) => us(v.stats.computeOutput.ns)),
    );
  }
  out.push(
    f('nv_inference_pending_request_count', 'Instantaneous number of pending requests awaiting execution per-model.', 'gauge', (v) => v.waiting),
    f('nv_model_load_duration_secs', 'Model load time in seconds', 'gauge', (v) => v.stats.loadNs / 1e9),
  );
  return out;
}

/** Triton's per-model cache counters: only for versions that use the response cache, and with counter latencies. */
export function cacheFamilies(versions: Versions): ScrapeFamily[] {
  const f = (name: string, help: string, value: (s: ModelStatistics) => number) => perVersion(versions, name, help, 'counter', (v) => value(v.stats), (v) => v.reporter.cached);
  return [
    f('nv_cache_num_hits_per_model', 'Number of cache hits per model', (s) => s.cacheHit.count),
    f('nv_cache_num_misses_per_model', 'Number of cache misses per model', (s) => s.cacheMiss.count),
    f('nv_cache_hit_duration_per_model', 'Total cache hit duration per model, in microseconds', (s) => us(s.cacheHit.ns)),
    f('nv_cache_miss_duration_per_model', 'Total cache miss (insert+lookup) duration per model, in microseconds', (s) => us(s.cacheMiss.ns)),
  ];
}

/** nv_inference_first_response_histogram_ms, for the versions that keep one (decoupled, histogram_latencies). */
export function histogramFamilies(versions: Versions): ScrapeFamily[] {
  const name = 'nv_inference_first_response_histogram_ms';
  return [new ScrapeFamily(name, 'Duration from request to first response in milliseconds', 'histogram', () => {
    const out: Sample[] = [];
    for (const v of versions()) {
      const h = v.reporter.firstResponseHistogram;
      if (h === null) continue;
      const labels = v.reporter.labels;
      const cumulative = h.cumulative();
      h.bounds.forEach((le, i) => out.push({ metricName: `${name}_bucket`, labels: { ...labels, le }, value: cumulative[i]! }));
      out.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: cumulative[h.bounds.length]! });
      out.push({ metricName: `${name}_sum`, labels, value: h.sum }, { metricName: `${name}_count`, labels, value: h.count });
    }
    return out;
  })];
}

const SUMMARIES: readonly [keyof Summaries, string, string][] = [
  ['request', 'nv_inference_request_summary_us', 'Summary of inference request duration in microseconds (includes cached requests)'],
  ['queue', 'nv_inference_queue_summary_us', 'Summary of inference queuing duration in microseconds (includes cached requests)'],
  ['computeInput', 'nv_inference_compute_input_summary_us', 'Cumulative compute input duration in microseconds (does not include cached requests)'],
  ['computeInfer', 'nv_inference_compute_infer_summary_us', 'Cumulative compute inference duration in microseconds (does not include cached requests)'],
  ['computeOutput', 'nv_inference_compute_output_summary_us', 'Cumulative inference compute output duration in microseconds (does not include cached requests)'],
  ['cacheHit', 'nv_cache_hit_summary_per_model', 'Summary of cache hit duration per model, in microseconds'],
  ['cacheMiss', 'nv_cache_miss_summary_per_model', 'Summary of cache miss (insert+lookup) duration per model, in microseconds'],
];

/** The *_summary_us families (summary_latencies=true): quantiles over the last minute, count and sum since load. */
export function summaryFamilies(versions: Versions): ScrapeFamily[] {
  return SUMMARIES.map(([key, name, help]) => new ScrapeFamily(name, help, 'summary', () => {
    const out: Sample[] = [];
    for (const v of versions()) {
      const s: BoundSummary | null | undefined = v.reporter.summaries?.[key];
      if (!s) continue;
      const labels = v.reporter.labels;
      const values = s.values();
      s.quantiles.forEach((quantile, i) => out.push({ labels: { ...labels, quantile }, value: values[i]! }));
      out.push({ metricName: `${name}_sum`, labels, value: s.sum }, { metricName: `${name}_count`, labels, value: s.count });
    }
    return out;
  }));
}

/** Token counters show for the versions that have reported tokens (text models), not for every model. */
const reportsTokens = (v: ScrapedVersion): boolean => v.stats.generatedTokens > 0 || v.stats.promptTokens > 0;

/** Nereid's own: requests in flight, hung instances, and each instance's share of the executions (nereid_instance_stats). */
export function nereidFamilies(versions: Versions): ScrapeFamily[] {
  const perInstance = (name: string, help: string, value: (i: ModelStatistics['instances'][number]) => number) =>
    new ScrapeFamily(name, help, 'counter', () => versions().flatMap((v) =>
      v.stats.instances.map((i) => ({ value: value(i), labels: sortedLabels({ ...v.reporter.labels, instance: i.name }) }))));
  return [
    perVersion(versions, 'nereid_inference_inflight_request_count', 'Instantaneous number of requests queued or executing per-model', 'gauge', (v) => v.inflight),
    perVersion(versions, 'nereid_model_hung_instance_count', 'Instantaneous number of instances per-model whose execution ran past the execute timeout and that are not serving again yet', 'gauge', (v) => v.hung),
    perInstance('nereid_instance_execution_count', 'Number of model executions performed by each instance', (i) => i.executionCount),
    perInstance('nereid_instance_inference_count', 'Number of inferences (batch rows) performed by each instance', (i) => i.inferenceCount),
    perInstance('nereid_instance_compute_infer_duration_us', 'Cumulative compute inference duration of each instance in microseconds', (i) => us(i.computeInfer.ns)),
    perVersion(versions, 'nereid_prompt_token_count', 'Number of prompt tokens text models read, as the models report them', 'counter', (v) => v.stats.promptTokens, reportsTokens),
    perVersion(versions, 'nereid_generated_token_count', 'Number of tokens text models generated, as the models report them', 'counter', (v) => v.stats.generatedTokens, reportsTokens),
    perVersion(versions, 'nereid_model_memory_bytes', 'Memory each loaded model version took at its load, in bytes (process RSS growth or its engine\'s report, plus memory outside the process)', 'gauge', (v) => v.memoryBytes ?? 0, (v) => v.memoryBytes !== undefined),
    new ScrapeFamily('nereid_route_request_count', 'Number of requests a routing model (router or weighted versions) sent to each target', 'counter', () =>
      versions().flatMap((v) => [...(v.stats.routes ?? [])].map(([target, n]) => ({ value: n, labels: sortedLabels({ ...v.reporter.labels, target }) })))),
  ];
}

/**
 * `nereid_model_eviction_count{model}` and `nereid_model_load_on_demand_count{model}`: per model name, kept
 * while the model is not loaded (an evicted model's count stays).
 */
export function modelLoadFamilies(counts: () => { evictions: ReadonlyMap<string, number>; onDemand: ReadonlyMap<string, number> }): ScrapeFamily[] {
  const f = (name: string, help: string, pick: (c: ReturnType<typeof counts>) => ReadonlyMap<string, number>) =>
    new ScrapeFamily(name, help, 'counter', () => [...pick(counts())].map(([model, value]) => ({ value, labels: { model } })));
  return [
    f('nereid_model_eviction_count', 'Number of times each model was unloaded to keep the loaded models within --model-memory-budget', (c) => c.evictions),
    f('nereid_model_load_on_demand_count', 'Number of loads of each model started by a request naming it (--model-load-on-demand)', (c) => c.onDemand),
  ];
}

/** `nereid_limit_refusal_count{limit}`: requests a server limit refused, one sample per limit that has fired. */
export function limitRefusalFamily(refusals: () => Iterable<[string, number]>): ScrapeFamily {
  return new ScrapeFamily('nereid_limit_refusal_count', 'Number of requests refused by each of the server\'s limits', 'counter', () =>
    [...refusals()].map(([limit, value]) => ({ value, labels: { limit } })));
}

/** What a text model's engine reports of its load, summed over the engines of one model version. */
export interface EngineGauges {
  /** Requests accepted and not generating yet: in Nereid's queue and in the engine's. */
  readonly waiting: number;
  /** Requests generating now. */
  readonly running: number;
  /** Share of the KV cache in use, 0 to 1; undefined when the engine does not report it. */
  readonly kvCacheUsage: number | undefined;
}

export interface ScrapedLoad {
  readonly labels: Labels;
  readonly gauges: EngineGauges;
}

/**
 * The three gauges of the Gateway API Inference Extension's model-server protocol (waiting requests, running
 * requests, KV-cache utilisation), per model version, under the names Triton's TensorRT-LLM backend gives them,
 * which the extension's endpoint picker reads from Triton: nv_trt_llm_request_metrics{request_type="waiting"
 * or "scheduled"} and nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="fraction"}. Only versions whose
 * backend reports an engine's load have samples; the KV-cache gauge only where the engine reports it.
 */
export function engineLoadFamilies(loads: () => Promise<ScrapedLoad[]>): ScrapeFamily[] {
  return [
    new ScrapeFamily('nv_trt_llm_request_metrics', 'Requests of text models by state: waiting (accepted, not generating yet) and scheduled (generating)', 'gauge', async () =>
      (await loads()).flatMap(({ labels, gauges }) => [
        { value: gauges.waiting, labels: sortedLabels({ ...labels, request_type: 'waiting' }) },
        { value: gauges.running, labels: sortedLabels({ ...labels, request_type: 'scheduled' }) },
      ])),
    new ScrapeFamily('nv_trt_llm_kv_cache_block_metrics', "Share of a text model's KV cache in use (kv_cache_block_type fraction, 0 to 1)", 'gauge', async () =>
      (await loads()).filter((l) => l.gauges.kvCacheUsage !== undefined)
        .map(({ labels, gauges }) => ({ value: gauges.kvCacheUsage!, labels: sortedLabels({ ...labels, kv_cache_block_type: 'fraction' }) }))),
  ];
}
