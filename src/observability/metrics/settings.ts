/**
 * --metrics-config, read as tritonserver reads it (core MetricReporterConfig): which latency metric types a
 * model version reports and the quantiles its summaries track.
 */

export interface Quantile {
  readonly quantile: number;
  /** The rank error Triton allows this quantile; kept for the record, the summary's own accuracy is finer. */
  readonly error: number;
}

export interface MetricsSettings {
  /** counter_latencies: cumulative duration counters (default on; only the literal `false` turns them off). */
  readonly counterLatencies: boolean;
  /** histogram_latencies: nv_inference_first_response_histogram_ms for decoupled models (literal `true`). */
  readonly histogramLatencies: boolean;
  /** summary_latencies: the *_summary_us families (literal `true`). */
  readonly summaryLatencies: boolean;
  readonly summaryQuantiles: readonly Quantile[];
}

/** Triton's default summary quantiles, `quantile:error`. */
export const DEFAULT_QUANTILES: readonly Quantile[] = [
  { quantile: 0.5, error: 0.05 },
  { quantile: 0.9, error: 0.01 },
  { quantile: 0.95, error: 0.001 },
  { quantile: 0.99, error: 0.001 },
  { quantile: 0.999, error: 0.001 },
];

export const DEFAULT_METRICS_SETTINGS: MetricsSettings = {
  counterLatencies: true,
  histogramLatencies: false,
  summaryLatencies: false,
  summaryQuantiles: DEFAULT_QUANTILES,
};

/**
 * Settings from `<setting>=<value>` entries, later entries winning. As in Triton, unknown settings are ignored
 * and a malformed quantile pair is skipped with a warning; when no pair is valid the defaults stay.
 */
export function parseMetricsConfig(entries: readonly string[], warn: (message: string) => void = () => undefined): MetricsSettings {
  let s: MetricsSettings = DEFAULT_METRICS_SETTINGS;
  for (const entry of entries) {
    const eq = entry.indexOf('=');
    if (eq < 0) continue;
    const key = entry.slice(0, eq);
    const value = entry.slice(eq + 1);
    if (key === 'counter_latencies') s = { ...s, counterLatencies: value !== 'false' };
    else if (key === 'histogram_latencies') s = { ...s, histogramLatencies: value === 'true' };
    else if (key === 'summary_latencies') s = { ...s, summaryLatencies: value === 'true' };
    else if (key === 'summary_quantiles') {
      const q = parseQuantiles(value, warn);
      if (q.length > 0) s = { ...s, summaryQuantiles: q };
    }
  }
  return s;
}

/** `q:e,q:e,...` (Triton's format); a quantile outside [0, 1] is refused as the Prometheus client refuses it. */
function parseQuantiles(text: string, warn: (message: string) => void): Quantile[] {
  const out: Quantile[] = [];
  for (const pair of text.replace(/^"|"$/g, '').split(',')) {
    const colon = pair.indexOf(':');
    const quantile = Number(pair.slice(0, colon));
    const error = Number(pair.slice(colon + 1));
    if (colon < 0 || pair.slice(0, colon).trim() === '' || !Number.isFinite(quantile) || !Number.isFinite(error) || quantile < 0 || quantile > 1) {
      warn(`invalid summary_quantiles option: [${pair}]. Expected format is <quantile>:<error>`);
      continue;
    }
    out.push({ quantile, error });
  }
  return out;
}
