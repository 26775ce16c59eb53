/** What `nereid analyze` leaves behind: Model Analyzer's results CSV, the best config, the HTML report. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { configText } from './candidates.js';
import { p99Ms, passes } from './ranking.js';
import type { AnalyzeResult } from './run.js';
import { analyzeReportHtml } from '../report/analyze-report.js';

export interface AnalyzeFiles {
  readonly csv: string;
  readonly bestConfig: string | undefined;
  readonly report: string;
}

export function writeAnalyzeOutputs(r: AnalyzeResult, exportPath: string, outputRepository: string): AnalyzeFiles {
  const results = join(exportPath, 'results');
  mkdirSync(results, { recursive: true });
  const head = ['Model', 'Batch', 'Concurrency', 'Model Config Path', 'Instance Group', 'Max Batch Size', 'Satisfies Constraints', 'Throughput (infer/sec)', 'p99 Latency (ms)', 'p95 Latency (ms)', 'p90 Latency (ms)', 'p50 Latency (ms)', 'Avg Latency (ms)', 'Server Queue (ms)', 'Server Compute Input (ms)', 'Server Compute Infer (ms)', 'Server Compute Output (ms)',
    // Nereid's: whether three windows in a row agreed (as `nereid perf` warns when they never did).
    'Measurement'];
  const ms = (us: number | undefined): string => (us === undefined ? '' : (us / 1000).toFixed(3));
  const lines = [head.join(',')];
  for (const c of r.configs) {
    for (const m of c.measurements) {
      const group = c.config.instance_group[0];
      lines.push([r.model, m.batchSize, m.value, join(outputRepository, c.name), group ? `${group.count}:CPU` : '1:CPU', c.config.max_batch_size, passes(m, r.constraints) ? 'Yes' : 'No', m.throughput.toFixed(1), p99Ms(m).toFixed(3), ms(m.latency.p95), ms(m.latency.p90), ms(m.latency.p50), ms(m.latency.meanUs), ms(m.server?.queueUs), ms(m.server?.computeInputUs), ms(m.server?.computeInferUs), ms(m.server?.computeOutputUs), m.stable ? 'stable' : 'not stable'].join(','));
    }
  }
  const csv = join(results, 'metrics-model-inference.csv');
  writeFileSync(csv, lines.join('\n') + '\n');
  const baseText = configText({ ...r.base });
  let bestConfig: string | undefined;
  let chosenText: string | undefined;
  if (r.chosen) {
    // Under the model's own name, ready to copy over the original.
    chosenText = configText({ ...r.chosen.config, name: r.base.name || r.model });
    const dir = join(exportPath, 'best_config', r.model);
    mkdirSync(dir, { recursive: true });
    bestConfig = join(dir, 'config.pbtxt');
    writeFileSync(bestConfig, chosenText);
  }
  const reportDir = join(exportPath, 'reports', 'summaries', r.model);
  mkdirSync(reportDir, { recursive: true });
  const report = join(reportDir, 'result_summary.html');
  writeFileSync(report, analyzeReportHtml(r, baseText, chosenText));
  return { csv, bestConfig, report };
}
