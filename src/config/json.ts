/**
 * Triton's JSON form of a model config (GET .../config, the Python backend's `args['model_config']`, the load
 * API's `config` override), driven by schema.ts.
 *
 * Writing follows core `ModelConfigToJson`: protobuf's JSON printer with proto field names and every primitive,
 * repeated and map field of each present message printed even at its default; enums as names; 64-bit integers
 * as strings, except the paths Triton rewrites back into numbers (NUMBER_PATHS). Reading follows
 * `JsonToModelConfig`: unknown fields are refused, enum names match case-insensitively, 64-bit integers may be
 * numbers or strings.
 */
import { NereidError } from '../errors.js';
import type { ModelConfig } from './types.js';
import {
  type FieldDescriptor, type FieldType, type MessageDescriptor, type ScalarKind,
  PACKAGE, enumDescriptor, isSixtyFourBit, messageDescriptor, scalarDefault,
} from './schema.js';
import { type ProtoObject, hasPresence, jsonName, newMessage } from './message.js';
import { formatInt, namedFloat, toIntValue } from './scalars.js';

/**
 * 64-bit fields Triton turns back into JSON numbers, as field-name paths (array indices and map keys left out).
 * Others stay strings, as in Triton: priority_queue_policy keys, `sequence_batching.state[].initial_state[].dims`
 * (Triton's fix-up code looks for it in the wrong object), `optimization.cuda.graph_spec` dims and
 * `instance_group[].secondary_devices[].device_id`.
 */
const NUMBER_PATHS: ReadonlySet<string> = new Set([
  'input.dims', 'input.reshape.shape', 'output.dims', 'output.reshape.shape',
  'version_policy.specific.versions',
  'dynamic_batching.max_queue_delay_microseconds', 'dynamic_batching.priority_levels',
  'dynamic_batching.default_priority_level', 'dynamic_batching.default_queue_policy.default_timeout_microseconds',
  'dynamic_batching.priority_queue_policy.default_timeout_microseconds',
  'sequence_batching.max_sequence_idle_microseconds', 'sequence_batching.oldest.max_queue_delay_microseconds',
  'sequence_batching.direct.max_queue_delay_microseconds', 'sequence_batching.state.dims',
  'ensemble_scheduling.step.model_version',
  'model_warmup.inputs.dims',
]);

// ============================== writing ==============================

export function modelConfigToJson(cfg: ModelConfig): Record<string, unknown> {
  return messageToJson(messageDescriptor('ModelConfig'), cfg as unknown as ProtoObject, '');
}

function messageToJson(desc: MessageDescriptor, obj: ProtoObject, path: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of desc.fields) {
    // A hand-built object (a backend's auto-complete) may lack a defaulted field: print the default for it.
    const v = obj[f.name] ?? (hasPresence(f) ? undefined : defaultOf(f));
    if (v === undefined) continue;
    const p = path + f.name;
    if (f.label.kind === 'repeated') out[f.name] = (v as unknown[]).map((e) => valueToJson(f.type, e, p));
    else if (f.label.kind === 'map') out[f.name] = mapToJson(f.type, v as ProtoObject, p);
    else out[f.name] = valueToJson(f.type, v, p);
  }
  return out;
}

function defaultOf(f: FieldDescriptor): unknown {
  return f.label.kind === 'repeated' ? [] : f.label.kind === 'map' ? {} : scalarDefault(f.type);
}

function mapToJson(type: FieldType, map: ProtoObject, path: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(map)) out[k] = valueToJson(type, v, path);
  return out;
}

function valueToJson(type: FieldType, v: unknown, path: string): unknown {
  if (type.kind === 'message') return messageToJson(messageDescriptor(type.name), v as ProtoObject, `${path}.`);
  if (type.kind === 'enum') return v;
  const kind = type.scalar;
  if (isSixtyFourBit(kind)) return NUMBER_PATHS.has(path) ? v : formatInt(kind, v as number);
  if ((kind === 'float' || kind === 'double') && !Number.isFinite(v)) {
    return Number.isNaN(v) ? 'NaN' : (v as number) > 0 ? 'Infinity' : '-Infinity';
  }
  return v;
}

// ============================== reading ==============================

/** A config from its JSON form (an object, or the JSON text), filled like the text parser fills it. */
export function modelConfigFromJson(json: unknown): ModelConfig {
  let value = json;
  if (typeof json === 'string') {
    try {
      value = JSON.parse(json);
    } catch (e) {
      throw new NereidError('INVALID_ARG', `model config JSON is not valid JSON: ${(e as Error).message}`);
    }
  }
  return readMessage(messageDescriptor('ModelConfig'), value, '') as unknown as ModelConfig;
}

