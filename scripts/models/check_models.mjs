#!/usr/bin/env node
// Loads every generated model with onnxruntime-node and runs one inference
// with the shapes from its config.pbtxt (or, without a config, from the ONNX
// graph), then checks the outputs against what the model is meant to compute.
// Models that are meant to be broken are checked to fail.
//
//   node scripts/models/check_models.mjs            # examples + fixtures
//   node scripts/models/check_models.mjs --verbose  # also print output values
//
// Prints OK/FAIL per model (version) and exits 1 if anything FAILs.
// Independent of src/: it has its own minimal protobuf-text reader, enough for
// the configs that scripts/models/make_*.py write.

import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const require = createRequire(join(ROOT, 'package.json'));
const ort = require('onnxruntime-node');
const VERBOSE = process.argv.includes('--verbose');

// ------------------------------------------------------------ pbtxt reader

const ESC = { n: '\n', t: '\t', r: '\r', a: '\x07', b: '\b', f: '\f', v: '\v', '\\': '\\', "'": "'", '"': '"', '?': '?' };
/** C-style escapes of a protobuf text string literal (bytes taken as Latin-1 code units). */
function unescapeC(s) {
  return s.replace(/\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)/g, (_, e) =>
    e[0] === 'x' ? String.fromCharCode(parseInt(e.slice(1), 16))
      : /^[0-7]/.test(e) ? String.fromCharCode(parseInt(e, 8))
        : ESC[e] ?? e);
}

/** Parses protobuf text format into { field: [values...] } (every field repeated). */
export function parsePbtxt(text) {
  const toks = [];
  const re = /\s+|#[^\n]*|("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')|([-+]?[0-9][0-9a-zA-Z_.+-]*|[-+]?\.[0-9][0-9a-zA-Z_.+-]*)|([A-Za-z_][A-Za-z0-9_.]*)|([{}\[\]:,;<>])|(.)/gy;
  let m;
  while ((m = re.exec(text)) !== null) {
    if (m[1] !== undefined) toks.push({ k: 'str', v: unescapeC(m[1].slice(1, -1)) });
    else if (m[2] !== undefined) toks.push({ k: 'num', v: m[2] });
    else if (m[3] !== undefined) toks.push({ k: 'id', v: m[3] });
    else if (m[4] !== undefined) toks.push({ k: 'p', v: m[4] });
    else if (m[5] !== undefined) throw new Error(`unexpected character '${m[5]}'`);
  }
  let i = 0;
  const peek = () => toks[i];
  const isP = (v) => toks[i] && toks[i].k === 'p' && toks[i].v === v;
  const expectP = (v) => { if (!isP(v)) throw new Error(`expected '${v}' at token ${i} (${toks[i] ? toks[i].v : 'end of input'})`); i++; };
  const scalar = () => {
    const t = toks[i++];
    if (!t || t.k === 'p') throw new Error(`expected a value at token ${i - 1}`);
    if (t.k === 'str') { let s = t.v; while (toks[i] && toks[i].k === 'str') s += toks[i++].v; return s; }
    if (t.k === 'num') return Number(t.v.replace(/[fF]$/, ''));
    if (t.v === 'true' || t.v === 'True' || t.v === 't') return true;
    if (t.v === 'false' || t.v === 'False' || t.v === 'f') return false;
    return t.v; // enum identifier
  };
  const message = (close) => {
    const obj = {};
    for (;;) {
      if (close === null ? i >= toks.length : isP(close)) { if (close) i++; return obj; }
      const t = toks[i++];
      if (!t) throw new Error(`unexpected end of input (missing '${close}')`);
      if (t.k !== 'id') throw new Error(`expected a field name at token ${i - 1} (${t.v})`);
      const add = (v) => { (obj[t.v] ??= []).push(v); };
      const colon = isP(':');
      if (colon) i++;
      if (isP('{') || isP('<')) { const c = peek().v === '{' ? '}' : '>'; i++; add(message(c)); }
      else if (isP('[')) {
        i++;
        while (!isP(']')) {
          if (isP('{') || isP('<')) { const c = peek().v === '{' ? '}' : '>'; i++; add(message(c)); }
          else if (colon) add(scalar());
          else throw new Error(`field '${t.v}': scalar list needs ':'`);
          if (isP(',')) i++; else if (!isP(']')) throw new Error(`expected ',' or ']' in list '${t.v}'`);
        }
        i++;
      } else if (colon) add(scalar());
      else throw new Error(`expected ':' after field '${t.v}'`);
      if (isP(',') || isP(';')) i++;
    }
  };
  return message(null);
}

