// Traces: the latest traces of Triton mode (GET /v2/nereid/traces) as timelines of their stages, ensemble
// steps and other child requests nested under their parent; and the trace settings, read and changed through
// Triton's trace extension (/v2/trace/setting, /v2/models/{m}/trace/setting).
import { get, modelPath, post } from './api.js';
import { el, say } from './dom.js';

/** Stages drawn, each between two of Triton's timestamps. */
const STAGES = [
  ['HTTP receive', 'HTTP_RECV_START', 'HTTP_RECV_END'],
  ['queue', 'QUEUE_START', 'COMPUTE_START'],
  ['compute input', 'COMPUTE_START', 'COMPUTE_INPUT_END'],
  ['infer', 'COMPUTE_INPUT_END', 'COMPUTE_OUTPUT_START'],
  ['output', 'COMPUTE_OUTPUT_START', 'COMPUTE_END'],
  ['HTTP send', 'HTTP_SEND_START', 'HTTP_SEND_END'],
];
const SHOWN = 20;
const LEVELS = { OFF: ['OFF'], TIMESTAMPS: ['TIMESTAMPS'], TENSORS: ['TENSORS'], 'TIMESTAMPS and TENSORS': ['TIMESTAMPS', 'TENSORS'] };

export function tracesView(main, model) {
  const picker = el('select', { id: 'trace-model', onchange: (e) => { location.hash = `#traces/${encodeURIComponent(e.target.value)}`; } }, el('option', { value: '' }, 'All models (global setting)'));
  main.append(
    el('h2', {}, 'Traces'),
    el('label', {}, 'Model ', picker),
    el('div', { id: 'trace-setting' }),
    el('h3', {}, 'Latest traces'),
    el('button', { type: 'button', onclick: () => showTraces(model) }, 'Refresh traces'),
    el('div', { id: 'trace-list' }),
  );
  void fillPicker(picker, model);
  void showSetting(model);
  void showTraces(model);
  return {};
}

async function fillPicker(picker, chosen) {
  try {
    for (const m of await post('/v2/repository/index', { ready: true })) picker.append(el('option', { value: m.name, selected: m.name === chosen }, m.name));
  } catch {
    if (chosen) picker.append(el('option', { value: chosen, selected: true }, chosen));
  }
}

const settingPath = (model) => (model ? `${modelPath(model)}/trace/setting` : '/v2/trace/setting');

async function showSetting(model) {
  const box = document.getElementById('trace-setting');
  let s;
  try {
    s = await get(settingPath(model));
  } catch (e) {
    box.replaceChildren(el('p', { class: 'error' }, `The trace setting was refused: ${e.message}`));
    return;
  }
  const level = el('select', { id: 'trace-level' }, Object.keys(LEVELS).map((k) => el('option', { value: k, selected: LEVELS[k].join() === s.trace_level.join() }, k)));
  const field = (id, label, value) => el('label', {}, `${label} `, el('input', { id, value, inputmode: 'numeric' }));
  const form = el('form', { 'aria-label': 'Trace setting' },
    el('label', {}, 'Trace level ', level),
    field('trace-rate', 'Trace rate (one request in N)', s.trace_rate),
    field('trace-count', 'Trace count (-1: no limit)', s.trace_count),
    field('log-frequency', 'Log frequency (0: at the end)', s.log_frequency),
    el('p', {}, `Mode ${s.trace_mode ?? 'triton'}, file ${s.trace_file || '(none)'}`),
    el('button', { type: 'submit' }, model ? `Apply to ${model}` : 'Apply to all models'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void apply(model, form);
  });
  box.replaceChildren(form);
}

async function apply(model, form) {
  const value = (id) => form.querySelector(`#${id}`).value.trim();
  const body = { trace_level: LEVELS[value('trace-level')], trace_rate: value('trace-rate'), trace_count: value('trace-count'), log_frequency: value('log-frequency') };
  try {
    await post(settingPath(model), body);
    say(`Trace setting applied${model ? ` to ${model}` : ''}.`);
  } catch (e) {
    say(`The trace setting was refused: ${e.message}`, true);
  }
  await showSetting(model);
}

async function showTraces(model) {
  const box = document.getElementById('trace-list');
  let traces;
  try {
    traces = (await get('/v2/nereid/traces')).traces;
  } catch (e) {
    box.replaceChildren(el('p', { class: 'error' }, `Traces were refused: ${e.message}`));
    return;
  }
  const trees = traces.map(tree).filter((t) => t !== null && (!model || t.model === model)).slice(0, SHOWN);
  box.replaceChildren(trees.length === 0
    ? el('p', {}, 'No trace yet: traces are kept in Triton mode while the trace level is not OFF.')
    : el('ol', { class: 'traces' }, trees.map((t) => el('li', {}, timeline(t)))));
}

/** One trace's records grouped by id: the root request and its children, each with its timestamps. */
function tree(records) {
  const byId = new Map();
  const node = (id) => {
    if (!byId.has(id)) byId.set(id, { id, model: '', version: '', parent: 0, stamps: new Map(), children: [] });
    return byId.get(id);
  };
  for (const r of records) {
    const n = node(r.id);
    if (r.model_name !== undefined) Object.assign(n, { model: r.model_name, version: r.model_version, parent: r.parent_id ?? 0 });
    for (const t of r.timestamps ?? []) n.stamps.set(t.name, t.ns);
  }
  let root = null;
  for (const n of byId.values()) {
    const parent = n.parent !== 0 ? byId.get(n.parent) : undefined;
    if (parent) parent.children.push(n);
    else root ??= n;
  }
  return root;
}

function timeline(root) {
  let first = Infinity;
  let last = -Infinity;
  const walk = (n) => {
    for (const ns of n.stamps.values()) {
      first = Math.min(first, ns);
      last = Math.max(last, ns);
    }
    n.children.forEach(walk);
  };
  walk(root);
  const span = Math.max(last - first, 1);
  return el('div', { class: 'timeline' },
    el('p', {}, `Trace ${root.id}: ${root.model} version ${root.version}, ${((last - first) / 1e6).toFixed(3)} ms`),
    rows(root, first, span, 0));
}

function rows(n, first, span, depth) {
  const bars = el('div', { class: 'track', 'aria-hidden': 'true' });
  const said = [];
  for (const [name, from, to] of STAGES) {
    const a = n.stamps.get(from);
    const b = n.stamps.get(to);
    if (a === undefined || b === undefined) continue;
    const bar = el('span', { class: `bar stage-${name.replace(/ /g, '-')}`, title: `${name} ${((b - a) / 1e6).toFixed(3)} ms` });
    // Positions through the CSSOM, which the page's style-src allows (no inline style attribute).
    bar.style.left = `${((a - first) / span) * 100}%`;
    bar.style.width = `${Math.max(((b - a) / span) * 100, 0.3)}%`;
    bars.append(bar);
    said.push(`${name} ${((b - a) / 1e6).toFixed(3)} ms`);
  }
  const row = el('div', { class: 'trace-row', 'data-depth': String(depth) },
    el('span', { class: 'trace-label' }, `${'↳ '.repeat(depth ? 1 : 0)}${n.model} v${n.version} (id ${n.id})`), bars,
    el('span', { class: 'trace-stages' }, said.join(', ')));
  row.style.marginLeft = `${depth * 1.5}rem`;
  return [row, ...n.children.flatMap((c) => rows(c, first, span, depth + 1))];
}
