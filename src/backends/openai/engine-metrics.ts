/**
 * The load an OpenAI-compatible engine reports on its Prometheus endpoint, read under each engine's own names
 * (the Gateway API Inference Extension's model-server protocol lists them): requests waiting, requests
 * running, and the share of the KV cache in use (0 to 1). The first name found counts.
 */
export interface EngineMetrics {
  readonly waiting: number | undefined;
  readonly running: number | undefined;
  readonly kvCacheUsage: number | undefined;
}

type Pick = readonly [name: string, labels?: Readonly<Record<string, string>>];

const WAITING: readonly Pick[] = [
  ['vllm:num_requests_waiting'], ['sglang:num_queue_reqs'], ['llamacpp:requests_deferred'], ['tgi_queue_size'],
  ['nv_trt_llm_request_metrics', { request_type: 'waiting' }],
];
const RUNNING: readonly Pick[] = [
  ['vllm:num_requests_running'], ['sglang:num_running_reqs'], ['llamacpp:requests_processing'], ['tgi_batch_current_size'],
  ['nv_trt_llm_request_metrics', { request_type: 'scheduled' }],
];
const KV_CACHE: readonly Pick[] = [
  ['vllm:kv_cache_usage_perc'], ['vllm:gpu_cache_usage_perc'], ['sglang:token_usage'], ['llamacpp:kv_cache_usage_ratio'],
  ['nv_trt_llm_kv_cache_block_metrics', { kv_cache_block_type: 'fraction' }],
];

/** Labels engines put their served model's name in. */
const MODEL_LABELS = ['model_name', 'model'];

interface Series {
  readonly labels: Record<string, string>;
  readonly value: number;
}

/** Samples of the Prometheus text format by metric name; comments and unparsable lines are skipped. */
export function parseExposition(text: string): Map<string, Series[]> {
  const out = new Map<string, Series[]>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const value = Number(m[3]);
    if (Number.isNaN(value)) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    let list = out.get(m[1]!);
    if (!list) out.set(m[1]!, (list = []));
    list.push({ labels, value });
  }
  return out;
}

/**
 * One gauge's value for `modelId`: the series labelled with that model when the engine labels its series by
 * model, else the sum of all series (an engine that serves one model).
 */
function gauge(samples: Map<string, Series[]>, picks: readonly Pick[], modelId: string): number | undefined {
  for (const [name, want] of picks) {
    let series = samples.get(name);
    if (!series) continue;
    if (want) series = series.filter((s) => Object.entries(want).every(([k, v]) => s.labels[k] === v));
    if (series.length === 0) continue;
    const mine = series.filter((s) => MODEL_LABELS.some((l) => s.labels[l] === modelId));
    return (mine.length > 0 ? mine : series).reduce((a, s) => a + s.value, 0);
  }
  return undefined;
}

/** The engine's load from its /metrics text; undefined when it reports neither waiting nor running requests. */
export function engineMetrics(text: string, modelId: string): EngineMetrics | undefined {
  const samples = parseExposition(text);
  const waiting = gauge(samples, WAITING, modelId);
  const running = gauge(samples, RUNNING, modelId);
  if (waiting === undefined && running === undefined) return undefined;
  const kv = gauge(samples, KV_CACHE, modelId);
  return { waiting, running, kvCacheUsage: kv === undefined ? undefined : Math.min(1, Math.max(0, kv)) };
}