const one = (o, k, d = undefined) => (o && o[k] && o[k].length ? o[k][0] : d);
const all = (o, k) => (o && o[k]) || [];

// ---------------------------------------------------------------- tensors

const ORT_TYPE = {
  TYPE_BOOL: 'bool', TYPE_UINT8: 'uint8', TYPE_UINT16: 'uint16', TYPE_UINT32: 'uint32',
  TYPE_UINT64: 'uint64', TYPE_INT8: 'int8', TYPE_INT16: 'int16', TYPE_INT32: 'int32',
  TYPE_INT64: 'int64', TYPE_FP16: 'float16', TYPE_FP32: 'float32', TYPE_FP64: 'float64',
  TYPE_STRING: 'string',
};
const ARRAY = {
  bool: Uint8Array, uint8: Uint8Array, uint16: Uint16Array, uint32: Uint32Array,
  uint64: BigUint64Array, int8: Int8Array, int16: Int16Array, int32: Int32Array,
  int64: BigInt64Array, float16: Uint16Array, float32: Float32Array, float64: Float64Array,
};
const F16 = [0x0000, 0x3c00, 0x4000, 0x4200, 0x4400, 0x4500, 0x4600, 0x4700]; // 0..7 in fp16

/** A deterministic tensor: element i = ((i + 3·salt) % 7) + 1 (or its string / fp16 / bool form). */
function makeTensor(type, shape, fill = 'seq', rng = null, salt = 0) {
  const n = shape.reduce((a, b) => a * b, 1);
  const val = (i) => (fill === 'zero' ? 0 : fill === 'random' ? Math.floor(rng() * 100) - 50 : ((i + 3 * salt) % 7) + 1);
  if (type === 'string') return new ort.Tensor('string', Array.from({ length: n }, (_, i) => String(val(i))), shape);
  const A = ARRAY[type];
  const data = new A(n);
  for (let i = 0; i < n; i++) {
    const v = val(i);
    if (type === 'bool') data[i] = v & 1;
    else if (type === 'float16') data[i] = F16[Math.abs(v) % 8];
    else if (A === BigInt64Array || A === BigUint64Array) data[i] = BigInt(type === 'uint64' ? Math.abs(v) : v);
    else data[i] = type.startsWith('uint') ? Math.abs(v) : v;
  }
  return new ort.Tensor(type, data, shape);
}

