import type { Metric, Registry } from 'prom-client';
import { invalidArg } from '../../errors.js';
import { ScrapeFamily, type Sample } from './families.js';

export type CustomKind = 'counter' | 'gauge' | 'histogram';

/**
 * Metric families a model makes itself (pb_utils.MetricFamily in Python models), exported on the metrics
 * endpoint beside the server's. As in Triton, each metric of a family has a label set of its own and a
 * histogram its own buckets, which prom-client's labelled metrics cannot hold (their label names are fixed at
 * creation); so a family is a ScrapeFamily whose samples are read from its metrics at scrape time, and an
 * update is a plain number change.
 */
export class CustomMetricFamilies {
  private readonly families = new Map<string, CustomFamily>();

  /** Without a registry (metrics off) the values are kept, so models that record them still run, but not exported. */
  constructor(private readonly registry: Registry | undefined) {}

  /** The family of that name, made on first use; the same name with another kind is an error, as in Triton. */
  family(name: string, description: string, kind: CustomKind): CustomFamily {
    if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(name)) throw invalidArg(`invalid metric family name '${name}'`);
    const found = this.families.get(name);
    if (found) {
      if (found.kind !== kind) throw invalidArg(`metric family '${name}' already exists as a ${found.kind}`);
      return found;
    }
    if (this.registry?.getSingleMetric(name)) throw invalidArg(`metric family '${name}' is one of the server's own`);
    const family = new CustomFamily(kind);
    this.registry?.registerMetric(new ScrapeFamily(name, description, kind, () => family.samples(name)) as unknown as Metric);
    this.families.set(name, family);
    return family;
  }
}

export class CustomFamily {
  private readonly metrics = new Set<CustomMetricValue>();

  constructor(readonly kind: CustomKind) {}

  metric(labels: Readonly<Record<string, string>>, buckets?: readonly number[]): CustomMetricValue {
    if (this.kind === 'histogram') {
      if (!buckets || buckets.some((b, i) => i > 0 && b <= buckets[i - 1]!)) throw invalidArg('a histogram metric needs buckets in increasing order');
    }
    const m = new CustomMetricValue(this, { ...labels }, this.kind === 'histogram' ? [...buckets!] : undefined);
    this.metrics.add(m);
    return m;
  }

  /** @internal a metric leaves the endpoint when its model lets go of it. */
  remove(m: CustomMetricValue): void {
    this.metrics.delete(m);
  }

  samples(name: string): Sample[] {
    const out: Sample[] = [];
    for (const m of this.metrics) {
      if (!m.buckets) {
        out.push({ value: m.value(), labels: m.labels });
        continue;
      }
      let cumulative = 0;
      m.buckets.forEach((le, i) => {
        cumulative += m.counts[i]!;
        out.push({ value: cumulative, labels: { ...m.labels, le }, metricName: `${name}_bucket` });
      });
      out.push({ value: m.count, labels: { ...m.labels, le: '+Inf' }, metricName: `${name}_bucket` });
      out.push({ value: m.sum, labels: m.labels, metricName: `${name}_sum` });
      out.push({ value: m.count, labels: m.labels, metricName: `${name}_count` });
    }
    return out;
  }
}

export class CustomMetricValue {
  private current = 0;
  /** Histograms: observations per bucket (not cumulative), their sum and count. */
  readonly counts: number[];
  sum = 0;
  count = 0;

  constructor(private readonly family: CustomFamily, readonly labels: Record<string, string>, readonly buckets: number[] | undefined) {
    this.counts = buckets ? new Array<number>(buckets.length).fill(0) : [];
  }

  increment(value: number): void {
    if (this.family.kind === 'histogram') throw invalidArg('increment() is not available on a histogram');
    if (this.family.kind === 'counter' && value < 0) throw invalidArg('a counter cannot decrease');
    this.current += value;
  }

  set(value: number): void {
    if (this.family.kind !== 'gauge') throw invalidArg('set() is only available on a gauge');
    this.current = value;
  }

  observe(value: number): void {
    if (!this.buckets) throw invalidArg('observe() is only available on a histogram');
    const i = this.buckets.findIndex((le) => value <= le);
    if (i >= 0) this.counts[i]!++;
    this.sum += value;
    this.count++;
  }

  /** A counter or gauge's value; a histogram's sum, as Triton's Metric.value() gives. */
  value(): number {
    return this.buckets ? this.sum : this.current;
  }

  delete(): void {
    this.family.remove(this);
  }
}
