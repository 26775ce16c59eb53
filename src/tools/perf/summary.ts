/** perf_analyzer's printed summary and its CSV file, from measured levels. */
import type { LevelResult } from './measure.js';

const us = (x: number): string => `${Math.round(x)} usec`;
const levelName = (r: LevelResult): string => (r.mode === 'concurrency' ? 'Request concurrency' : 'Request Rate');

export interface SettingsText {
  readonly batchSize: number;
  readonly measurementMode: string;
  readonly intervalMs: number;
  readonly requestCount: number;
  readonly percentile: number | undefined;
  readonly streaming: boolean;
  readonly protocol: string;
}

export function settingsText(s: SettingsText): string {
  return [
    '*** Measurement Settings ***',
    `  Batch size: ${s.batchSize}`,
    '  Service Kind: TRITON',
    `  Using "${s.measurementMode}" mode for stabilization`,
    `  Stabilizing using ${s.percentile === undefined ? 'average latency' : `p${s.percentile} latency`} and throughput`,
    s.measurementMode === 'time_windows' ? `  Measurement window: ${s.intervalMs} msec` : `  Minimum number of samples in each window: ${s.requestCount}`,
    `  Using ${s.streaming ? 'streaming' : 'asynchronous'} calls for inference over ${s.protocol.toUpperCase()}`,
    '',
  ].join('\n') + '\n';
}

export function levelText(r: LevelResult, streaming: boolean): string {
  const l = r.latency;
  const out = [
    `${levelName(r)}: ${r.value}`,
    '  Client: ',
    `    Request count: ${r.requestCount}`,
    `    Throughput: ${r.throughput.toFixed(2)} infer/sec`,
  ];
  if (streaming) {
    out.push(`    Response throughput: ${r.responsesPerSec.toFixed(2)} responses/sec (tokens/sec when each response is a token)`);
    out.push(`    Avg first response latency: ${us(r.first.meanUs)} (p50 ${us(r.first.p50)}, p99 ${us(r.first.p99)})`);
    if (r.inter.count > 0) out.push(`    Avg inter-response latency: ${us(r.inter.meanUs)} (p50 ${us(r.inter.p50)}, p99 ${us(r.inter.p99)})`);
  }
  out.push(
    `    Avg latency: ${us(l.meanUs)} (standard deviation ${us(l.stdUs)})`,
    `    p50 latency: ${us(l.p50)}`,
    `    p90 latency: ${us(l.p90)}`,
    `    p95 latency: ${us(l.p95)}`,
    `    p99 latency: ${us(l.p99)}`,
  );
  const s = r.server;
  if (s) {
    out.push(
      '  Server: ',
      `    Inference count: ${s.inferenceCount}`,
      `    Execution count: ${s.executionCount}`,
      `    Successful request count: ${s.successCount}`,
      `    Avg request latency: ${us(s.avgRequestUs)} (overhead ${us(s.overheadUs)} + queue ${us(s.queueUs)} + compute input ${us(s.computeInputUs)} + compute infer ${us(s.computeInferUs)} + compute output ${us(s.computeOutputUs)})`,
    );
  } else {
    out.push('  Server: ', '    (the server has no statistics extension: no server-side breakdown)');
  }
  if (!r.stable) out.push(`  Warning: not stable within the measurement windows tried; figures are from the last three.`);
  return out.join('\n') + '\n\n';
}

export function closingText(results: readonly LevelResult[]): string {
  if (results.length === 0) return '';
  const lines = [`Inferences/Second vs. Client ${results[0]!.latency.chosen === undefined ? 'Average Batch Latency' : 'p-th Batch Latency'}`];
  for (const r of results) {
    const label = r.mode === 'concurrency' ? 'Concurrency' : 'Request Rate';
    lines.push(`${label}: ${r.value}, throughput: ${r.throughput.toFixed(2)} infer/sec, latency ${Math.round(r.latency.chosen ?? r.latency.meanUs)} usec`);
  }
  return lines.join('\n') + '\n';
}

/** perf_analyzer's CSV: rows sorted by throughput; latencies in microseconds. */
export function csvText(results: readonly LevelResult[], verbose: boolean, streaming: boolean): string {
  if (results.length === 0) return '';
  const first = results[0]!.mode === 'concurrency' ? 'Concurrency' : 'Request Rate';
  const head = [first, 'Inferences/Second', 'Client Send', 'Network+Server Send/Recv', 'Server Queue', 'Server Compute Input', 'Server Compute Infer', 'Server Compute Output', 'Client Recv', 'p50 latency', 'p90 latency', 'p95 latency', 'p99 latency'];
  if (verbose) head.push('Avg latency', 'request/response', 'response wait');
  if (streaming) head.push('Avg first response latency', 'Avg inter-response latency', 'Responses/Second');
  const rows = [...results].sort((a, b) => a.throughput - b.throughput).map((r) => {
    const s = r.server;
    const serverParts = s ? s.queueUs + s.computeInputUs + s.computeInferUs + s.computeOutputUs : 0;
    const i = (x: number): string => String(Math.round(x));
    const row = [String(r.value), r.throughput.toFixed(2), '0', i(Math.max(0, r.latency.meanUs - serverParts)), i(s?.queueUs ?? 0), i(s?.computeInputUs ?? 0), i(s?.computeInferUs ?? 0), i(s?.computeOutputUs ?? 0), '0', i(r.latency.p50), i(r.latency.p90), i(r.latency.p95), i(r.latency.p99)];
    if (verbose) row.push(i(r.latency.meanUs), '0', i(r.latency.meanUs));
    if (streaming) row.push(i(r.first.meanUs), i(r.inter.meanUs), r.responsesPerSec.toFixed(2));
    return row.join(',');
  });
  return [head.join(','), ...rows].join('\n') + '\n';
}

/** perf_analyzer's --profile-export-file layout: per level, every request of the stable windows. */
export function profileExport(results: readonly LevelResult[], originMs: number, originNs: bigint): object {
  const ns = (ms: number): number => Number(originNs + BigInt(Math.round((ms - originMs) * 1e6)));
  return {
    experiments: results.map((r) => ({
      experiment: { mode: r.mode, value: r.value },
      requests: (r.records ?? []).map((q) => ({
        timestamp: ns(q.startMs),
        ...(q.sequenceId !== undefined ? { sequence_id: q.sequenceId } : {}),
        response_timestamps: q.responseMs.map(ns),
      })),
      window_boundaries: r.boundariesMs.map(ns),
    })),
    version: 'nereid',
    service_kind: 'triton',
    endpoint: '',
  };
}
