import type { FailureReason, LatencyObserver } from '../statistics.js';
import { BoundHistogram } from './histogram.js';
import { BoundSummary } from './summary.js';
import type { MetricsSettings } from './settings.js';

/** What metrics need to know of a model version when it loads. */
export interface VersionInfo {
  readonly name: string;
  readonly version: number;
  /** The config's metric_tags: each becomes a label `_<key>`. */
  readonly metricTags: Readonly<Record<string, string>>;
  readonly decoupled: boolean;
  /** response_cache { enable: true } with a server cache configured. */
  readonly cached: boolean;
  /** model_metrics histogram_options by family name. */
  readonly buckets: ReadonlyMap<string, readonly number[]>;
}

export type Labels = Readonly<Record<string, string>>;

export const FIRST_RESPONSE_HISTOGRAM = 'nv_inference_first_response_histogram_ms';
const DEFAULT_FIRST_RESPONSE_BUCKETS = [100, 500, 2000, 5000];
const REASONS: readonly FailureReason[] = ['REJECTED', 'CANCELED', 'BACKEND', 'OTHER'];

/** The summaries a version keeps, by Triton's internal names; a family reads the one it shows. */
export interface Summaries {
  readonly request: BoundSummary | null;
  readonly queue: BoundSummary;
  readonly computeInput: BoundSummary;
  readonly computeInfer: BoundSummary;
  readonly computeOutput: BoundSummary;
  readonly cacheHit: BoundSummary | null;
  readonly cacheMiss: BoundSummary | null;
}

/**
 * Everything metrics bind to one model version when it loads (Triton's MetricModelReporter): its label sets,
 * built once, and the histogram and summary series --metrics-config asks for, which it records as the
 * version's LatencyObserver. Cumulative counters are not here: families read them from the statistics.
 */
export class MetricModelReporter implements LatencyObserver {
  /** `_<tag>`…, model, version, in the sorted order Triton prints labels in. */
  readonly labels: Labels;
  readonly failureLabels: ReadonlyMap<FailureReason, Labels>;
  readonly cached: boolean;
  readonly firstResponseHistogram: BoundHistogram | null;
  readonly summaries: Summaries | null;

  constructor(info: VersionInfo, settings: MetricsSettings) {
    this.labels = sortedLabels({ ...tagLabels(info.metricTags), model: info.name, version: String(info.version) });
    this.failureLabels = new Map(REASONS.map((r) => [r, sortedLabels({ ...this.labels, reason: r })]));
    this.cached = info.cached;
    // Triton creates the first-response histogram for decoupled models only.
    this.firstResponseHistogram = settings.histogramLatencies && info.decoupled
      ? new BoundHistogram(info.buckets.get(FIRST_RESPONSE_HISTOGRAM) ?? DEFAULT_FIRST_RESPONSE_BUCKETS)
      : null;
    this.summaries = settings.summaryLatencies ? summaries(settings, info.cached) : null;
  }

  /** Whether any request needs to be observed one by one (else the version gets no observer). */
  get observes(): boolean {
    return this.firstResponseHistogram !== null || this.summaries !== null;
  }

  // Durations are reported as Triton reports them: whole microseconds (truncated), milliseconds for the histogram.
  success(requestNs: number, queueNs: number, inputNs: number, inferNs: number, outputNs: number): void {
    const s = this.summaries;
    if (s === null) return;
    s.request?.observe(Math.floor(requestNs / 1000));
    s.queue.observe(Math.floor(queueNs / 1000));
    s.computeInput.observe(Math.floor(inputNs / 1000));
    s.computeInfer.observe(Math.floor(inferNs / 1000));
    s.computeOutput.observe(Math.floor(outputNs / 1000));
  }

  cacheHit(requestNs: number, lookupNs: number): void {
    const s = this.summaries;
    if (s === null) return;
    s.request?.observe(Math.floor(requestNs / 1000));
    s.cacheHit?.observe(Math.floor(lookupNs / 1000));
  }

  cacheMiss(ns: number): void {
    this.summaries?.cacheMiss?.observe(Math.floor(ns / 1000));
  }

  firstResponse(ns: number): void {
    this.firstResponseHistogram?.observe(ns / 1e6);
  }

  /**
   * For the statistics JSON: the request and queue latency quantiles of the summaries' window (with
   * summary_latencies), and the first-response histogram's sum and count (with histogram_latencies).
   */
  statisticsJSON(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    const s = this.summaries;
    if (s !== null) {
      const quantiles = (x: BoundSummary | null): Record<string, number> | undefined => {
        if (x === null) return undefined;
        const values = x.values();
        // An empty window has no values (NaN, which JSON cannot hold).
        return Object.fromEntries(x.quantiles.flatMap((q, i) => (Number.isNaN(values[i]) ? [] : [[String(q), values[i]!]])));
      };
      out['nereid_latency_quantiles_us'] = { request: quantiles(s.request), queue: quantiles(s.queue) };
    }
    const h = this.firstResponseHistogram;
    if (h !== null) out['nereid_first_response_ms'] = { count: h.count, sum: h.sum };
    return out;
  }

  /** Advances every summary's time window one step. */
  rotate(): void {
    const s = this.summaries;
    if (s === null) return;
    for (const x of [s.request, s.queue, s.computeInput, s.computeInfer, s.computeOutput, s.cacheHit, s.cacheMiss]) x?.rotate();
  }
}

function summaries(settings: MetricsSettings, cached: boolean): Summaries {
  const q = settings.summaryQuantiles.map((x) => x.quantile);
  const make = (): BoundSummary => new BoundSummary(q);
  return {
    // As Triton: no request summary for a cached model, whose hits would make it misleading.
    request: cached ? null : make(),
    queue: make(),
    computeInput: make(),
    computeInfer: make(),
    computeOutput: make(),
    cacheHit: cached ? make() : null,
    cacheMiss: cached ? make() : null,
  };
}

function tagLabels(tags: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(tags)) out[`_${k}`] = v;
  return out;
}

/** prometheus-cpp keeps labels in a sorted map, so they print in key order. */
export function sortedLabels(labels: Record<string, string>): Labels {
  const out: Record<string, string> = {};
  for (const k of Object.keys(labels).sort()) out[k] = labels[k]!;
  return out;
}
