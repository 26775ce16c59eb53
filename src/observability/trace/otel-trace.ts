import { ROOT_CONTEXT, SpanKind, createTraceState, trace, type Context, type HrTime, type Span, type Tracer } from '@opentelemetry/api';
import { BasicTracerProvider, BatchSpanProcessor, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { RootTrace, RequestTrace } from '../../inference/trace.js';
import { invalidArg } from '../../errors.js';
import { otlpEndpoint, type OtelOptions } from './config.js';
import type { TraceSetting } from './settings.js';
import type { TraceOwner } from './triton-trace.js';
import { formatTraceparent, type ParentContext } from './traceparent.js';

/**
 * OpenTelemetry mode, loaded only when --trace-config mode=opentelemetry: spans in Triton's layout sent by a
 * batch span processor to an OTLP/HTTP (protobuf) collector. Each sampled request is a root span
 * "InferRequest" (a client's propagated context as its parent) holding the frontend's timestamps as events;
 * under it a span named after the model (REQUEST_START, QUEUE_START, REQUEST_END events and Triton's attributes)
 * and under that a "compute" span (the COMPUTE_* events). An ensemble step or BLS call is a model span under
 * its parent's model span.
 */
export class OtelRuntime {
  private readonly provider: BasicTracerProvider;
  private readonly tracer: Tracer;
  /** hrtime nanoseconds → Unix epoch nanoseconds. */
  private readonly offsetNs: bigint;

  constructor(readonly options: OtelOptions, readonly owner: TraceOwner, warn: (message: string) => void) {
    const attributes: Record<string, string> = { 'service.name': 'triton-inference-server' };
    for (const [k, v] of options.resources) attributes[k] = v;
    const url = otlpEndpoint(options.url);
    let otlp: OTLPTraceExporter;
    try {
      otlp = new OTLPTraceExporter({ url });
    } catch (e) {
      throw invalidArg(`--trace-config opentelemetry,url=${options.url}: ${(e as Error).message}`);
    }
    const exporter = new ReportingExporter(otlp, url, warn);
    this.provider = new BasicTracerProvider({
      resource: resourceFromAttributes(attributes),
      spanProcessors: [new BatchSpanProcessor(exporter, {
        maxQueueSize: options.bspMaxQueueSize,
        scheduledDelayMillis: options.bspScheduleDelayMs,
        maxExportBatchSize: options.bspMaxExportBatchSize,
      })],
    });
    this.tracer = this.provider.getTracer('triton-server');
    this.offsetNs = BigInt(Date.now()) * 1_000_000n - process.hrtime.bigint();
  }

  start(setting: TraceSetting, parent: ParentContext | null): RootTrace {
    let ctx = ROOT_CONTEXT;
    if (parent !== null) {
      ctx = trace.setSpanContext(ROOT_CONTEXT, {
        traceId: parent.traceId, spanId: parent.spanId, traceFlags: parent.flags, isRemote: true,
        ...(parent.tracestate ? { traceState: createTraceState(parent.tracestate) } : {}),
      });
    }
    return new OtelTrace(this, setting, 0, ctx, null);
  }

  span(name: string, startNs: bigint, parent: Context, kind: SpanKind = SpanKind.SERVER): Span {
    return this.tracer.startSpan(name, { kind, startTime: this.time(startNs) }, parent);
  }

  time(ns: bigint): HrTime {
    const epoch = ns + this.offsetNs;
    return [Number(epoch / 1_000_000_000n), Number(epoch % 1_000_000_000n)];
  }

  /** Sends what is queued and stops the exporter. */
  async shutdown(): Promise<void> {
    await this.provider.forceFlush().catch(() => undefined);
    await this.provider.shutdown().catch(() => undefined);
  }
}

/** At most one failed-export warning per this many ms: a collector that is down must not flood the log. */
const EXPORT_WARNING_INTERVAL_MS = 10_000;

/**
 * The OTLP exporter, with its failures logged (the SDK reports them only to a diagnostic logger nobody
 * installed): the first at once, then at most one line per interval, counting the failures in between.
 */
class ReportingExporter implements SpanExporter {
  private lastWarningMs = -Infinity;
  private unreported = 0;

  constructor(private readonly inner: SpanExporter, private readonly url: string, private readonly warn: (message: string) => void) {}

  export(spans: ReadableSpan[], done: Parameters<SpanExporter['export']>[1]): void {
    this.inner.export(spans, (result) => {
      // 0 is ExportResultCode.SUCCESS.
      if (result.code !== 0) this.failed(spans.length, result.error);
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }

  private failed(spans: number, error: Error | undefined): void {
    this.unreported++;
    const now = Date.now();
    if (now - this.lastWarningMs < EXPORT_WARNING_INTERVAL_MS) return;
    const earlier = this.unreported > 1 ? ` (${this.unreported - 1} more failed exports since the last report)` : '';
    this.warn(`OpenTelemetry trace export to ${this.url} failed, ${spans} spans dropped: ${error?.message ?? 'unknown error'}${earlier}`);
    this.lastWarningMs = now;
    this.unreported = 0;
  }
}

class OtelTrace implements RootTrace {
  readonly id: number;
  /** OpenTelemetry mode has no tensor records (Triton logs them as unsupported there). */
  readonly tensors = false;
  private readonly rootSpan: Span | null;
  private modelSpan: Span | null = null;
  private computeSpan: Span | null = null;
  private queueNs = 0n;
  private computeStartNs = 0n;
  private inputEndNs = 0n;
  private outputStartNs = 0n;

  constructor(
    private readonly rt: OtelRuntime,
    private readonly setting: TraceSetting,
    private readonly parentId: number,
    private readonly parentContext: Context,
    private readonly root: OtelTrace | null,
  ) {
    this.id = rt.owner.nextId();
    this.rootSpan = root === null ? rt.span('InferRequest', process.hrtime.bigint(), parentContext) : null;
  }

  requestStart(model: string, version: number, requestId: string, ns: bigint): void {
    const parent = this.root === null ? trace.setSpan(this.parentContext, this.rootSpan!) : this.parentContext;
    const span = this.rt.span(model, ns, parent);
    span.setAttribute('triton.model_name', model);
    span.setAttribute('triton.model_version', version);
    span.setAttribute('triton.trace_id', this.id);
    span.setAttribute('triton.trace_parent_id', this.parentId);
    span.setAttribute('triton.request_id', requestId);
    span.addEvent('REQUEST_START', this.rt.time(ns));
    this.modelSpan = span;
  }

  stamp(name: string, ns: bigint): void {
    const t = this.rt.time(ns);
    switch (name) {
      case 'QUEUE_START':
        this.queueNs = ns;
        this.modelSpan?.addEvent(name, t);
        return;
      case 'REQUEST_END':
        if (this.modelSpan === null) return;
        this.modelSpan.addEvent(name, t);
        this.modelSpan.end(t);
        return;
      case 'COMPUTE_START':
        this.computeStartNs = ns;
        if (this.modelSpan === null) return;
        this.computeSpan = this.rt.span('compute', ns, trace.setSpan(ROOT_CONTEXT, this.modelSpan));
        this.computeSpan.addEvent(name, t);
        return;
      case 'COMPUTE_INPUT_END':
        this.inputEndNs = ns;
        this.computeSpan?.addEvent(name, t);
        return;
      case 'COMPUTE_OUTPUT_START':
        this.outputStartNs = ns;
        this.computeSpan?.addEvent(name, t);
        return;
      case 'COMPUTE_END':
        if (this.computeSpan === null) return;
        this.computeSpan.addEvent(name, t);
        if (this.rt.options.stageSpans) this.stageSpans(ns);
        this.computeSpan.end(t);
        return;
      default:
        (this.root ?? this).rootSpan?.addEvent(name, t);
    }
  }

  /** Nereid's own per-stage spans: the wait in the queue, then compute's input, infer and output. */
  private stageSpans(endNs: bigint): void {
    if (this.queueNs !== 0n && this.modelSpan !== null) this.phaseUnder(this.modelSpan, 'queue', this.queueNs, this.computeStartNs);
    const c = this.computeSpan!;
    this.phaseUnder(c, 'compute_input', this.computeStartNs, this.inputEndNs);
    this.phaseUnder(c, 'compute_infer', this.inputEndNs, this.outputStartNs);
    this.phaseUnder(c, 'compute_output', this.outputStartNs, endNs);
  }

  phase(name: string, startNs: bigint, endNs: bigint): void {
    if (!this.rt.options.stageSpans) return;
    const parent = this.modelSpan ?? this.rootSpan;
    if (parent !== null) this.phaseUnder(parent, name, startNs, endNs);
  }

  private phaseUnder(parent: Span, name: string, startNs: bigint, endNs: bigint): void {
    const s = this.rt.span(name, startNs, trace.setSpan(ROOT_CONTEXT, parent), SpanKind.INTERNAL);
    s.end(this.rt.time(endNs));
  }

  tensor(): void {}

  child(): RequestTrace {
    const parent = this.modelSpan ?? (this.root ?? this).rootSpan!;
    return new OtelTrace(this.rt, this.setting, this.id, trace.setSpan(ROOT_CONTEXT, parent), this.root ?? this);
  }

  traceparent(): string {
    const span = this.modelSpan ?? (this.root ?? this).rootSpan;
    if (span === null) return '';
    const c = span.spanContext();
    return formatTraceparent(c.traceId, c.spanId, c.traceFlags);
  }

  end(): void {
    this.rootSpan?.end();
    this.rt.owner.finished(this.setting, null);
  }
}
