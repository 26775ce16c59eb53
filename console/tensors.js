// The values a form field holds for one input: parsed, checked against the datatype and shape, and spelled
// for curl and for Python's tritonclient.

const INTS = { INT8: [-128, 127], INT16: [-32768, 32767], INT32: [-2147483648, 2147483647], UINT8: [0, 255], UINT16: [0, 65535], UINT32: [0, 4294967295], INT64: [-(2 ** 53) + 1, 2 ** 53 - 1], UINT64: [0, 2 ** 53 - 1] };
const FLOATS = new Set(['FP16', 'FP32', 'FP64', 'BF16']);
export const NUMPY = { BOOL: 'np.bool_', INT8: 'np.int8', INT16: 'np.int16', INT32: 'np.int32', INT64: 'np.int64', UINT8: 'np.uint8', UINT16: 'np.uint16', UINT32: 'np.uint32', UINT64: 'np.uint64', FP16: 'np.float16', FP32: 'np.float32', FP64: 'np.float64', BYTES: 'np.object_' };

/** The shape a form starts with: each variable dimension (-1) as 1. */
export const defaultShape = (shape) => shape.map((d) => (d < 0 ? 1 : d));

export const elements = (shape) => shape.reduce((n, d) => n * d, 1);

/** Starting values: zeros, false, or "text" for BYTES. */
export function defaultValues(datatype, shape) {
  const v = datatype === 'BYTES' ? 'text' : datatype === 'BOOL' ? false : 0;
  return Array.from({ length: elements(shape) }, () => v);
}

/** A shape typed as "1, 16" or "[1, 16]": whole numbers of at least 0, matching the model's fixed dimensions. */
export function parseShape(text, modelShape) {
  const parts = text.replace(/[[\]]/g, '').split(',').map((s) => s.trim()).filter((s) => s !== '');
  const shape = parts.map(Number);
  if (shape.some((d) => !Number.isInteger(d) || d < 0)) throw new Error('a shape is whole numbers of at least 0, separated by commas');
  if (shape.length !== modelShape.length) throw new Error(`the model takes ${modelShape.length} dimension(s)`);
  modelShape.forEach((d, i) => {
    if (d >= 0 && shape[i] !== d) throw new Error(`dimension ${i + 1} must be ${d}`);
  });
  return shape;
}

/** Values typed as a JSON array (nested or flat) or as comma-separated values; checked against the datatype and count. */
export function parseValues(text, datatype, count) {
  let values;
  const t = text.trim();
  try {
    values = t.startsWith('[') ? JSON.parse(t).flat(Infinity) : t === '' ? [] : t.split(',').map((s) => s.trim());
  } catch {
    throw new Error('not a JSON array');
  }
  if (values.length !== count) throw new Error(`${count} value(s) expected by the shape, ${values.length} given`);
  return values.map((v) => value(v, datatype));
}

function value(v, datatype) {
  if (datatype === 'BYTES') return String(v);
  if (datatype === 'BOOL') {
    if (v === true || v === 'true' || v === 1 || v === '1') return true;
    if (v === false || v === 'false' || v === 0 || v === '0') return false;
    throw new Error(`${v} is not a boolean`);
  }
  const n = typeof v === 'number' ? v : Number(v);
  if (typeof v === 'string' && v.trim() === '') throw new Error('an empty value');
  if (Number.isNaN(n)) throw new Error(`${v} is not a number`);
  if (FLOATS.has(datatype)) return n;
  const range = INTS[datatype];
  if (!Number.isInteger(n) || n < range[0] || n > range[1]) throw new Error(`${v} is not a ${datatype} value`);
  return n;
}

const quote = (s) => `'${s.replace(/'/g, `'\\''`)}'`;

export function curlCommand(origin, model, body, headerNames) {
  const lines = [`curl -s -X POST ${quote(`${origin}/v2/models/${encodeURIComponent(model)}/infer`)}`, "-H 'Content-Type: application/json'"];
  for (const h of headerNames) lines.push(`-H ${quote(`${h}: <value>`)}`);
  lines.push(`-d ${quote(JSON.stringify(body))}`);
  return lines.join(' \\\n  ');
}

export function pythonClient(host, model, body, outputs) {
  const lines = ['import numpy as np', 'import tritonclient.http as httpclient', '', `client = httpclient.InferenceServerClient(${JSON.stringify(host)})`, 'inputs = []'];
  for (const i of body.inputs) {
    const data = i.datatype === 'BYTES' ? JSON.stringify(i.data) : i.datatype === 'BOOL' ? `[${i.data.map((b) => (b ? 'True' : 'False')).join(', ')}]` : JSON.stringify(i.data);
    lines.push(`inputs.append(httpclient.InferInput(${JSON.stringify(i.name)}, ${JSON.stringify(i.shape)}, ${JSON.stringify(i.datatype)}))`);
    lines.push(`inputs[-1].set_data_from_numpy(np.array(${data}, dtype=${NUMPY[i.datatype] ?? 'np.float32'}).reshape(${JSON.stringify(i.shape)}))`);
  }
  lines.push(`result = client.infer(${JSON.stringify(model)}, inputs)`);
  for (const o of outputs) lines.push(`print(${JSON.stringify(o)}, result.as_numpy(${JSON.stringify(o)}))`);
  return lines.join('\n');
}
