/** The HTML report of `nereid analyze`: curves per config, the Pareto front, the chosen config and its diff. */
import type { AnalyzeResult, ConfigResult } from '../analyze/run.js';
import { p99Ms, passes } from '../analyze/ranking.js';
import { alignCurves, chartDiv, escapeHtml, page, stackedBars, table, type ChartSpec } from './html.js';
import { BREAKDOWN_PARTS, breakdownOf } from './perf-report.js';

/** A line diff (longest common subsequence) of two config texts. */
export function lineDiff(a: string, b: string): { kind: ' ' | '-' | '+'; text: string }[] {
  const x = a.trimEnd().split('\n');
  const y = b.trimEnd().split('\n');
  const n = x.length;
  const m = y.length;
  const lcs: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) lcs[i]![j] = x[i] === y[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  const out: { kind: ' ' | '-' | '+'; text: string }[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    // On a tie the line removed goes first, as diff prints a changed line: the old one, then the new.
    if (i < n && j < m && x[i] === y[j]) out.push({ kind: ' ', text: x[i++]! }), j++;
    else if (i < n && (j >= m || lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) out.push({ kind: '-', text: x[i++]! });
    else out.push({ kind: '+', text: y[j++]! });
  }
  return out;
}

export function analyzeReportHtml(r: AnalyzeResult, baseText: string, chosenText: string | undefined): string {
  const measured = r.configs.filter((c) => c.measurements.length > 0);
  const curves = measured.map((c) => ({ label: c.name.replace(`${r.model}_config_`, ''), points: c.measurements.map((m) => [round(p99Ms(m)), m.throughput] as const) }));
  curves.push({ label: 'Pareto front', points: r.pareto.map((p) => [round(p99Ms(p.result)), p.result.throughput] as const), pointsOnly: true } as never);
  const charts: ChartSpec[] = [{ id: 'tput-latency', title: 'Throughput vs p99 latency, per config (points: concurrencies)', xLabel: 'p99 latency (ms)', yLabel: 'infer/sec', ...alignCurves(curves) }];
  const rows = r.configs.map((c) => row(c, r));
  const chosen = r.chosen;
  const diff = chosen && chosenText !== undefined
    ? `<pre class="diff">${lineDiff(baseText, chosenText).map((d) => `<span class="${d.kind === '-' ? 'del' : d.kind === '+' ? 'add' : ''}">${escapeHtml(`${d.kind} ${d.text}`)}</span>`).join('\n')}</pre>`
    : '<p>No config was chosen.</p>';
  const base = r.configs.find((c) => c.candidate === undefined);
  const verdict = chosen?.best && base?.best ? gainText(chosen, base, r.baselineRuns) : '';
  const constraintsText = [
    r.constraints.latencyBudgetMs !== undefined ? `p99 latency ≤ ${r.constraints.latencyBudgetMs} ms` : '',
    r.constraints.minThroughput !== undefined ? `throughput ≥ ${r.constraints.minThroughput} infer/sec` : '',
  ].filter(Boolean).join(', ') || 'none';
  const body = [
    `<p class="note">Model <b>${escapeHtml(r.model)}</b>; ${r.configs.length} configs measured${r.interrupted ? ' (interrupted: results so far)' : ''}; constraints: ${escapeHtml(constraintsText)}.</p>`,
    chosen ? `<h2>Chosen: ${escapeHtml(chosen.name)}</h2><p>${escapeHtml(chosen.description)}${r.chosenPasses ? '' : ' — <b>no config meets the constraints; this is the closest</b>'}${chosen.best?.stable === false ? ' — <b>not stable</b>: its windows never agreed' : ''}. ${escapeHtml(verdict)}</p>` : '<h2>No config chosen</h2>',
    ...charts.map(chartDiv),
    table(['config', 'settings', 'best infer/sec', 'at concurrency', 'p99 ms', 'meets constraints', 'Pareto', 'note'], rows.map((x) => x.cells)),
    '<h2>Chosen config against the starting one</h2>',
    diff,
    stackedBars('Average request latency at each config\'s best point, by where it went (µs)', BREAKDOWN_PARTS, measured.filter((c) => c.best).map((c) => breakdownOf(c.name.replace(`${r.model}_config_`, ''), c.best!)), 'µs'),
  ].join('\n');
  return page(`nereid analyze: ${r.model}`, body, charts).replace(/<tr><td>([^<]+)<\/td>/g, (m, name: string) => (chosen && name === escapeHtml(chosen.name) ? `<tr class="chosen"><td>${name}</td>` : rows.find((x) => x.failed && x.cells[0] === name) ? `<tr class="failed"><td>${name}</td>` : m));
}

const round = (x: number): number => Math.round(x * 1000) / 1000;

function row(c: ConfigResult, r: AnalyzeResult): { cells: string[]; failed: boolean } {
  const b = c.best;
  const onFront = r.pareto.some((p) => p.config === c);
  return {
    failed: c.error !== undefined,
    cells: [c.name, c.description, b ? b.throughput.toFixed(1) : '—', b ? String(b.value) : '—', b ? p99Ms(b).toFixed(2) : '—', b ? (passes(b, r.constraints) ? 'yes' : 'no') : '—', onFront ? 'yes' : '', c.error ? `skipped: ${c.error}` : unstableNote(c)],
  };
}

/** `not stable at concurrency …` for the measurements of a config whose windows never agreed. */
function unstableNote(c: ConfigResult): string {
  const levels = c.measurements.filter((m) => !m.stable).map((m) => m.value);
  return levels.length ? `not stable at concurrency ${levels.join(', ')}` : '';
}

/**
 * The chosen config's throughput gain over the starting one, judged against the run-to-run noise: the spread
 * of the starting config's runs, each on a fresh server. A gain within it is said to be no clear win, however
 * large its percentage; with one run the noise is unknown and the text says so.
 */
export function gainText(chosen: ConfigResult, base: ConfigResult, baselineRuns: readonly number[]): string {
  // Against the median of the starting config's runs: one lucky or unlucky run says little.
  const sorted = [...baselineRuns].sort((x, y) => x - y);
  const mid = Math.floor(sorted.length / 2);
  const reference = sorted.length > 1 ? (sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2) : base.best!.throughput;
  const g = (chosen.best!.throughput / reference - 1) * 100;
  const s = `Throughput ${chosen.best!.throughput.toFixed(1)} infer/sec against the starting config's ${reference.toFixed(1)}${sorted.length > 1 ? ' (median of its runs)' : ''} (${g >= 0 ? '+' : ''}${g.toFixed(1)}%).`;
  if (chosen === base) return s;
  if (baselineRuns.length < 2) return `${s} The starting config was measured once, so the run-to-run noise is unknown (--baseline-repeats 2 or more measures it).`;
  const spread = ((sorted.at(-1)! - sorted[0]!) / reference) * 100;
  const runs = `its ${baselineRuns.length} runs: ${baselineRuns.map((x) => x.toFixed(1)).join(', ')} infer/sec, ${spread.toFixed(1)}% apart`;
  return Math.abs(g) > spread
    ? `${s} Larger than the starting config's run-to-run noise (${runs}).`
    : `${s} Within the starting config's run-to-run noise (${runs}): no clear win.`;
}
