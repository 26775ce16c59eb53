/**
 * Building blocks of the self-contained HTML reports: a page with uPlot and its stylesheet inlined (about 50 kB;
 * chosen for its size and canvas speed), line/point charts drawn by it from JSON embedded in the page, stacked bars
 * and tables as plain SVG and HTML. Nothing is fetched when the page is viewed.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export interface Series {
  readonly label: string;
  /** y per x; null where this series has no point. */
  readonly y: readonly (number | null)[];
  readonly pointsOnly?: boolean;
  readonly width?: number;
}

export interface ChartSpec {
  readonly id: string;
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly x: readonly number[];
  readonly series: readonly Series[];
}

export interface StackedBar {
  readonly label: string;
  readonly parts: readonly number[];
}

export const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** Points from several curves on one x axis (sorted, distinct), each curve null where it has no point. */
export function alignCurves(curves: readonly { label: string; points: readonly (readonly [number, number])[]; pointsOnly?: boolean; width?: number }[]): { x: number[]; series: Series[] } {
  const x = [...new Set(curves.flatMap((c) => c.points.map((p) => p[0])))].sort((a, b) => a - b);
  const at = new Map(x.map((v, i) => [v, i]));
  const series = curves.map((c) => {
    const y: (number | null)[] = new Array<number | null>(x.length).fill(null);
    for (const [px, py] of c.points) y[at.get(px)!] = py;
    return { label: c.label, y, pointsOnly: c.pointsOnly, width: c.width };
  });
  return { x, series };
}

export function chartDiv(spec: ChartSpec): string {
  return `<div class="chart" id="${escapeHtml(spec.id)}"></div>`;
}

export function table(head: readonly string[], rows: readonly (readonly string[])[], cls = ''): string {
  const th = head.map((h) => `<th>${escapeHtml(h)}</th>`).join('');
  const tr = rows.map((r) => `<tr${cls ? ` class="${cls}"` : ''}>${r.map((c) => `<td>${escapeHtml(c)}</td>`).join('')}</tr>`).join('\n');
  return `<table><thead><tr>${th}</tr></thead><tbody>\n${tr}\n</tbody></table>`;
}

/** Horizontal stacked bars in SVG, one per label, parts in the order of `partNames`. */
export function stackedBars(title: string, partNames: readonly string[], bars: readonly StackedBar[], unit: string): string {
  const width = 760;
  const left = 190;
  const barH = 22;
  const gap = 8;
  const legendH = 28;
  const max = Math.max(1e-9, ...bars.map((b) => b.parts.reduce((a, x) => a + x, 0)));
  const scale = (width - left - 70) / max;
  const height = legendH + bars.length * (barH + gap) + 10;
  const out: string[] = [`<figure class="bars"><figcaption>${escapeHtml(title)}</figcaption><svg class="stacked" width="${width}" height="${height}" role="img">`];
  let lx = 10;
  partNames.forEach((p, i) => {
    out.push(`<rect x="${lx}" y="6" width="12" height="12" fill="${PALETTE[i % PALETTE.length]}"/><text x="${lx + 16}" y="16" font-size="12">${escapeHtml(p)}</text>`);
    lx += 26 + p.length * 6.5;
  });
  bars.forEach((b, row) => {
    const y = legendH + row * (barH + gap);
    out.push(`<text x="${left - 6}" y="${y + 15}" font-size="12" text-anchor="end">${escapeHtml(b.label)}</text>`);
    let x = left;
    b.parts.forEach((v, i) => {
      const w = Math.max(0, v * scale);
      out.push(`<rect class="part" x="${x.toFixed(1)}" y="${y}" width="${w.toFixed(1)}" height="${barH}" fill="${PALETTE[i % PALETTE.length]}"><title>${escapeHtml(`${partNames[i]}: ${v.toFixed(0)} ${unit}`)}</title></rect>`);
      x += w;
    });
    out.push(`<text x="${(x + 4).toFixed(1)}" y="${y + 15}" font-size="12">${b.parts.reduce((a, v) => a + v, 0).toFixed(0)} ${escapeHtml(unit)}</text>`);
  });
  out.push('</svg></figure>');
  return out.join('\n');
}

const PAGE_SCRIPT = `
(function () {
  var specs = JSON.parse(document.getElementById('chart-data').textContent);
  var palette = ${JSON.stringify(PALETTE)};
  var rendered = 0;
  specs.forEach(function (s) {
    var el = document.getElementById(s.id);
    var series = [{ label: s.xLabel }].concat(s.series.map(function (x, i) {
      var c = palette[i % palette.length];
      var o = { label: x.label, stroke: c, width: x.width || 2, spanGaps: true, points: { show: true, size: x.pointsOnly ? 10 : 6, fill: c } };
      if (x.pointsOnly) o.paths = function () { return null; };
      return o;
    }));
    var data = [s.x].concat(s.series.map(function (x) { return x.y; }));
    new uPlot({ width: 760, height: 380, title: s.title, scales: { x: { time: false } },
      axes: [{ label: s.xLabel }, { label: s.yLabel, size: 70 }], series: series }, data, el);
    rendered++;
  });
  window.__chartsRendered = rendered;
})();
`;

export function page(title: string, body: string, charts: readonly ChartSpec[]): string {
  const js = readFileSync(require.resolve('uplot/dist/uPlot.iife.min.js'), 'utf8');
  const css = readFileSync(require.resolve('uplot/dist/uPlot.min.css'), 'utf8');
  const data = JSON.stringify(charts.map((c) => ({ ...c, series: c.series.map((s) => ({ ...s })) }))).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<title>${escapeHtml(title)}</title>
<style>${css}
body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
table{border-collapse:collapse;margin:12px 0;font-size:13px}th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}
th{background:#f3f3f3}td:nth-child(-n+2),th:nth-child(-n+2),td:last-child{text-align:left}tr.chosen td{background:#e8f5e9;font-weight:600}
tr.failed td{color:#a33}.chart{margin:16px 0}pre.diff{background:#f7f7f7;padding:8px;font-size:13px}
.del{color:#b31d28;background:#ffeef0}.add{color:#22863a;background:#e6ffed}.note{color:#555}
figure.bars{margin:16px 0}figcaption{font-weight:600;margin-bottom:4px}
</style></head><body>
<h1>${escapeHtml(title)}</h1>
${body}
<script type="application/json" id="chart-data">${data}</script>
<script>${js}</script>
<script>${PAGE_SCRIPT}</script>
</body></html>
`;
}
