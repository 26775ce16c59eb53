import { Gauge, Registry, type Metric } from 'prom-client';
import type { ModelStatistics } from '../statistics.js';
import { CpuPoller } from './cpu.js';
import { cacheFamilies, engineLoadFamilies, histogramFamilies, inferenceFamilies, limitRefusalFamily, modelLoadFamilies, nereidFamilies, summaryFamilies, type EngineGauges, type ScrapeFamily, type ScrapedLoad, type ScrapedVersion } from './families.js';
import { relabelledExposition } from './engine-exposition.js';
import { MetricModelReporter, type VersionInfo } from './reporter.js';
import { DEFAULT_METRICS_SETTINGS, type MetricsSettings } from './settings.js';
import { AGE_BUCKETS, SUMMARY_MAX_AGE_MS } from './summary.js';

/** prom-client's registry type, for the server's API: prom-client is imported only under observability/metrics. */
export type { Registry };

/** A loaded model version as metrics see it (the model layer's ModelVersion fits). */
export interface MetricsVersion {
  readonly stats: ModelStatistics;
  /** Requests accepted and not yet executing. */
  waiting(): number;
  /** The memory its load took (undefined: not measured). */
  readonly memoryBytes: number | undefined;
  /** Requests accepted and not yet answered. */
  inflight(): number;
  /** Its instances hung past the execute timeout (see ModelVersion.status()). */
  status(): { readonly hung: number };
  /** A text model's engine load (see engineLoadFamilies); absent or undefined: not reported. */
  engineLoad?(): Promise<EngineGauges | undefined>;
  /** Exposition texts of the engines the server runs for it, re-exported under its labels; absent: none. */
  engineMetrics?(): Promise<string[]>;
}

export interface MetricsOptions {
  readonly settings?: MetricsSettings;
  /** --metrics-interval-ms: how often the CPU and memory gauges are refreshed (default 2000). */
  readonly intervalMs?: number;
  /** --allow-cpu-metrics (default true). */
  readonly cpu?: boolean;
  /** Refusals by the server's limits so far, by limit name (`nereid_limit_refusal_count`). */
  readonly limitRefusals?: () => Iterable<[string, number]>;
  /** Evictions and loads on demand by model name; absent when neither can happen. */
  readonly modelLoads?: () => { evictions: ReadonlyMap<string, number>; onDemand: ReadonlyMap<string, number> };
}

/**
 * The server's Prometheus metrics, with Triton's names: a prom-client Registry whose per-model families read
 * the statistics of the versions loaded at scrape time (so an unloaded version disappears, and counting costs
 * requests nothing), plus the latency histograms and summaries bound to each version when it loads.
 *
 * prom-client's Gauge (with a collect() callback) serves the label-free CPU gauges. Its labelled metrics do
 * not fit the per-model families: their label names are fixed when the metric is made, while each model's
 * metric_tags add labels of its own, and a labelled child validates and hashes its label set on every
 * observation. Per-model families are therefore computed from the statistics in the shape the Registry reads,
 * and the Registry formats everything.
 */
export class ServerMetrics {
  readonly registry = new Registry();
  readonly settings: MetricsSettings;
  private readonly reporters = new WeakMap<ModelStatistics, MetricModelReporter>();
  private readonly cpu: CpuPoller | undefined;
  private readonly rotation: NodeJS.Timeout | undefined;

