import type { RootTrace, TraceContextCarrier } from '../../inference/trace.js';
import type { Logger } from '../logger.js';
import { parseTraceConfig, type TraceConfig, type TraceMode } from './config.js';
import { TraceSettings, type NewSetting, type TraceSetting } from './settings.js';
import { TraceFile } from './trace-file.js';
import { parseTraceparent } from './traceparent.js';
import { TritonTrace, type TraceOwner } from './triton-trace.js';
import { RecentTraces } from './recent-traces.js';
import type { OtelRuntime } from './otel-trace.js';

/** A trace setting as the trace APIs show it. */
export interface TraceSettingView {
  readonly level: number;
  readonly rate: number;
  readonly count: number;
  readonly logFrequency: number;
  readonly file: string;
  readonly mode: TraceMode;
  /** The mode's other options, as strings, in the order Triton lists them. */
  readonly options: readonly (readonly [string, string])[];
}

/**
 * Triton's trace manager: the settings, sampling, and where finished traces go (the trace file in Triton mode,
 * the OpenTelemetry exporter in OpenTelemetry mode). `active` is false while every setting is OFF: frontends
 * read it before anything else, so that a request pays nothing for tracing then.
 */
export class TraceManager implements TraceOwner {
  active: boolean;
  private ids = 0;
  private readonly settings: TraceSettings;
  private readonly file: TraceFile;
  private readonly retired = new Set<TraceSetting>();
  /** The latest traces in Triton mode, for the web console. */
  readonly recent = new RecentTraces();

  private constructor(readonly config: TraceConfig, private readonly otel: OtelRuntime | null, logger: Logger) {
    this.file = new TraceFile(config.file, (m) => logger.error(m));
    this.settings = new TraceSettings(config, this.file);
    this.settings.onRetire = (s) => {
      if (s.live === 0) s.flush();
      else this.retired.add(s);
    };
    this.active = this.settings.anyOn();
  }

  /** From --trace-config entries; OpenTelemetry's packages are loaded here, and only for that mode. */
  static async create(entries: readonly string[], logger: Logger): Promise<TraceManager> {
    const config = parseTraceConfig(entries);
    let manager: TraceManager | undefined;
    let otel: OtelRuntime | null = null;
    if (config.mode === 'opentelemetry') {
      const { OtelRuntime: Runtime } = await import('./otel-trace.js');
      otel = new Runtime(config.otel, { nextId: () => manager!.nextId(), finished: (s, r) => manager!.finished(s, r) }, (m) => logger.warn(m));
    }
    manager = new TraceManager(config, otel, logger);
    return manager;
  }

  /**
   * A trace for a request to `model`, or null when it is not sampled. A request carrying a client's trace
   * context (OpenTelemetry mode) is traced whatever rate says, as long as the setting traces at all.
   */
  sample(model: string, carrier: TraceContextCarrier | null): RootTrace | null {
    const setting = this.settings.of(model);
    const parent = carrier === null ? null : parseTraceparent(carrier.traceparent, carrier.tracestate);
    const take = parent !== null && this.otel !== null ? setting.force() : setting.sample();
    if (!take) return null;
    setting.live++;
    if (this.otel !== null) return this.otel.start(setting, parent);
    return new TritonTrace(this, setting, 0, parent?.traceparent ?? '');
  }

  nextId(): number {
    return ++this.ids;
  }

  finished(setting: TraceSetting, records: string | null): void {
    setting.live--;
    if (records !== null) {
      setting.collect(records);
      this.recent.add(records);
    }
    if (setting.retired && setting.live === 0 && this.retired.delete(setting)) setting.flush();
  }

  /** The setting of `model` ('' for the global one). */
  view(model: string): TraceSettingView {
    const s = this.settings.of(model);
    return { level: s.level, rate: s.rate, count: s.count, logFrequency: s.logFrequency, file: s.file.path, mode: s.mode, options: this.modeOptions() };
  }

  /** Applies an update as Triton does (see TraceSettings.update); throws INVALID_ARG as Triton answers. */
  update(model: string, change: NewSetting): void {
    this.settings.update(model, change);
    this.active = this.settings.anyOn();
  }

  private modeOptions(): [string, string][] {
    if (this.config.mode !== 'opentelemetry') return [];
    const o = this.config.otel;
    const out: [string, string][] = [['url', o.url]];
    for (const [k, v] of o.resources) out.push(['resource', `${k}=${v}`]);
    out.push(['bsp_max_queue_size', String(o.bspMaxQueueSize)], ['bsp_schedule_delay', String(o.bspScheduleDelayMs)], ['bsp_max_export_batch_size', String(o.bspMaxExportBatchSize)]);
    return out;
  }

  /** Writes what is pending (Triton mode) or sends it (OpenTelemetry), then closes the file. */
  async close(): Promise<void> {
    this.active = false;
    for (const s of this.settings.all()) s.flush();
    for (const s of this.retired) s.flush();
    await this.otel?.shutdown();
    await this.file.close();
  }
}
