// Try a request: a form made from a model's metadata, sent to the KServe v2 infer endpoint; the answer as a
// table, and the same request for curl and for Python's tritonclient, to copy.
import { access, get, modelPath, post } from './api.js';
import { el, say, table } from './dom.js';
import { chatBox, isTextModel } from './chat.js';
import { curlCommand, defaultShape, defaultValues, parseShape, parseValues, pythonClient } from './tensors.js';

/** Values shown per output; the rest are counted. */
const SHOWN = 256;

export function tryView(main, name) {
  const picker = el('select', { id: 'try-model', onchange: (e) => { location.hash = `#try/${encodeURIComponent(e.target.value)}`; } }, el('option', { value: '' }, 'Choose a model'));
  main.append(el('h2', {}, 'Try a request'), el('label', {}, 'Model ', picker), el('div', { id: 'try-form' }), el('div', { id: 'try-answer' }));
  void fillPicker(picker, name);
  if (name) void buildForm(name);
  return {};
}

async function fillPicker(picker, chosen) {
  try {
    const ready = await post('/v2/repository/index', { ready: true });
    for (const m of ready) picker.append(el('option', { value: m.name, selected: m.name === chosen }, m.name));
  } catch (e) {
    // The index may be restricted while inference is not: a model named in the address still works.
    if (chosen) picker.append(el('option', { value: chosen, selected: true }, chosen));
    say(`The repository index was refused: ${e.message}`, true);
  }
}

async function buildForm(name) {
  const box = document.getElementById('try-form');
  let meta;
  try {
    meta = await get(modelPath(name));
  } catch (e) {
    box.replaceChildren(el('p', { class: 'error' }, `Not available: ${e.message}`));
    return;
  }
  if (isTextModel(meta)) return chatBox(box, name);
  const fields = meta.inputs.map((input) => inputFields(input));
  const form = el('form', { novalidate: true, 'aria-label': `Request to ${name}` },
    ...fields.map((f) => f.node),
    el('button', { type: 'submit' }, 'Send'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void send(name, meta, fields);
  });
  box.replaceChildren(form);
}

function inputFields(input) {
  const shape = defaultShape(input.shape);
  const id = `in-${input.name.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  const shapeField = el('input', { id: `${id}-shape`, value: shape.join(', '), 'aria-describedby': `${id}-error` });
  const dataField = el('textarea', { id: `${id}-data`, rows: 2, 'aria-describedby': `${id}-error` });
  dataField.value = JSON.stringify(defaultValues(input.datatype, shape));
  const error = el('span', { id: `${id}-error`, class: 'error' });
  const node = el('fieldset', {},
    el('legend', {}, `${input.name} (${input.datatype}, shape [${input.shape.join(', ')}])`),
    el('label', {}, `Shape of ${input.name} `, shapeField),
    el('label', {}, `Values of ${input.name} `, dataField),
    error);
  return { input, node, shapeField, dataField, error };
}

/** The request the form holds, or null when a field is wrong (each wrong field says why). */
function readForm(fields) {
  let ok = true;
  const inputs = fields.map((f) => {
    f.error.textContent = '';
    for (const x of [f.shapeField, f.dataField]) x.removeAttribute('aria-invalid');
    try {
      const shape = parseShape(f.shapeField.value, f.input.shape);
      const data = parseValues(f.dataField.value, f.input.datatype, shape.reduce((n, d) => n * d, 1));
      return { name: f.input.name, shape, datatype: f.input.datatype, data };
    } catch (e) {
      ok = false;
      f.error.textContent = `${f.input.name}: ${e.message}`;
      f.dataField.setAttribute('aria-invalid', 'true');
      return null;
    }
  });
  return ok ? { inputs } : null;
}

async function send(name, meta, fields) {
  const body = readForm(fields);
  const answer = document.getElementById('try-answer');
  if (body === null) {
    say('The request has errors: see the fields.', true);
    return;
  }
  const copies = [
    el('h3', {}, 'curl'), el('pre', { 'aria-label': 'curl command' }, curlCommand(location.origin, name, body, access.header ? [access.header] : [])),
    el('h3', {}, 'Python (tritonclient)'), el('pre', { 'aria-label': 'Python tritonclient code' }, pythonClient(location.host, name, body, meta.outputs.map((o) => o.name))),
  ];
  try {
    const res = await post(`${modelPath(name)}/infer`, body);
    say(`${name} answered.`);
    answer.replaceChildren(outputs(res), ...copies);
  } catch (e) {
    say(`${name} refused the request: ${e.message}`, true);
    answer.replaceChildren(el('p', { class: 'error' }, e.message), ...copies);
  }
}

function outputs(res) {
  const rows = res.outputs.map((o) => {
    const shown = o.data.slice(0, SHOWN).map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ');
    return [o.name, o.datatype, `[${o.shape.join(', ')}]`, o.data.length > SHOWN ? `${shown}, … (${o.data.length - SHOWN} more)` : shown];
  });
  return table(`Response of ${res.model_name} version ${res.model_version}`, ['Output', 'Datatype', 'Shape', 'Values'], rows);
}
