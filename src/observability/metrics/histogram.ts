/**
 * One histogram series bound to one model version's labels: observing is a bucket search over a handful of
 * bounds and three additions, with no label lookup (the families read these at scrape time).
 */
export class BoundHistogram {
  /** Per-bucket counts, not cumulative; the last slot is +Inf. */
  private readonly counts: Float64Array;
  sum = 0;
  count = 0;

  /** `bounds` ascending, as Triton requires of histogram_options.buckets. */
  constructor(readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(v: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && v > b[i]!) i++;
    this.counts[i]!++;
    this.sum += v;
    this.count++;
  }

  /** Cumulative counts, one per bound then +Inf, as the exposition format wants them. */
  cumulative(): number[] {
    const out: number[] = [];
    let acc = 0;
    for (const c of this.counts) out.push((acc += c));
    return out;
  }
}
