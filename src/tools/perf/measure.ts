/**
 * perf_analyzer's measurement: contiguous windows (time or count), the server's statistics read at each window's
 * end, and a level is done once three windows in a row agree on throughput and latency within the stability
 * percentage (or --max-trials windows have passed). The result averages those three windows: client counts and
 * merged histograms, and the server's counters over the same span.
 */
import { merged, summarize, type LatencySummary } from './latency-histogram.js';
import type { LoadGenerator, LoadPlan, RequestRecord, Window } from './load-generator.js';
import { whenAborted } from '../abort.js';
import { statsDelta, type ServerStats, type Transport } from './transport.js';

export interface ServerSummary {
  readonly inferenceCount: number;
  readonly executionCount: number;
  readonly successCount: number;
  /** Successful requests per second over the same windows as the client's figures. */
  readonly throughput: number;
  readonly avgRequestUs: number;
  readonly overheadUs: number;
  readonly queueUs: number;
  readonly computeInputUs: number;
  readonly computeInferUs: number;
  readonly computeOutputUs: number;
}

export interface LevelResult {
  readonly mode: LoadPlan['mode'];
  readonly value: number;
  readonly batchSize: number;
  readonly stable: boolean;
  readonly requestCount: number;
  readonly responseCount: number;
  readonly durationMs: number;
  /** Inferences (requests × batch size) per second. */
  readonly throughput: number;
  readonly responsesPerSec: number;
  readonly latency: LatencySummary;
  readonly first: LatencySummary;
  readonly inter: LatencySummary;
  readonly server: ServerSummary | undefined;
  readonly windows: ReadonlyArray<{ readonly throughput: number; readonly latencyUs: number }>;
  readonly records: readonly RequestRecord[] | undefined;
  readonly boundariesMs: readonly number[];
}

export interface MeasureOptions {
  readonly measurementMode: 'time_windows' | 'count_windows';
  readonly intervalMs: number;
  readonly requestCount: number;
  readonly stabilityPct: number;
  readonly maxTrials: number;
  readonly percentile: number | undefined;
  readonly batchSize: number;
}

export class RequestFailed extends Error {}

export interface MeasureHooks {
  /** Called after each window with its figures. */
  window?(trial: number, throughput: number, latencyUs: number): void;
  readonly signal?: AbortSignal;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

export async function measureLevel(gen: LoadGenerator, transport: Transport, plan: LoadPlan, o: MeasureOptions, hooks: MeasureHooks = {}): Promise<LevelResult | undefined> {
  let snapshot = await transport.stats();
  gen.start(plan);
  gen.rotate();
  const windows: { w: Window; statsStart: ServerStats | undefined; statsEnd: ServerStats | undefined }[] = [];
  let stable = false;
  try {
    for (let trial = 1; trial <= o.maxTrials; trial++) {
      if (o.measurementMode === 'time_windows') {
        await sleep(o.intervalMs, hooks.signal);
      } else {
        const aborted = whenAborted(hooks.signal);
        await Promise.race([Promise.all([gen.untilCount(o.requestCount), sleep(1000, hooks.signal)]), aborted.promise]);
        aborted.dispose();
      }
      if (hooks.signal?.aborted) return undefined;
      const w = gen.rotate();
      const statsEnd = await transport.stats();
      windows.push({ w, statsStart: snapshot, statsEnd });
      snapshot = statsEnd;
      if (w.errors > 0) throw new RequestFailed(`${w.errors} of ${w.errors + w.completed} requests failed: ${w.firstError}`);
      const tput = (w.completed * o.batchSize * 1000) / (w.endMs - w.startMs);
      hooks.window?.(trial, tput, latencyOf(summarize(w.latency, o.percentile)));
      if (windows.length >= 3 && isStable(windows.slice(-3).map((x) => x.w), o)) {
        stable = true;
        break;
      }
    }
  } finally {
    await gen.stop();
  }
  return combine(plan, windows.slice(-3), stable, o);
}

function latencyOf(s: LatencySummary): number {
  return s.chosen ?? s.meanUs;
}

function isStable(ws: readonly Window[], o: MeasureOptions): boolean {
  const tput = ws.map((w) => w.completed / (w.endMs - w.startMs));
  const lat = ws.map((w) => latencyOf(summarize(w.latency, o.percentile)));
  const within = (xs: number[]): boolean => {
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    return xs.every((x) => Math.abs(x - mean) <= (mean * o.stabilityPct) / 100);
  };
  return within(tput) && within(lat);
}

function combine(plan: LoadPlan, ws: { w: Window; statsStart: ServerStats | undefined; statsEnd: ServerStats | undefined }[], stable: boolean, o: MeasureOptions): LevelResult {
  const durationMs = ws.reduce((a, x) => a + (x.w.endMs - x.w.startMs), 0);
  const requestCount = ws.reduce((a, x) => a + x.w.completed, 0);
  const responseCount = ws.reduce((a, x) => a + x.w.responses, 0);
  const first = ws[0]?.statsStart;
  const last = ws.at(-1)?.statsEnd;
  let server: ServerSummary | undefined;
  if (first && last) {
    const d = statsDelta(first, last);
    const per = (ns: number): number => (d.successCount > 0 ? ns / d.successCount / 1000 : 0);
    const parts = per(d.queueNs) + per(d.computeInputNs) + per(d.computeInferNs) + per(d.computeOutputNs);
    server = {
      inferenceCount: d.inferenceCount,
      executionCount: d.executionCount,
      successCount: d.successCount,
      throughput: durationMs > 0 ? (d.successCount * 1000) / durationMs : 0,
      avgRequestUs: per(d.successNs),
      overheadUs: Math.max(0, per(d.successNs) - parts),
      queueUs: per(d.queueNs),
      computeInputUs: per(d.computeInputNs),
      computeInferUs: per(d.computeInferNs),
      computeOutputUs: per(d.computeOutputNs),
    };
  }
  const records = ws[0]?.w.records ? ws.flatMap((x) => x.w.records!) : undefined;
  return {
    mode: plan.mode,
    value: plan.value,
    batchSize: o.batchSize,
    stable,
    requestCount,
    responseCount,
    durationMs,
    throughput: durationMs > 0 ? (requestCount * o.batchSize * 1000) / durationMs : 0,
    responsesPerSec: durationMs > 0 ? (responseCount * 1000) / durationMs : 0,
    latency: summarize(merged(ws.map((x) => x.w.latency)), o.percentile),
    first: summarize(merged(ws.map((x) => x.w.first)), o.percentile),
    inter: summarize(merged(ws.map((x) => x.w.inter)), o.percentile),
    server,
    windows: ws.map((x) => ({ throughput: (x.w.completed * o.batchSize * 1000) / (x.w.endMs - x.w.startMs), latencyUs: latencyOf(summarize(x.w.latency, o.percentile)) })),
    records,
    boundariesMs: ws.length ? [ws[0]!.w.startMs, ...ws.map((x) => x.w.endMs)] : [],
  };
}