  constructor(private readonly versions: () => Iterable<MetricsVersion>, options: MetricsOptions = {}) {
    this.settings = options.settings ?? DEFAULT_METRICS_SETTINGS;
    const scraped = (): ScrapedVersion[] => this.scraped();
    const families: ScrapeFamily[] = [
      ...inferenceFamilies(scraped, this.settings.counterLatencies),
      ...(this.settings.counterLatencies ? cacheFamilies(scraped) : []),
      ...(this.settings.histogramLatencies ? histogramFamilies(scraped) : []),
      ...(this.settings.summaryLatencies ? summaryFamilies(scraped) : []),
    ];
    // The Registry takes any object with a name and get(); its TypeScript type names only its own classes.
    for (const f of families) this.registry.registerMetric(f as unknown as Metric);
    if (options.cpu ?? true) {
      this.cpu = new CpuPoller();
      this.cpu.start(options.intervalMs ?? 2000);
      this.cpuGauges(this.cpu);
    }
    for (const f of nereidFamilies(scraped)) this.registry.registerMetric(f as unknown as Metric);
    for (const f of engineLoadFamilies(() => this.loads())) this.registry.registerMetric(f as unknown as Metric);
    const refusals = options.limitRefusals;
    if (refusals) this.registry.registerMetric(limitRefusalFamily(refusals) as unknown as Metric);
    if (options.modelLoads) for (const f of modelLoadFamilies(options.modelLoads)) this.registry.registerMetric(f as unknown as Metric);
    if (this.settings.summaryLatencies) {
      this.rotation = setInterval(() => this.rotate(), SUMMARY_MAX_AGE_MS / AGE_BUCKETS).unref();
    }
  }

  /**
   * Called when a model version loads, before it takes requests: fixes its label sets and, when
   * --metrics-config asks for histograms or summaries, makes their series its statistics' latency observer.
   */
  bind(stats: ModelStatistics, info: VersionInfo): void {
    const reporter = new MetricModelReporter(info, this.settings);
    this.reporters.set(stats, reporter);
    if (reporter.observes) stats.observer = reporter;
  }

  /** The exposition text (Prometheus text format 0.0.4). */
  async text(): Promise<string> {
    await this.cpu?.settled();
    const [own, engines] = await Promise.all([this.registry.metrics(), this.engineTexts()]);
    return engines.length === 0 ? own : own + relabelledExposition(engines);
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** Stops the timers; the registry still answers (with the last CPU figures). */
  close(): void {
    this.cpu?.stop();
    if (this.rotation) clearInterval(this.rotation);
  }

  private scraped(): ScrapedVersion[] {
    const out: ScrapedVersion[] = [];
    for (const v of this.versions()) {
      const reporter = this.reporters.get(v.stats);
      if (reporter) out.push({ stats: v.stats, reporter, waiting: v.waiting(), inflight: v.inflight(), hung: v.status().hung, memoryBytes: v.memoryBytes });
    }
    return out;
  }

  /** The engine load of every version that reports one, asked at scrape time. */
  private async loads(): Promise<ScrapedLoad[]> {
    const asked: Promise<ScrapedLoad | undefined>[] = [];
    for (const v of this.versions()) {
      const reporter = this.reporters.get(v.stats);
      if (!reporter || !v.engineLoad) continue;
      asked.push(v.engineLoad().then((gauges) => (gauges ? { labels: reporter.labels, gauges } : undefined), () => undefined));
    }
    return (await Promise.all(asked)).filter((l): l is ScrapedLoad => l !== undefined);
  }

  /** The engines' own metrics, with the labels of the model version each serves; asked at scrape time. */
  private async engineTexts(): Promise<{ labels: Readonly<Record<string, string>>; text: string }[]> {
    const asked: Promise<{ labels: Readonly<Record<string, string>>; text: string }[]>[] = [];
    for (const v of this.versions()) {
      const reporter = this.reporters.get(v.stats);
      if (!reporter || !v.engineMetrics) continue;
      asked.push(v.engineMetrics().then((texts) => texts.map((text) => ({ labels: reporter.labels, text })), () => []));
    }
    return (await Promise.all(asked)).flat();
  }

  private rotate(): void {
    for (const v of this.versions()) this.reporters.get(v.stats)?.rotate();
  }

  private cpuGauges(cpu: CpuPoller): void {
    const gauge = (name: string, help: string, value: () => number): void => {
      new Gauge({ name, help, registers: [this.registry], collect() { this.set(value()); } });
    };
    gauge('nv_cpu_utilization', 'CPU utilization rate [0.0 - 1.0]', () => cpu.utilization);
    gauge('nv_cpu_memory_total_bytes', 'CPU total memory (RAM), in bytes', () => cpu.memoryTotalBytes);
    gauge('nv_cpu_memory_used_bytes', 'CPU used memory (RAM), in bytes', () => cpu.memoryUsedBytes);
  }
}
