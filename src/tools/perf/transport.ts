/** What a protocol client gives the load generator: the model's shape, the server's statistics, and a way to send. */
import type { ModelInfo } from './model-info.js';

export interface TensorData {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
  readonly bytes: Buffer;
}

export interface ShmPlacement {
  readonly inputs: ReadonlyArray<{ readonly name: string; readonly region: string; readonly offset: number; readonly size: number }>;
  readonly outputs: ReadonlyArray<{ readonly name: string; readonly region: string; readonly size: number }>;
}

/** One request's content, independent of the wire. */
export interface RequestSpec {
  readonly inputs: readonly TensorData[];
  readonly outputs: readonly string[];
  readonly shm: ShmPlacement | undefined;
}

export interface SequenceStep {
  readonly id: number;
  readonly start: boolean;
  readonly end: boolean;
}

/**
 * Told about one request as it happens. `response` is called for each response that arrives (one for ordinary
 * models, zero or more for decoupled ones), `done` once when the request is over.
 */
export interface Completion {
  response(): void;
  done(error: string | null): void;
}

/** A request encoded once, sent many times. */
export type Prepared = unknown;

/** Server-side counters of Triton's statistics extension, summed over the measured versions. */
export interface ServerStats {
  readonly inferenceCount: number;
  readonly executionCount: number;
  readonly successCount: number;
  readonly successNs: number;
  readonly queueNs: number;
  readonly computeInputNs: number;
  readonly computeInferNs: number;
  readonly computeOutputNs: number;
}

export interface Transport {
  readonly kind: 'http' | 'grpc';
  modelInfo(): Promise<ModelInfo>;
  /** undefined when the server has no statistics extension. */
  stats(): Promise<ServerStats | undefined>;
  registerShm(name: string, key: string, byteSize: number): Promise<void>;
  unregisterShm(name: string): Promise<void>;
  prepare(spec: RequestSpec, streaming: boolean): Prepared;
  send(p: Prepared, seq: SequenceStep | undefined, c: Completion): void;
  close(): Promise<void>;
}

interface StatBlock { count?: number | string; ns?: number | string }

/** Sums the model_stats entries of one model (all versions, or the one asked for). */
export function sumStats(entries: ReadonlyArray<Record<string, unknown>>, model: string, version: string): ServerStats {
  const out = { inferenceCount: 0, executionCount: 0, successCount: 0, successNs: 0, queueNs: 0, computeInputNs: 0, computeInferNs: 0, computeOutputNs: 0 };
  for (const e of entries) {
    if (e.name !== model || (version !== '' && String(e.version) !== version)) continue;
    const s = (e.inference_stats ?? {}) as Record<string, StatBlock | undefined>;
    out.inferenceCount += Number(e.inference_count ?? 0);
    out.executionCount += Number(e.execution_count ?? 0);
    out.successCount += Number(s.success?.count ?? 0);
    out.successNs += Number(s.success?.ns ?? 0);
    out.queueNs += Number(s.queue?.ns ?? 0);
    out.computeInputNs += Number(s.compute_input?.ns ?? 0);
    out.computeInferNs += Number(s.compute_infer?.ns ?? 0);
    out.computeOutputNs += Number(s.compute_output?.ns ?? 0);
  }
  return out;
}

export function statsDelta(a: ServerStats, b: ServerStats): ServerStats {
  return {
    inferenceCount: b.inferenceCount - a.inferenceCount,
    executionCount: b.executionCount - a.executionCount,
    successCount: b.successCount - a.successCount,
    successNs: b.successNs - a.successNs,
    queueNs: b.queueNs - a.queueNs,
    computeInputNs: b.computeInputNs - a.computeInputNs,
    computeInferNs: b.computeInferNs - a.computeInferNs,
    computeOutputNs: b.computeOutputNs - a.computeOutputNs,
  };
}
