/**
 * Latencies in microseconds, recorded into HDR histograms allocated before a measurement starts: recording is an
 * index computation and an increment, whatever the rate, and windows merge without keeping every sample.
 */
import * as hdr from 'hdr-histogram-js';

/** One hour in microseconds: anything slower is clamped rather than growing the histogram mid-measurement. */
const HIGHEST_US = 3_600_000_000;

export type LatencyHistogram = hdr.Histogram;

export function newHistogram(): LatencyHistogram {
  return hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: HIGHEST_US,
    numberOfSignificantValueDigits: 3,
    bitBucketSize: 32,
    autoResize: false,
  });
}

export function recordUs(h: LatencyHistogram, us: number): void {
  h.recordValue(us < 1 ? 1 : us > HIGHEST_US ? HIGHEST_US : Math.round(us));
}

export interface LatencySummary {
  readonly count: number;
  readonly meanUs: number;
  readonly stdUs: number;
  readonly p50: number;
  readonly p90: number;
  readonly p95: number;
  readonly p99: number;
  readonly minUs: number;
  readonly maxUs: number;
  /** The value of --percentile when one was asked for. */
  readonly chosen: number | undefined;
}

export function summarize(h: LatencyHistogram, percentile?: number): LatencySummary {
  const n = h.totalCount;
  const at = (p: number): number => (n === 0 ? 0 : h.getValueAtPercentile(p));
  return {
    count: n,
    meanUs: n === 0 ? 0 : h.mean,
    stdUs: n === 0 ? 0 : h.stdDeviation,
    p50: at(50),
    p90: at(90),
    p95: at(95),
    p99: at(99),
    minUs: n === 0 ? 0 : h.minNonZeroValue,
    maxUs: n === 0 ? 0 : h.maxValue,
    chosen: percentile === undefined ? undefined : at(percentile),
  };
}

export function merged(list: readonly LatencyHistogram[]): LatencyHistogram {
  const out = newHistogram();
  for (const h of list) out.add(h);
  return out;
}
