/**
 * The configurations a search tries: points in a space of instance count, max_batch_size, dynamic batching (on or
 * off, queue delay, preferred size) and ONNX Runtime's thread counts. Brute search lists the whole cross product;
 * quick search walks it one step at a time along each axis.
 */
import { blank, printModelConfig, type ModelConfig } from '../../config/index.js';
import type { AnalyzeOptions } from './options.js';

export interface Candidate {
  readonly instances: number;
  /** 0 for a model that does not batch. */
  readonly maxBatchSize: number;
  readonly dynamic: boolean;
  readonly queueDelayUs: number;
  readonly preferred: boolean;
  /** 0 leaves the backend's default. */
  readonly intraThreads: number;
  readonly interThreads: number;
}

/** The axes of the space, each a list of values; index vectors into them name points. */
export interface Space {
  readonly axes: ReadonlyArray<{ readonly name: keyof Candidate; readonly values: readonly (number | boolean)[] }>;
}

export function searchSpace(base: ModelConfig, o: AnalyzeOptions): Space {
  const batching = base.max_batch_size > 0;
  const onnx = base.backend === 'onnxruntime' || base.platform === 'onnxruntime_onnx';
  return {
    axes: [
      { name: 'instances', values: o.instanceCounts },
      { name: 'maxBatchSize', values: batching ? o.batchSizes : [0] },
      { name: 'dynamic', values: batching ? [true, false] : [false] },
      { name: 'queueDelayUs', values: batching ? o.queueDelaysUs : [0] },
      { name: 'preferred', values: batching && o.preferred ? [false, true] : [false] },
      { name: 'intraThreads', values: onnx ? o.intraThreads : [0] },
      { name: 'interThreads', values: onnx ? o.interThreads : [0] },
    ],
  };
}

export function candidateAt(space: Space, index: readonly number[]): Candidate {
  const c: Record<string, number | boolean> = {};
  space.axes.forEach((a, k) => (c[a.name] = a.values[index[k]!]!));
  return c as unknown as Candidate;
}

/** Points that differ only in settings that do not apply (queue delay without dynamic batching) are one point. */
export function candidateKey(c: Candidate): string {
  return c.dynamic
    ? `i${c.instances}-b${c.maxBatchSize}-d${c.queueDelayUs}${c.preferred ? 'p' : ''}-t${c.intraThreads}.${c.interThreads}`
    : `i${c.instances}-b${c.maxBatchSize}-off-t${c.intraThreads}.${c.interThreads}`;
}

export function bruteList(space: Space): Candidate[] {
  const out = new Map<string, Candidate>();
  const idx = space.axes.map(() => 0);
  for (;;) {
    const c = candidateAt(space, idx);
    if (!out.has(candidateKey(c))) out.set(candidateKey(c), c);
    let k = space.axes.length - 1;
    while (k >= 0 && ++idx[k]! >= space.axes[k]!.values.length) idx[k--] = 0;
    if (k < 0) break;
  }
  return [...out.values()];
}

/** Index vectors one step away along one axis. */
export function neighbours(space: Space, index: readonly number[]): number[][] {
  const out: number[][] = [];
  space.axes.forEach((a, k) => {
    for (const d of [-1, 1]) {
      const v = index[k]! + d;
      if (v < 0 || v >= a.values.length) continue;
      const n = [...index];
      n[k] = v;
      out.push(n);
    }
  });
  return out;
}

export function describe(c: Candidate): string {
  const parts = [`${c.instances} instance${c.instances === 1 ? '' : 's'}`];
  if (c.maxBatchSize > 0) parts.push(`max_batch_size ${c.maxBatchSize}`);
  if (c.maxBatchSize > 0) parts.push(c.dynamic ? `dynamic batching (delay ${c.queueDelayUs} µs${c.preferred ? `, preferred ${c.maxBatchSize}` : ''})` : 'no dynamic batching');
  if (c.intraThreads) parts.push(`intra_op ${c.intraThreads}`);
  if (c.interThreads) parts.push(`inter_op ${c.interThreads}`);
  return parts.join(', ');
}

/** The base config with a candidate's settings, under a new name. */
export function applyCandidate(base: ModelConfig, c: Candidate, name: string): ModelConfig {
  const cfg = structuredClone(base);
  cfg.name = name;
  const g = blank<ModelConfig['instance_group'][number]>('ModelInstanceGroup');
  g.count = c.instances;
  g.kind = 'KIND_CPU' as typeof g.kind;
  cfg.instance_group = [g];
  if (base.max_batch_size > 0) {
    cfg.max_batch_size = c.maxBatchSize;
    if (c.dynamic) {
      const d = blank<NonNullable<ModelConfig['dynamic_batching']>>('ModelDynamicBatching');
      d.max_queue_delay_microseconds = c.queueDelayUs;
      if (c.preferred) d.preferred_batch_size = [c.maxBatchSize];
      cfg.dynamic_batching = d;
    } else {
      delete cfg.dynamic_batching;
    }
  }
  const params = { ...cfg.parameters };
  const setParam = (key: string, n: number): void => {
    if (n === 0) return;
    const p = blank<ModelConfig['parameters'][string]>('ModelParameter');
    p.string_value = String(n);
    params[key] = p;
  };
  setParam('intra_op_thread_count', c.intraThreads);
  setParam('inter_op_thread_count', c.interThreads);
  cfg.parameters = params;
  return cfg;
}

export function configText(cfg: ModelConfig): string {
  return printModelConfig(cfg);
}
