import { invalidArg } from '../../errors.js';

/** Triton's trace level bits: OFF is none of them. */
export const LEVEL_TIMESTAMPS = 1;
export const LEVEL_TENSORS = 2;

export type TraceMode = 'triton' | 'opentelemetry';

/** OpenTelemetry mode's options (opentelemetry,<key>=<value>), with the batch span processor's from OTEL_BSP_*. */
export interface OtelOptions {
  readonly url: string;
  /** resource=key=value entries, in the order given. */
  readonly resources: readonly (readonly [string, string])[];
  readonly bspMaxQueueSize: number;
  readonly bspScheduleDelayMs: number;
  readonly bspMaxExportBatchSize: number;
  /**
   * Nereid's own (opentelemetry,nereid_stage_spans=true): a span per stage (queue, compute input, infer,
   * output) under the compute span, the gateway's call to its engine, and llama.cpp's prompt and generation.
   */
  readonly stageSpans: boolean;
}

/** The settings --trace-config gives, before any update over the network: Triton's global defaults. */
export interface TraceConfig {
  readonly level: number;
  readonly rate: number;
  readonly count: number;
  readonly logFrequency: number;
  readonly file: string;
  readonly mode: TraceMode;
  readonly otel: OtelOptions;
}

export const DEFAULT_OTEL_URL = 'http://localhost:4318/v1/traces';

const INT32_MAX = 2 ** 31 - 1;
const UINT32_MAX = 2 ** 32 - 1;

/**
 * --trace-config entries (`<setting>=<value>` or `<mode>,<setting>=<value>`) as Triton reads them: level is
 * repeatable and its values add up (OFF adds nothing), later entries win for the rest. `env` supplies the
 * OTEL_BSP_* defaults.
 */
export function parseTraceConfig(entries: readonly string[], env: NodeJS.ProcessEnv = process.env): TraceConfig {
  let level = 0;
  let rate = 1000;
  let count = -1;
  let logFrequency = 0;
  let file = '';
  let mode: TraceMode = 'triton';
  let url = DEFAULT_OTEL_URL;
  const resources: [string, string][] = [];
  let queue = envInt(env, 'OTEL_BSP_MAX_QUEUE_SIZE', 2048);
  let delay = envInt(env, 'OTEL_BSP_SCHEDULE_DELAY', 5000);
  let batch = envInt(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512);
  let stageSpans = false;
  for (const entry of entries) {
    const { section, key, value } = split(entry);
    const where = section === '' ? key : `${section},${key}`;
    switch (where) {
      case 'level': level |= parseLevel(value); break;
      case 'rate': rate = integer(value, 0, UINT32_MAX, 'rate'); break;
      case 'count': count = integer(value, -1, INT32_MAX, 'count'); break;
      case 'mode': mode = parseMode(value); break;
      case 'triton,file': file = value; break;
      case 'triton,log-frequency': case 'triton,log_frequency': logFrequency = integer(value, 0, UINT32_MAX, 'log-frequency'); break;
      case 'opentelemetry,url': url = value; break;
      case 'opentelemetry,resource': resources.push(resource(value)); break;
      case 'opentelemetry,bsp_max_queue_size': queue = integer(value, 1, INT32_MAX, key); break;
      case 'opentelemetry,bsp_schedule_delay': delay = integer(value, 0, INT32_MAX, key); break;
      case 'opentelemetry,bsp_max_export_batch_size': batch = integer(value, 1, INT32_MAX, key); break;
      case 'opentelemetry,nereid_stage_spans': stageSpans = value === 'true' || value === '1'; break;
      default:
        // A mode's settings that Nereid does not use are passed over, as tritonserver keeps them unread.
        if (section === '') throw invalidArg(`unknown trace setting '${key}' in --trace-config ${entry}`);
    }
  }
  if (batch > queue) throw invalidArg(`--trace-config opentelemetry,bsp_max_export_batch_size (${batch}) must not exceed bsp_max_queue_size (${queue})`);
  if (mode === 'opentelemetry') otlpEndpoint(url);
  return { level, rate, count, logFrequency, file, mode, otel: { url, resources, bspMaxQueueSize: queue, bspScheduleDelayMs: delay, bspMaxExportBatchSize: batch, stageSpans } };
}

/**
 * The endpoint an `opentelemetry,url` value names. Triton documents it without a scheme
 * (localhost:4318/v1/traces), which its exporter's HTTP client reads as http; a value without `://` is taken
 * so here too. Anything that is then not an http or https URL with a host is refused, naming the flag.
 */
export function otlpEndpoint(url: string): string {
  const full = url.includes('://') ? url : `http://${url}`;
  let u: URL | undefined;
  try {
    u = new URL(full);
  } catch {
    u = undefined;
  }
  if (u === undefined || (u.protocol !== 'http:' && u.protocol !== 'https:') || u.hostname === '') {
    throw invalidArg(`--trace-config opentelemetry,url=${url}: not an OTLP/HTTP endpoint; expected [http://|https://]<host>[:<port>]/<path>, e.g. localhost:4318/v1/traces`);
  }
  return full;
}

/** The level words tritonserver takes (any case): OFF / false add nothing; TIMESTAMPS and its aliases; TENSORS. */
export function parseLevel(v: string): number {
  switch (v.toLowerCase()) {
    case 'off': case 'false': return 0;
    case 'timestamps': case 'true': case 'on': case 'min': case 'max': return LEVEL_TIMESTAMPS;
    case 'tensors': return LEVEL_TENSORS;
    default: throw invalidArg(`invalid value for trace level option: ${v}`);
  }
}

function parseMode(v: string): TraceMode {
  const m = v.toLowerCase();
  if (m === 'triton' || m === 'opentelemetry') return m;
  throw invalidArg(`Unsupported trace mode: ${v}`);
}

function split(entry: string): { section: string; key: string; value: string } {
  const eq = entry.indexOf('=');
  if (eq <= 0) throw invalidArg(`--trace-config ${entry}: expected '<setting>=<value>' or '<mode>,<setting>=<value>'`);
  const head = entry.slice(0, eq);
  const comma = head.indexOf(',');
  const section = comma === -1 ? '' : head.slice(0, comma).toLowerCase();
  return { section, key: comma === -1 ? head : head.slice(comma + 1), value: entry.slice(eq + 1) };
}

function resource(v: string): [string, string] {
  const eq = v.indexOf('=');
  if (eq <= 0) throw invalidArg(`--trace-config opentelemetry,resource=${v}: expected resource=<key>=<value>`);
  return [v.slice(0, eq), v.slice(eq + 1)];
}

function integer(v: string, min: number, max: number, what: string): number {
  if (!/^\s*[+-]?\d+\s*$/.test(v)) throw invalidArg(`invalid value for trace ${what}: ${v}`);
  const n = Number(v);
  if (n < min || n > max) throw invalidArg(`invalid value for trace ${what}: ${v} (expected ${min} to ${max})`);
  return n;
}

function envInt(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const v = env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  return Number.isSafeInteger(n) && n >= 0 ? n : fallback;
}
