// Models: the repository index with each version's state and reason, a model's metadata and configuration,
// and the model repository extension's load and unload.
import { get, modelPath, post } from './api.js';
import { bytes, el, say, table } from './dom.js';
import { pbtxt } from './pbtxt.js';

const ACTIONS = {
  load: { label: 'Load', doing: 'Loading', done: 'loaded', path: 'load' },
  unload: { label: 'Unload', doing: 'Unloading', done: 'unloaded', path: 'unload' },
  // Triton's load of a loaded model loads it again from the repository.
  reload: { label: 'Reload', doing: 'Reloading', done: 'reloaded', path: 'load' },
};

export function modelsView(main, name) {
  if (name) return detailsView(main, name);
  main.append(el('h2', {}, 'Models'), el('button', { type: 'button', onclick: () => refresh() }, 'Refresh'), el('div', { id: 'models' }));
  void refresh();
  return {};
}

async function refresh() {
  const box = document.getElementById('models');
  if (!box) return;
  let index;
  try {
    index = await post('/v2/repository/index', {});
  } catch (e) {
    box.replaceChildren(el('p', { class: 'error' }, `The repository index was refused: ${e.message}`));
    return;
  }
  const rows = index.map((m) => [
    el('a', { href: `#models/${encodeURIComponent(m.name)}` }, m.name),
    m.version ?? '',
    // Triton's index gives no state for a model never loaded.
    el('span', { class: `state-${m.state ?? 'none'}` }, m.state ?? 'not loaded'),
    m.reason ? el('span', { class: 'reason' }, m.reason) : '',
    bytes(m.nereid_memory_bytes),
    buttons(m.name, m.state === 'READY'),
  ]);
  box.replaceChildren(table(`${index.length} model version(s) in the repository`, ['Model', 'Version', 'State', 'Reason', 'Memory', 'Actions'], rows));
}

function buttons(name, ready) {
  const kinds = ready ? ['unload', 'reload'] : ['load'];
  return kinds.map((k) => el('button', { type: 'button', 'aria-label': `${ACTIONS[k].label} ${name}`, onclick: (e) => control(name, k, e.currentTarget) }, ACTIONS[k].label));
}

/** A load, unload or reload after confirmation, its progress and outcome said in the status line. */
async function control(name, kind, button) {
  const a = ACTIONS[kind];
  if (!window.confirm(`${a.label} model "${name}"?`)) return;
  button.disabled = true;
  say(`${a.doing} ${name}…`);
  try {
    await post(`/v2/repository/models/${encodeURIComponent(name)}/${a.path}`, {});
    say(`${name} ${a.done}.`);
  } catch (e) {
    say(`${a.label} ${name} failed: ${e.message}`, true);
  }
  button.disabled = false;
  await refresh();
}

async function detailsView(main, name) {
  main.append(el('p', {}, el('a', { href: '#models' }, '← All models'), ' · ', el('a', { href: `#try/${encodeURIComponent(name)}` }, 'Try a request')), el('h2', {}, name));
  const box = el('div', { class: 'details' });
  main.append(box);
  let meta;
  let config;
  try {
    [meta, config] = await Promise.all([get(modelPath(name)), get(`${modelPath(name)}/config`)]);
  } catch (e) {
    box.append(el('p', { class: 'error' }, `Not available: ${e.message}`));
    return {};
  }
  box.append(
    el('p', {}, `Platform ${meta.platform || '—'}, backend ${config.backend || '—'}, versions ${(meta.versions ?? []).join(', ')}, max batch size ${config.max_batch_size ?? 0}`),
    tensors('Inputs', meta.inputs), tensors('Outputs', meta.outputs),
    table('Instance groups', ['Name', 'Kind', 'Count'], (config.instance_group ?? []).map((g) => [g.name ?? '', g.kind ?? '', String(g.count ?? 1)])),
    el('h3', {}, 'Configuration (config.pbtxt form, read-only)'),
    el('pre', { 'aria-label': `Configuration of ${name}` }, pbtxt(config)),
  );
  return {};
}

function tensors(caption, list) {
  return table(caption, ['Name', 'Datatype', 'Shape'], (list ?? []).map((t) => [t.name, t.datatype, `[${t.shape.join(', ')}]`]));
}
