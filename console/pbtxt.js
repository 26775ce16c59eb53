// A model configuration's JSON form (as GET /v2/models/{m}/config answers it) printed in protobuf text form,
// the way config.pbtxt is written, for reading only.

/** Fields whose JSON strings are enum names, printed bare. */
const ENUMS = new Set(['data_type', 'kind', 'format', 'type', 'timeout_action', 'batch_input_kind', 'kind_', 'modality']);
/** map<string, ...> fields: printed as repeated { key value } entries. */
const MAPS = new Set(['parameters', 'input_map', 'output_map', 'cc_model_filenames', 'metric_tags', 'inputs_map']);
/** int64 and uint64 fields arrive as strings in JSON; printed bare when they are whole numbers. */
const INTEGER = /^-?[0-9]+$/;

function scalar(key, v) {
  if (typeof v !== 'string') return String(v);
  if (ENUMS.has(key) || INTEGER.test(v)) return v;
  return JSON.stringify(v);
}

function field(key, v, pad, out) {
  if (Array.isArray(v)) {
    if (v.length === 0) return;
    if (typeof v[0] === 'object') for (const e of v) message(key, e, pad, out);
    else out.push(`${pad}${key}: [ ${v.map((e) => scalar(key, e)).join(', ')} ]`);
  } else if (v !== null && typeof v === 'object') {
    if (MAPS.has(key)) {
      for (const [k, e] of Object.entries(v)) message(key, { key: k, value: e }, pad, out);
    } else message(key, v, pad, out);
  } else out.push(`${pad}${key}: ${scalar(key, v)}`);
}

function message(key, obj, pad, out) {
  if (typeof obj !== 'object' || obj === null) return out.push(`${pad}${key}: ${scalar(key, obj)}`);
  out.push(`${pad}${key} {`);
  for (const [k, v] of Object.entries(obj)) field(k, v, `${pad}  `, out);
  out.push(`${pad}}`);
}

export function pbtxt(config) {
  const out = [];
  for (const [k, v] of Object.entries(config)) field(k, v, '', out);
  return out.join('\n');
}
