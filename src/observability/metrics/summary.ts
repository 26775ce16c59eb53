/**
 * One summary series bound to one model version's labels: quantiles over a sliding window, with the count
 * and sum since load.
 *
 * Triton's summaries (prometheus-cpp) keep CKMS streams per age bucket. Here each age bucket is a fixed array
 * of logarithmic buckets (the DDSketch layout): a value lands in bucket ceil(log_gamma(v)), so recording is a
 * logarithm and an increment, and every quantile read back is within RELATIVE_ACCURACY of a value that was
 * observed at that rank. The window is AGE_BUCKETS buckets wide; rotate() (one timer for all summaries)
 * clears the oldest, as prometheus-cpp's time window does after max_age / age_buckets.
 *
 *   ring:  [ b0 b1 b2 b3 b4 ]   observe() adds to ring[current]; rotate() moves current on and clears it;
 *                                quantiles merge all of them (the last max_age seconds, give or take one step).
 */
const RELATIVE_ACCURACY = 0.01;
const GAMMA = (1 + RELATIVE_ACCURACY) / (1 - RELATIVE_ACCURACY);
const LOG_GAMMA = Math.log(GAMMA);
/** Buckets up to 2^40 µs (about 12 days): longer values share the last bucket. */
const SLOTS = Math.ceil(40 * Math.LN2 / LOG_GAMMA) + 1;

/** prometheus-cpp's defaults: a 60 s window in 5 steps. */
export const SUMMARY_MAX_AGE_MS = 60_000;
export const AGE_BUCKETS = 5;

export class BoundSummary {
  private readonly ring: Uint32Array[] = [];
  /** Per age bucket, the values below 1 (integer 0 µs, as Triton truncates). */
  private readonly zeros = new Uint32Array(AGE_BUCKETS);
  private current = 0;
  sum = 0;
  count = 0;

  constructor(readonly quantiles: readonly number[]) {
    for (let i = 0; i < AGE_BUCKETS; i++) this.ring.push(new Uint32Array(SLOTS));
  }

  observe(v: number): void {
    this.sum += v;
    this.count++;
    if (v < 1) {
      this.zeros[this.current]!++;
      return;
    }
    const k = Math.ceil(Math.log(v) / LOG_GAMMA);
    this.ring[this.current]![k < SLOTS ? k : SLOTS - 1]!++;
  }

  /** Starts a new age bucket, dropping the oldest. */
  rotate(): void {
    this.current = (this.current + 1) % AGE_BUCKETS;
    this.ring[this.current]!.fill(0);
    this.zeros[this.current] = 0;
  }

  /** The window's value at each quantile, NaN when the window is empty (as prometheus-cpp reports). */
  values(): number[] {
    const merged = new Float64Array(SLOTS);
    let zeros = 0;
    for (let a = 0; a < AGE_BUCKETS; a++) {
      zeros += this.zeros[a]!;
      const r = this.ring[a]!;
      for (let i = 0; i < SLOTS; i++) merged[i]! += r[i]!;
    }
    let n = zeros;
    for (let i = 0; i < SLOTS; i++) n += merged[i]!;
    return this.quantiles.map((q) => (n === 0 ? NaN : valueAtRank(merged, zeros, Math.floor(q * (n - 1)))));
  }
}

/** The value of the `rank`-th smallest observation (0-based), to within the relative accuracy. */
function valueAtRank(merged: Float64Array, zeros: number, rank: number): number {
  if (rank < zeros) return 0;
  let seen = zeros;
  for (let i = 0; i < merged.length; i++) {
    seen += merged[i]!;
    if (seen > rank) return bucketValue(i);
  }
  return bucketValue(merged.length - 1);
}

/** The middle of bucket `i`, rounded: the values observed are whole microseconds. */
function bucketValue(i: number): number {
  return Math.round((2 * Math.pow(GAMMA, i)) / (GAMMA + 1));
}
