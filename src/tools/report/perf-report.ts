/** The HTML chart of one `nereid perf` run: throughput against latency, percentiles per level, server breakdown. */
import type { LevelResult } from '../perf/measure.js';
import type { PerfOptions } from '../perf/options.js';
import type { PerfRun } from '../perf/run.js';
import { alignCurves, chartDiv, escapeHtml, page, stackedBars, table, type ChartSpec, type StackedBar } from './html.js';

export const BREAKDOWN_PARTS = ['client + network', 'server overhead', 'queue', 'compute input', 'compute infer', 'compute output'];

/** Where the time of an average request went, in microseconds. */
export function breakdownOf(label: string, r: LevelResult): StackedBar {
  const s = r.server;
  if (!s) return { label, parts: [r.latency.meanUs, 0, 0, 0, 0, 0] };
  const client = Math.max(0, r.latency.meanUs - s.avgRequestUs);
  return { label, parts: [client, s.overheadUs, s.queueUs, s.computeInputUs, s.computeInferUs, s.computeOutputUs] };
}

export function perfReportHtml(run: PerfRun, o: PerfOptions): string {
  const rs = run.results;
  const levelLabel = o.mode === 'concurrency' ? 'concurrency' : 'request rate';
  const curve = alignCurves([{ label: 'throughput', points: rs.map((r) => [r.latency.p99 / 1000, r.throughput] as const) }]);
  const charts: ChartSpec[] = [
    { id: 'tput-latency', title: 'Throughput vs p99 latency', xLabel: 'p99 latency (ms)', yLabel: 'infer/sec', ...curve },
    {
      id: 'latency-levels',
      title: `Latency by ${levelLabel}`,
      xLabel: levelLabel,
      yLabel: 'latency (ms)',
      x: rs.map((r) => r.value),
      series: (['p50', 'p90', 'p95', 'p99'] as const).map((p) => ({ label: p, y: rs.map((r) => r.latency[p] / 1000) })),
    },
  ];
  const rows = rs.map((r) => [String(r.value), r.throughput.toFixed(1), (r.latency.meanUs / 1000).toFixed(3), (r.latency.p50 / 1000).toFixed(3), (r.latency.p99 / 1000).toFixed(3), r.server ? r.server.throughput.toFixed(1) : '—', r.stable ? 'yes' : 'no']);
  const body = [
    `<p class="note">Model <b>${escapeHtml(run.info.name)}</b>${o.version ? ` version ${escapeHtml(o.version)}` : ''} at ${escapeHtml(o.url)} over ${o.protocol.toUpperCase()}, batch size ${o.batchSize}, ${escapeHtml(o.measurementMode)} of ${o.intervalMs} ms.</p>`,
    table([levelLabel, 'infer/sec', 'avg ms', 'p50 ms', 'p99 ms', 'server requests/sec', 'stable'], rows),
    ...charts.map(chartDiv),
    stackedBars('Average request latency, by where it went (µs)', BREAKDOWN_PARTS, rs.map((r) => breakdownOf(`${levelLabel} ${r.value}`, r)), 'µs'),
  ].join('\n');
  return page(`nereid perf: ${run.info.name}`, body, charts);
}
