// Live traffic: the statistics extension (GET /v2/models/stats) polled every few seconds and differenced here,
// so the server does no work per request for the console. Percentiles come from the statistics' nereid_
// quantiles when --metrics-config summary_latencies=true (Triton's statistics hold sums and counts only).
import uPlot from './vendor/uPlot.esm.js';
import { get } from './api.js';
import { el, say, table } from './dom.js';
import { rates } from './rates.js';

const POLL_MS = 2000;
/** Five minutes of points. */
const KEEP = 150;
const ALL = '';

const CHARTS = [
  { title: 'Requests/s', series: [['success/s', '#1b7a3a'], ['failures/s', '#b3261e']], pick: (r) => [r.success, r.fail] },
  { title: 'Latency (ms)', series: [['mean', '#1859b5'], ['p50', '#7a5af8'], ['p99', '#e07b00']], pick: (r) => [r.latencyMs, r.p50Ms, r.p99Ms] },
  { title: 'Queue time (ms)', series: [['mean queue', '#0b7285']], pick: (r) => [r.queueMs] },
  { title: 'In flight and pending', series: [['in flight', '#5f3dc4'], ['pending', '#c2255c']], pick: (r) => [r.inflight, r.pending] },
  { title: 'Batch size (mean)', series: [['rows per execution', '#2b8a3e']], pick: (r) => [r.batch] },
  { title: 'Tokens/s (text models)', series: [['generated tokens/s', '#862e9c']], pick: (r) => [r.tokens] },
];

export function trafficView(main) {
  const state = { previous: null, history: new Map(), model: ALL, charts: [], timer: 0 };
  const picker = el('select', { id: 'traffic-model', onchange: (e) => { state.model = e.target.value; draw(state); } }, el('option', { value: ALL }, 'All models'));
  main.append(
    el('h2', {}, 'Traffic'),
    el('p', {}, `The statistics extension, read every ${POLL_MS / 1000} s; rates are differences between two reads.`),
    el('label', {}, 'Model ', picker),
    el('div', { class: 'charts', id: 'charts' }),
    el('div', { id: 'traffic-table' }),
  );
  state.picker = picker;
  state.charts = CHARTS.map((c) => chart(c));
  void poll(state);
  state.timer = setInterval(() => poll(state), POLL_MS);
  return { stop: () => { clearInterval(state.timer); for (const c of state.charts) c.plot.destroy(); } };
}

function chart(spec) {
  const box = el('figure', { class: 'chart', 'data-title': spec.title, 'data-max': '0' }, el('figcaption', {}, spec.title));
  document.getElementById('charts').append(box);
  const opts = {
    width: 420, height: 200, legend: { live: false },
    scales: { x: { time: true } },
    series: [{}, ...spec.series.map(([label, stroke]) => ({ label, stroke, width: 2, spanGaps: false }))],
    axes: [{}, { size: 56 }],
  };
  const plot = new uPlot(opts, [[], ...spec.series.map(() => [])], box);
  return { spec, plot, box };
}

async function poll(state) {
  let stats;
  try {
    stats = await get('/v2/models/stats');
  } catch (e) {
    say(`Statistics refused: ${e.message}`, true);
    return;
  }
  const now = Date.now() / 1000;
  if (state.previous !== null) record(state, rates(state.previous.stats, stats, now - state.previous.at), now);
  state.previous = { stats, at: now };
  syncPicker(state, stats.model_stats);
  draw(state);
}

function record(state, byModel, t) {
  for (const [key, r] of byModel) {
    let h = state.history.get(key);
    if (h === undefined) state.history.set(key, (h = []));
    h.push({ t, r });
    if (h.length > KEEP) h.shift();
  }
}

function syncPicker(state, models) {
  const have = new Set([...state.picker.options].map((o) => o.value));
  for (const m of models) {
    const key = `${m.name}:${m.version}`;
    if (!have.has(key)) state.picker.append(el('option', { value: key }, `${m.name} (version ${m.version})`));
  }
}

function draw(state) {
  const h = state.history.get(state.model) ?? [];
  for (const c of state.charts) {
    const columns = c.spec.series.map(() => []);
    let max = 0;
    for (const p of h) {
      c.spec.pick(p.r).forEach((v, i) => {
        columns[i].push(v ?? null);
        if (v > max) max = v;
      });
    }
    c.plot.setData([h.map((p) => p.t), ...columns]);
    c.box.dataset.max = String(max);
  }
  drawTable(state);
}

const fixed = (v, digits = 1) => (v === undefined || v === null ? '' : v.toFixed(digits));

function drawTable(state) {
  const rows = [];
  for (const [key, h] of state.history) {
    if (key === ALL) continue;
    const r = h.at(-1).r;
    rows.push([key, fixed(r.success + r.fail), fixed(r.fail), r.reasons, fixed(r.latencyMs, 2), fixed(r.p99Ms, 2), fixed(r.queueMs, 2), String(r.inflight), String(r.pending), r.batches, fixed(r.tokens), fixed(r.ttftMs, 1)]);
  }
  document.getElementById('traffic-table').replaceChildren(table('Last interval, per model version',
    ['Model:version', 'Requests/s', 'Failures/s', 'Failures by reason', 'Mean latency (ms)', 'p99 (ms)', 'Mean queue (ms)', 'In flight', 'Pending', 'Batch sizes', 'Tokens/s', 'Mean first response (ms)'], rows));
}