const bad = (path: string, what: string): NereidError =>
  new NereidError('INVALID_ARG', `model config JSON: ${path === '' ? '(root)' : path}: ${what}`);

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function readMessage(desc: MessageDescriptor, value: unknown, path: string): ProtoObject {
  if (!isPlainObject(value)) throw bad(path, `expected an object for ${PACKAGE}.${desc.name}`);
  const out = newMessage(desc.name);
  const seen = new Map<FieldDescriptor, string>();
  for (const [key, v] of Object.entries(value)) {
    const p = path === '' ? key : `${path}.${key}`;
    const f = desc.fields.find((x) => x.name === key || jsonName(x.name) === key);
    if (!f) throw bad(p, `unknown field "${key}" of ${PACKAGE}.${desc.name}`);
    if (seen.has(f)) throw bad(p, `field "${f.name}" is given twice (also as "${seen.get(f)}")`);
    seen.set(f, key);
    if (v === null) continue; // protobuf JSON: null means "left at its default"
    if (f.oneof) {
      const other = desc.fields.find((o) => o.oneof === f.oneof && o !== f && out[o.name] !== undefined);
      if (other) throw bad(p, `"${f.name}" and "${other.name}" are both members of oneof "${f.oneof}"`);
    }
    out[f.name] = readField(f, v, p);
  }
  return out;
}

function readField(f: FieldDescriptor, v: unknown, path: string): unknown {
  if (f.label.kind === 'repeated') {
    if (!Array.isArray(v)) throw bad(path, 'expected an array');
    return v.map((e, i) => readValue(f.type, e, `${path}[${i}]`));
  }
  if (f.label.kind === 'map') {
    if (!isPlainObject(v)) throw bad(path, 'expected an object (map)');
    const out: ProtoObject = {};
    for (const [k, e] of Object.entries(v)) out[readMapKey(f.label.key, k, path)] = readValue(f.type, e, `${path}["${k}"]`);
    return out;
  }
  return readValue(f.type, v, path);
}

function readMapKey(kind: ScalarKind, k: string, path: string): string {
  if (kind === 'string') return k;
  if (kind === 'bool') {
    if (k === 'true' || k === 'false') return k;
    throw bad(path, `map key "${k}" is not a bool`);
  }
  return String(readInteger(kind, k, `${path}["${k}"] (key)`));
}

function readValue(type: FieldType, v: unknown, path: string): unknown {
  if (type.kind === 'message') return readMessage(messageDescriptor(type.name), v, path);
  if (type.kind === 'enum') return readEnum(type.name, v, path);
  switch (type.scalar) {
    case 'string':
      if (typeof v !== 'string') throw bad(path, 'expected a string');
      return v;
    case 'bool':
      if (typeof v !== 'boolean') throw bad(path, 'expected true or false');
      return v;
    case 'float':
    case 'double':
      return readFloat(v, path);
    default:
      return readInteger(type.scalar, v, path);
  }
}

function readInteger(kind: ScalarKind, v: unknown, path: string): number {
  let big: bigint;
  // JSON.parse has already rounded a 64-bit extreme such as 18446744073709551615 up to 2^64; take it back.
  if (typeof v === 'number' && Number.isInteger(v)) big = clampRounded(kind, BigInt(v));
  else if (typeof v === 'string' && /^-?\d+$/.test(v.trim())) big = BigInt(v.trim());
  else throw bad(path, `expected an integer (${kind})`);
  const r = toIntValue(kind, big, String(v));
  if (typeof r !== 'number') throw bad(path, r.error);
  return r;
}

function clampRounded(kind: ScalarKind, v: bigint): bigint {
  if (kind === 'uint64' && v === 2n ** 64n) return 2n ** 64n - 1n;
  if (kind === 'int64' && v === 2n ** 63n) return 2n ** 63n - 1n;
  return v;
}

function readFloat(v: unknown, path: string): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string') {
    const named = v === 'NaN' ? NaN : v === 'Infinity' ? Infinity : v === '-Infinity' ? -Infinity : namedFloat(v);
    if (named !== undefined) return named;
    if (v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  }
  throw bad(path, 'expected a number');
}

/** By name, case-insensitively as Triton's reader does, or by number. */
function readEnum(enumName: string, v: unknown, path: string): string {
  const values = enumDescriptor(enumName).values;
  let hit: readonly [string, number] | undefined;
  if (typeof v === 'string') hit = values.find(([n]) => n.toLowerCase() === v.toLowerCase());
  else if (typeof v === 'number') hit = values.find(([, n]) => n === v);
  if (!hit) throw bad(path, `${JSON.stringify(v)} is not a value of enum ${PACKAGE}.${enumName}`);
  return hit[0];
}
