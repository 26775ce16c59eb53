import { invalidArg, unsupported } from '../errors.js';
import type { InferenceServer } from './inference-server.js';
import type { NewSetting } from '../observability/trace/settings.js';
import type { TraceSettingView } from '../observability/trace/manager.js';
import { LEVEL_TENSORS, LEVEL_TIMESTAMPS } from '../observability/trace/config.js';

/**
 * The trace setting APIs' shared rules, in Triton's words: the HTTP body and the gRPC settings map differ only in
 * how a value is given (a JSON string or null; a list of strings, empty to clear). A value is undefined when the
 * key is absent, null to clear, else the strings given.
 */
export type GivenValue = undefined | null | readonly string[];

export interface GivenSetting {
  readonly level: GivenValue;
  readonly rate: GivenValue;
  readonly count: GivenValue;
  readonly logFrequency: GivenValue;
  readonly file: boolean;
}

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/** Checks the model (per-model paths), applies the update, and returns the setting now in force. */
export function traceSetting(server: InferenceServer, model: string, given: GivenSetting | null): TraceSettingView {
  if (model !== '' && !server.isModelReady(model)) throw invalidArg(`Request for unknown model : ${model}`);
  if (given !== null) {
    if (given.file) throw unsupported('trace file location can not be updated through network protocol');
    const change: NewSetting = {};
    const level = levels(given.level);
    if (level !== undefined) change.level = level;
    const rate = integer(given.rate, 'trace_rate', 0, 2 ** 32 - 1);
    if (rate !== undefined) change.rate = rate === null ? null : rate >>> 0;
    const count = integer(given.count, 'trace_count', -1, INT32_MAX);
    if (count !== undefined) change.count = count;
    const frequency = integer(given.logFrequency, 'log_frequency', 0, 2 ** 32 - 1);
    if (frequency !== undefined) change.logFrequency = frequency === null ? null : frequency >>> 0;
    server.traces.update(model, change);
  }
  return server.traces.view(model);
}

/** Triton's reading of trace_level: OFF alone disables, TIMESTAMPS and TENSORS add up, other words are ignored. */
function levels(v: GivenValue): number | null | undefined {
  if (v === undefined || v === null) return v;
  let level: number | undefined;
  for (const s of v) {
    if (s === 'OFF') {
      if (v.length !== 1) throw invalidArg("Expect only one trace level 'OFF' is specified");
      level = 0;
    } else if (s === 'TIMESTAMPS') level = (level ?? 0) | LEVEL_TIMESTAMPS;
    else if (s === 'TENSORS') level = (level ?? 0) | LEVEL_TENSORS;
  }
  return level;
}

/**
 * A number as Triton reads it (std::stoi: leading blanks, a sign, digits, anything after ignored), refused
 * in its words when there are no digits or the value is past a 32-bit int.
 */
function integer(v: GivenValue, key: string, min: number, max: number): number | null | undefined {
  if (v === undefined || v === null) return v;
  if (v.length !== 1) throw invalidArg(`expect only 1 value for '${key}'`);
  const s = v[0]!;
  const m = /^[\s]*([+-]?\d+)/.exec(s);
  if (m === null) throw invalidArg(`Unable to parse '${key}', got: ${s}`);
  const n = Number(m[1]);
  if (n < INT32_MIN || n > INT32_MAX) {
    throw invalidArg(`Unable to parse '${key}', value is out of range [ ${min}, ${max} ], got: ${s}`);
  }
  if (key === 'trace_count' && n < -1) throw invalidArg(`Unable to parse 'trace_count'. Expecting value >= -1, got:${s}`);
  return n;
}

/** The setting as the APIs answer it: every value a string (trace_level a list), in Triton's order. */
export function settingEntries(v: TraceSettingView): [string, string | string[]][] {
  const level: string[] = [];
  if (v.level === 0) level.push('OFF');
  else {
    if (v.level & LEVEL_TIMESTAMPS) level.push('TIMESTAMPS');
    if (v.level & LEVEL_TENSORS) level.push('TENSORS');
  }
  const out: [string, string | string[]][] = [['trace_level', level], ['trace_rate', String(v.rate)], ['trace_count', String(v.count)]];
  if (v.mode === 'triton') out.push(['log_frequency', String(v.logFrequency)], ['trace_file', v.file]);
  out.push(['trace_mode', v.mode]);
  const seen = new Map<string, number>();
  for (const [k, value] of v.options) {
    // A repeated option (resource) is one key: its values joined, as a JSON object cannot repeat a key.
    const at = seen.get(k);
    if (at === undefined) {
      seen.set(k, out.length);
      out.push([k, value]);
    } else out[at] = [k, `${out[at]![1] as string},${value}`];
  }
  return out;
}