function mulberry32(seed) {
  return () => {
    seed |= 0; seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Tensor from a Triton warmup data file (raw little-endian; BYTES = 4-byte LE length + bytes). */
function tensorFromFile(type, shape, file) {
  const buf = readFileSync(file);
  const n = shape.reduce((a, b) => a * b, 1);
  if (type === 'string') {
    const items = [];
    let off = 0;
    while (items.length < n) {
      if (off + 4 > buf.length) throw new Error(`${file}: ${items.length} of ${n} BYTES elements`);
      const len = buf.readUInt32LE(off);
      items.push(buf.subarray(off + 4, off + 4 + len).toString('utf8'));
      off += 4 + len;
    }
    return new ort.Tensor('string', items, shape);
  }
  const A = ARRAY[type];
  if (buf.length < n * A.BYTES_PER_ELEMENT) throw new Error(`${file}: ${buf.length} bytes, need ${n * A.BYTES_PER_ELEMENT}`);
  const copy = new Uint8Array(buf.subarray(0, n * A.BYTES_PER_ELEMENT));
  return new ort.Tensor(type, new A(copy.buffer), shape);
}

const arr = (t) => Array.from(t.data, (x) => (typeof x === 'bigint' ? Number(x) : x));
const fmt = (t) => `${t.type}[${t.dims.join(',')}] ${JSON.stringify(arr(t).slice(0, 8))}${t.size > 8 ? '…' : ''}`;

// ------------------------------------------------- per-model expectations

function eq(a, b, what) {
  const x = JSON.stringify(a), y = JSON.stringify(b);
  if (x !== y) throw new Error(`${what}: got ${x.slice(0, 200)}, want ${y.slice(0, 200)}`);
}
const wrap8 = (v) => ((v + 128) & 255) - 128;
const close = (a, b, what, tol = 1e-5) => { a.forEach((v, i) => { if (Math.abs(v - b[i]) > tol) throw new Error(`${what}[${i}]: ${v} vs ${b[i]}`); }); };

// Each check gets (inputs, outputs, version) and throws on a mismatch.
const CHECKS = {
  'examples/simple': (i, o) => {
    eq(arr(o.OUTPUT0), arr(i.INPUT0).map((v, k) => v + arr(i.INPUT1)[k]), 'OUTPUT0');
    eq(arr(o.OUTPUT1), arr(i.INPUT0).map((v, k) => v - arr(i.INPUT1)[k]), 'OUTPUT1');
  },
  'examples/simple_int8': (i, o) => {
    eq(arr(o.OUTPUT0), arr(i.INPUT0).map((v, k) => wrap8(v + arr(i.INPUT1)[k])), 'OUTPUT0');
    eq(arr(o.OUTPUT1), arr(i.INPUT0).map((v, k) => wrap8(v - arr(i.INPUT1)[k])), 'OUTPUT1');
  },
  'examples/simple_string': (i, o) => {
    eq(o.OUTPUT0.data, i.INPUT0.data.map((v, k) => String(Number(v) + Number(i.INPUT1.data[k]))), 'OUTPUT0');
    eq(o.OUTPUT1.data, i.INPUT0.data.map((v, k) => String(Number(v) - Number(i.INPUT1.data[k]))), 'OUTPUT1');
  },
  'examples/digits': (i, o) => {
    const p = arr(o.PROBABILITIES);
    for (let r = 0; r < p.length / 10; r++) {
      const s = p.slice(r * 10, r * 10 + 10).reduce((a, b) => a + b, 0);
      if (Math.abs(s - 1) > 1e-4 || p.some((v) => v < 0)) throw new Error(`row ${r} is not a distribution (sum ${s})`);
    }
  },
  'versions/vmodel': (i, o, v) => eq(arr(o.OUTPUT0), arr(i.INPUT0).map((x) => x + Number(v)), 'OUTPUT0'),
  'reshape/reshape_2x2': (i, o) => {
    const x = arr(i.INPUT0), y = [];
    for (let b = 0; b < x.length; b += 4) y.push(x[b], x[b + 2], x[b + 1], x[b + 3]);
    eq(arr(o.OUTPUT0), y, 'OUTPUT0');
  },
  'reshape/reshape_scalar': (i, o) => eq(arr(o.OUTPUT0), arr(i.INPUT0).map((x) => 3 * x), 'OUTPUT0'),
  'reshape/reshape_nobatch': (i, o) => eq(arr(o.OUTPUT0), arr(i.INPUT0).map((x) => x + 1), 'OUTPUT0'),
  'autocomplete/ac_scalar_output': (i, o) => {
    const x = arr(i.INPUT0), n = i.INPUT0.dims[0];
    close(arr(o.OUTPUT0), Array.from({ length: n }, (_, b) => x[3 * b] + x[3 * b + 1] + x[3 * b + 2]), 'OUTPUT0');
  },
  'autocomplete/ac_output_fixed': (i, o) => {
    const x = arr(i.INPUT0), rows = i.INPUT0.dims[0];
    close(arr(o.OUTPUT0), [0, 1, 2, 3].map((c) => Array.from({ length: rows }, (_, r) => x[4 * r + c]).reduce((a, b) => a + b, 0)), 'OUTPUT0');
  },
  'autocomplete/ac_nobatch': (i, o) => eq(arr(o.OUTPUT0), arr(i.INPUT0).map((x) => -x), 'OUTPUT0'),
  'autocomplete/ac_mbs_nobatch_error': (i, o) => eq(arr(o.OUTPUT0), arr(i.INPUT0).map((x) => -x), 'OUTPUT0'),
};
for (const m of ['ac_batch', 'ac_mbs_zero', 'ac_mbs_two', 'ac_mbs_one', 'ac_inputs_only']) {
  CHECKS[`autocomplete/${m}`] = (i, o) => {
    eq(arr(o.OUTPUT0), arr(i.INPUT0).map((x) => 2 * x), 'OUTPUT0');
    eq(arr(o.OUTPUT1), arr(i.INPUT1), 'OUTPUT1');
  };
}
// Extra inputs run through CHECKS after the default run: the data Triton's
// client examples send, and edge cases (int8 wrap-around, negative strings).
const T = (type, data, shape) => new ort.Tensor(type, data, shape);
const range16 = (f) => Array.from({ length: 16 }, (_, i) => f(i));
const CASES = {
  'examples/simple': [
    { INPUT0: T('int32', Int32Array.from(range16((i) => i)), [1, 16]), INPUT1: T('int32', new Int32Array(16).fill(-1), [1, 16]) },
  ],
  'examples/simple_int8': [
    { INPUT0: T('int8', Int8Array.from(range16((i) => i)), [1, 16]), INPUT1: T('int8', new Int8Array(16).fill(1), [1, 16]) },
    { INPUT0: T('int8', Int8Array.from(range16((i) => (i < 8 ? 120 + i : -128 + i))), [1, 16]), INPUT1: T('int8', new Int8Array(16).fill(5), [1, 16]) },
  ],
  'examples/simple_string': [
    { INPUT0: T('string', range16((i) => String(i)), [1, 16]), INPUT1: T('string', range16(() => '1'), [1, 16]) },
    { INPUT0: T('string', range16((i) => String(i * 1000 - 7000)), [1, 16]), INPUT1: T('string', range16((i) => String(-i)), [1, 16]) },
  ],
};

/** Default check: OUTPUTk == INPUTk (identity models). */
function identityCheck(i, o) {
  for (const name of Object.keys(o)) {
    const src = i[name.replace('OUTPUT', 'INPUT')];
    if (!src) continue;
    eq(o[name].type, src.type, `${name} type`);
    eq(Array.from(o[name].dims), Array.from(src.dims), `${name} shape`);
    eq(arr(o[name]), arr(src), name);
  }
}

// Models that must fail somewhere (config, load, or Triton-level rules this
// script re-checks). Value: the stage that must fail.
const EXPECT_FAIL = {
  'broken/bad_onnx': 'load',
  'broken/bad_config': 'config',
  'broken/wrong_name': 'config',
  'broken/missing_file': 'load',
  'autocomplete/ac_mbs_nobatch_error': 'autocomplete',
  'warmup/warmup_missing_file': 'warmup',
};

// Expected auto-complete result for models without inputs/outputs in config:
// { mbs, dynamic_batching }.
const EXPECT_AUTOCOMPLETE = {
  'autocomplete/ac_batch': { mbs: 4, dyn: true },
  'autocomplete/ac_nobatch': { mbs: 0, dyn: false },
  'autocomplete/ac_scalar_output': { mbs: 4, dyn: true, scalarOutputs: ['OUTPUT0'] },
  'autocomplete/ac_output_fixed': { mbs: 0, dyn: false },
  'autocomplete/ac_mbs_zero': { mbs: 4, dyn: true },
  'autocomplete/ac_mbs_two': { mbs: 2, dyn: true },
  'autocomplete/ac_mbs_one': { mbs: 1, dyn: false },
  'autocomplete/ac_inputs_only': { mbs: 4, dyn: true },
};

// ------------------------------------------------------------------ runner

const symbolic = (d) => typeof d !== 'number' || d < 0;

/** Triton's ORT auto-complete, reduced to what the fixtures exercise (facts §3). */
function autocomplete(config, session) {
  const meta = [...session.inputMetadata, ...session.outputMetadata];
  const capable = meta.every((m) => m.shape.length >= 1 && symbolic(m.shape[0]));
  let mbs = Number(one(config, 'max_batch_size', 0));
  if (mbs === 0 && capable) mbs = 4;
  else if (mbs !== 0 && !capable) throw new Error('model does not support batching while non-zero max_batch_size is specified');
  const dyn = capable && mbs > 1 && !config.dynamic_batching && !config.sequence_batching;
  const fill = (m) => {
    let dims = (mbs > 0 ? m.shape.slice(1) : m.shape).map((d) => (symbolic(d) ? -1 : d));
    const t = { name: [m.name], data_type: [Object.keys(ORT_TYPE).find((k) => ORT_TYPE[k] === m.type)], dims };
    if (dims.length === 0) { t.dims = [1]; if (mbs > 0) t.reshape = [{ shape: [] }]; }
    return t;
  };
  const out = { ...config, max_batch_size: [mbs] };
  if (!config.input) out.input = session.inputMetadata.map(fill);
  if (!config.output) out.output = session.outputMetadata.map(fill);
  return { config: out, capable, dyn };
}

function modelShape(t, mbs, batch) {
  const r = one(t, 'reshape');
  const dims = r ? all(r, 'shape') : all(t, 'dims');
  return [...(mbs > 0 ? [batch] : []), ...dims.map((d) => (d < 0 ? 2 : d))];
}

async function checkVersion(key, dir, config, version) {
  const file = join(dir, String(version), 'model.onnx');
  if (!existsSync(file)) throw Object.assign(new Error(`${relative(ROOT, file)} does not exist`), { stage: 'load' });
  let session;
  try { session = await ort.InferenceSession.create(file); } catch (e) { throw Object.assign(e, { stage: 'load' }); }
  let cfg = config;
  let note = '';
  if (!config.input || !config.output) {
    let ac;
    try { ac = autocomplete(config, session); } catch (e) { throw Object.assign(e, { stage: 'autocomplete' }); }
    cfg = ac.config;
    const want = EXPECT_AUTOCOMPLETE[key];
    if (want) {
      eq(Number(one(cfg, 'max_batch_size')), want.mbs, 'auto-completed max_batch_size');
      eq(ac.dyn, want.dyn, 'auto-complete adds dynamic_batching');
      for (const name of want.scalarOutputs || []) {
        const o = all(cfg, 'output').find((t) => one(t, 'name') === name);
        eq([all(o, 'dims'), all(one(o, 'reshape'), 'shape')], [[1], []], `${name} dims/reshape`);
      }
    }
    note = ` [auto-complete: mbs ${one(cfg, 'max_batch_size')}${ac.dyn ? ', dynamic_batching' : ''}; ` +
      all(cfg, 'input').concat(all(cfg, 'output')).map((t) => `${one(t, 'name')} ${one(t, 'data_type')} [${all(t, 'dims')}]${one(t, 'reshape') ? ' reshape [' + all(one(t, 'reshape'), 'shape') + ']' : ''}`).join(', ') + ']';
  } else {
    // Triton-level check: a non-zero max_batch_size needs a batch dim in the graph.
    const mbs = Number(one(config, 'max_batch_size', 0));
    for (const m of [...session.inputMetadata, ...session.outputMetadata]) {
      if (mbs > 0 && (m.shape.length === 0 || !symbolic(m.shape[0]))) {
        throw Object.assign(new Error(`${m.name}: max_batch_size ${mbs} but first dim is ${m.shape[0]}`), { stage: 'autocomplete' });
      }
    }
  }
  const mbs = Number(one(cfg, 'max_batch_size', 0));
  const batch = mbs >= 2 ? 2 : 1;
  const inputs = {};
  all(cfg, 'input').forEach((t, k) => {
    inputs[one(t, 'name')] = makeTensor(ORT_TYPE[one(t, 'data_type')], modelShape(t, mbs, batch), 'seq', null, k);
  });
  const t0 = performance.now();
  const outputs = await session.run(inputs);
  const ms = performance.now() - t0;
  for (const t of all(cfg, 'output')) {
    const name = one(t, 'name');
    const o = outputs[name];
    if (!o) throw new Error(`output ${name} missing`);
    if (o.type !== ORT_TYPE[one(t, 'data_type')]) throw new Error(`${name}: type ${o.type}, config says ${one(t, 'data_type')}`);
    const want = modelShape(t, mbs, batch);
    if (want.length !== o.dims.length) throw new Error(`${name}: shape [${o.dims}], config gives rank ${want.length}`);
    // variable dims (-1) were filled with 2 for inputs; outputs may differ there.
    const dims = one(t, 'reshape') ? all(one(t, 'reshape'), 'shape') : all(t, 'dims');
    const full = [...(mbs > 0 ? [batch] : []), ...dims];
    full.forEach((d, k) => { if (d >= 0 && o.dims[k] !== d) throw new Error(`${name}: shape [${o.dims}], config [${full}]`); });
  }
  const check = CHECKS[key] || identityCheck;
  check(inputs, outputs, version);
  for (const feeds of CASES[key] || []) check(feeds, await session.run(feeds), version);
  if (CASES[key]) note += ` [+${CASES[key].length} client-example case(s)]`;
  if (VERBOSE) for (const [n, t] of Object.entries(outputs)) note += `\n      ${n} = ${fmt(t)}`;

  // model_warmup samples, as Triton would run them at load time.
  let w = 0;
  for (const sample of all(cfg, 'model_warmup')) {
    const bs = Math.max(1, Number(one(sample, 'batch_size', 1)));
    const feeds = {};
    for (const entry of all(sample, 'inputs')) {
      const name = one(entry, 'key'), v = one(entry, 'value');
      const type = ORT_TYPE[one(v, 'data_type')];
      const shape = [...(mbs > 0 ? [bs] : []), ...all(v, 'dims')];
      try {
        if (one(v, 'zero_data')) feeds[name] = makeTensor(type, shape, 'zero');
        else if (one(v, 'random_data')) feeds[name] = makeTensor(type, shape, 'random', mulberry32(7));
        else if (one(v, 'input_data_file') !== undefined) feeds[name] = tensorFromFile(type, shape, join(dir, 'warmup', one(v, 'input_data_file')));
        else throw new Error(`warmup input ${name} has no data`);
      } catch (e) { throw Object.assign(e, { stage: 'warmup' }); }
    }
    const count = Math.max(1, Number(one(sample, 'count', 0)));
    for (let c = 0; c < count; c++) identityCheck(feeds, await session.run(feeds));
    w++;
  }
  if (w) note += ` [${w} warmup sample(s) OK]`;
  return { ms, note, session, inputs };
}

async function checkModel(repoLabel, dir, results) {
  const model = dir.split(/[\\/]/).pop();
  const key = `${repoLabel}/${model}`;
  const expect = EXPECT_FAIL[key];
  const report = (ok, msg) => { results.push(ok); console.log(`${ok ? 'OK  ' : 'FAIL'} ${key}${msg}`); };
  let stage = 'config';
  try {
    let config = {};
    const cfgFile = join(dir, 'config.pbtxt');
    if (existsSync(cfgFile)) {
      config = parsePbtxt(readFileSync(cfgFile, 'utf8'));
      const name = one(config, 'name');
      if (name !== undefined && name !== model) throw new Error(`config name "${name}" differs from directory name "${model}"`);
      // JavaScript models are source code rather than ONNX; test/backends/javascript runs them.
      if (one(config, 'backend') === 'javascript') { console.log(`SKIP ${key}: JavaScript model`); return; }
      // Triton's example backends (identity, repeat, square) have no model file; test/backends runs them.
      if (['identity', 'repeat', 'square'].includes(one(config, 'backend'))) { console.log(`SKIP ${key}: ${one(config, 'backend')} backend`); return; }
      // TorchScript models run on torch, not onnxruntime; test/backends/python runs them.
      if (one(config, 'platform') === 'pytorch_libtorch' || one(config, 'backend') === 'pytorch') { console.log(`SKIP ${key}: TorchScript model`); return; }
      // Batch inputs are made by the backend from a formed batch; test/scheduler/dynamic.test.ts runs these.
      if (config.batch_input) { console.log(`SKIP ${key}: batch_input model (the server makes some of its inputs)`); return; }
    }
    const versions = readdirSync(dir).filter((d) => /^(0|[1-9][0-9]*)$/.test(d) && statSync(join(dir, d)).isDirectory()).map(Number).sort((a, b) => a - b);
    if (versions.length === 0) throw new Error('no version directories');
    for (const v of versions) {
      try {
        const { ms, note, session, inputs } = await checkVersion(key, dir, config, v);
        let extra = '';
        if (key === 'slow/slow_fp32') {
          const ts = [];
          for (let k = 0; k < 3; k++) { const t = performance.now(); await session.run(inputs); ts.push(performance.now() - t); }
          extra = ` [batch ${inputs.INPUT0.dims[0]}: first ${ms.toFixed(0)} ms, then ${ts.map((t) => t.toFixed(0)).join('/')} ms]`;
          const b1 = { INPUT0: makeTensor('float32', [1, 16]) };
          const t = performance.now(); await session.run(b1);
          extra += ` [batch 1: ${(performance.now() - t).toFixed(0)} ms]`;
        }
        await session.release();
        if (expect) { report(false, ` v${v}: expected to fail at ${expect}, but ran${note}`); return; }
        report(true, ` v${v} (${ms.toFixed(1)} ms)${note}${extra}`);
      } catch (e) { stage = e.stage || 'run'; throw e; }
    }
  } catch (e) {
    const msg = String(e.message || e).split('\n')[0].slice(0, 160);
    if (expect && expect === stage) report(true, `: fails at ${stage} as expected (${msg})`);
    else if (expect) report(false, `: expected to fail at ${expect}, failed at ${stage}: ${msg}`);
    else report(false, ` (${stage}): ${msg}`);
  }
}

const repos = [['examples', join(ROOT, 'examples', 'model_repository')]];
const FIX = join(ROOT, 'test', 'fixtures');
if (existsSync(FIX)) {
  for (const d of readdirSync(FIX).sort()) {
    if (statSync(join(FIX, d)).isDirectory()) repos.push([d, join(FIX, d)]);
  }
}
const results = [];
for (const [label, root] of repos) {
  if (!existsSync(root)) { console.log(`FAIL ${label}: ${relative(ROOT, root)} missing`); results.push(false); continue; }
  for (const m of readdirSync(root).sort()) {
    if (statSync(join(root, m)).isDirectory()) await checkModel(label, join(root, m), results);
  }
}
const bad = results.filter((r) => !r).length;
console.log(`\n${results.length - bad} OK, ${bad} FAIL`);
process.exit(bad ? 1 : 0);
