/**
 * Per model version statistics in the shape of Triton's statistics extension. One object per loaded version,
 * fed by the scheduler and backends; the HTTP and (later) gRPC statistics and the metrics all read it.
 */

export interface Duration {
  count: number;
  ns: number;
}

const d = (): Duration => ({ count: 0, ns: 0 });

export interface BatchStat {
  batch_size: number;
  compute_input: Duration;
  compute_infer: Duration;
  compute_output: Duration;
}

export interface ResponseStat {
  compute_infer: Duration;
  compute_output: Duration;
  success: Duration;
  fail: Duration;
  empty_response: Duration;
  cancel: Duration;
}

/** Triton's failure reasons (the `reason` label of nv_inference_request_failure). */
export type FailureReason = 'REJECTED' | 'CANCELED' | 'BACKEND' | 'OTHER';

/**
 * Per-request observations that cumulative figures cannot give (latency histograms and summaries). Metrics set
 * one on a version's statistics when it loads and only when --metrics-config asks for them, so a request pays
 * one null check otherwise. Durations in nanoseconds.
 */
export interface LatencyObserver {
  success(requestNs: number, queueNs: number, inputNs: number, inferNs: number, outputNs: number): void;
  cacheHit(requestNs: number, lookupNs: number): void;
  cacheMiss(ns: number): void;
  /** A decoupled request's first response (an empty final flag is not a response). */
  firstResponse(ns: number): void;
  /** What it has recorded, as nereid_ fields of the statistics JSON (read only when statistics are asked for). */
  statisticsJSON?(): Record<string, unknown>;
}

/**
 * One instance's share of a model version's executions. Triton's statistics extension has no per-instance
 * figures; Nereid reports these beside it (`nereid_instance_stats`, see docs/protocols-and-extensions.md).
 */
export class InstanceStatistics {
  executionCount = 0;
  inferenceCount = 0;
  readonly computeInput = d();
  readonly computeInfer = d();
  readonly computeOutput = d();

  constructor(readonly name: string, readonly kind: string, readonly passive: boolean) {}

  recordExecution(batchSize: number, inputNs: number, inferNs: number, outputNs: number): void {
    this.executionCount++;
    this.inferenceCount += batchSize;
    add(this.computeInput, inputNs);
    add(this.computeInfer, inferNs);
    add(this.computeOutput, outputNs);
  }

  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      kind: this.kind,
      passive: this.passive,
      execution_count: this.executionCount,
      inference_count: this.inferenceCount,
      compute_input: this.computeInput,
      compute_infer: this.computeInfer,
      compute_output: this.computeOutput,
    };
  }
}

export class ModelStatistics {
  lastInferenceMs = 0;
  inferenceCount = 0;
  executionCount = 0;
  readonly success = d();
  readonly fail = d();
  readonly queue = d();
  readonly computeInput = d();
  readonly computeInfer = d();
  readonly computeOutput = d();
  readonly cacheHit = d();
  readonly cacheMiss = d();
  /** Failed requests by reason, for the failure counter's `reason` label. */
  readonly failures: Record<FailureReason, number> = { REJECTED: 0, CANCELED: 0, BACKEND: 0, OTHER: 0 };
  readonly instances: InstanceStatistics[] = [];
  /** How long the version took to load (instances created and warmed up), for nv_model_load_duration_secs. */
  loadNs = 0;
  /** The memory its load took, in bytes, once measured (memory_usage). */
  memoryBytes: number | undefined = undefined;
  /** Set at load when metrics record per-request latencies; null otherwise. */
  observer: LatencyObserver | null = null;
  /**
   * Requests sent to each target, for a version that routes (a router model's targets, or the versions its
   * nereid_version_weights split requests between); undefined otherwise. Read by nereid_route_request_count.
   */
  routes: ReadonlyMap<string, number> | undefined = undefined;
  /**
   * Tokens of the requests to a text model, as the model reports them on its last response (parameters
   * prompt_tokens and completion_tokens): nereid_prompt_token_count and nereid_generated_token_count.
   */
  promptTokens = 0;
  generatedTokens = 0;
  private readonly batches = new Map<number, BatchStat>();
  private readonly responses = new Map<number, ResponseStat>();

  constructor(readonly name: string, readonly version: number) {}

  /** One execution of `batchSize` rows made of `requests` requests. */
  recordExecution(batchSize: number, inputNs: number, inferNs: number, outputNs: number): void {
    this.executionCount++;
    this.inferenceCount += batchSize;
    let b = this.batches.get(batchSize);
    if (!b) {
      b = { batch_size: batchSize, compute_input: d(), compute_infer: d(), compute_output: d() };
      this.batches.set(batchSize, b);
    }
    add(b.compute_input, inputNs);
    add(b.compute_infer, inferNs);
    add(b.compute_output, outputNs);
  }

  /** A text model's token counts for one request. */
  recordTokens(prompt: number, generated: number): void {
    this.promptTokens += prompt;
    this.generatedTokens += generated;
  }

  /** One request that executed: its queue and compute times and the whole request duration. */
  recordSuccess(requestNs: number, queueNs: number, inputNs: number, inferNs: number, outputNs: number): void {
    this.lastInferenceMs = Date.now();
    add(this.success, requestNs);
    add(this.queue, queueNs);
    add(this.computeInput, inputNs);
    add(this.computeInfer, inferNs);
    add(this.computeOutput, outputNs);
    add(this.response(0).success, requestNs);
    if (this.observer !== null) this.observer.success(requestNs, queueNs, inputNs, inferNs, outputNs);
  }

  /** A request answered from the response cache: a success and a hit, but no inference or execution. */
  recordCacheHit(requestNs: number, lookupNs: number): void {
    this.lastInferenceMs = Date.now();
    add(this.success, requestNs);
    add(this.cacheHit, lookupNs);
    add(this.response(0).success, requestNs);
    if (this.observer !== null) this.observer.cacheHit(requestNs, lookupNs);
  }

  /** The lookup and insert time of a request the cache did not have (the request itself counts as usual). */
  recordCacheMiss(ns: number): void {
    add(this.cacheMiss, ns);
    if (this.observer !== null) this.observer.cacheMiss(ns);
  }

  recordFailure(requestNs: number, reason: FailureReason = 'OTHER'): void {
    this.lastInferenceMs = Date.now();
    this.failures[reason]++;
    add(this.fail, requestNs);
    add(this.response(0).fail, requestNs);
  }

  private response(index: number): ResponseStat {
    let r = this.responses.get(index);
    if (!r) {
      r = { compute_infer: d(), compute_output: d(), success: d(), fail: d(), empty_response: d(), cancel: d() };
      this.responses.set(index, r);
    }
    return r;
  }

  /** Registers an instance of this version; its executions are recorded on the object returned. */
  addInstance(name: string, kind: string, passive: boolean): InstanceStatistics {
    const i = new InstanceStatistics(name, kind, passive);
    this.instances.push(i);
    return i;
  }

  /** Nereid's per-instance figures of this version: `{ name, version, instance_stats: [...] }`. */
  instancesJSON(): Record<string, unknown> {
    return { name: this.name, version: String(this.version), instance_stats: this.instances.map((i) => i.toJSON()) };
  }

  /** Triton's JSON form of one `model_stats` element. */
  toJSON(): Record<string, unknown> {
    const responseStats: Record<string, ResponseStat> = {};
    for (const [k, v] of [...this.responses].sort((a, b) => a[0] - b[0])) responseStats[String(k)] = v;
    return {
      name: this.name,
      version: String(this.version),
      last_inference: this.lastInferenceMs,
      inference_count: this.inferenceCount,
      execution_count: this.executionCount,
      inference_stats: {
        success: this.success, fail: this.fail, queue: this.queue,
        compute_input: this.computeInput, compute_infer: this.computeInfer, compute_output: this.computeOutput,
        cache_hit: this.cacheHit, cache_miss: this.cacheMiss,
      },
      response_stats: responseStats,
      batch_stats: [...this.batches.values()].sort((a, b) => a.batch_size - b.batch_size),
      // Triton's memory_usage: what the version's load took (Nereid measures CPU memory only, see models/load-meter.ts).
      memory_usage: this.memoryBytes === undefined ? [] : [{ type: 'CPU', id: 0, byte_size: this.memoryBytes }],
      // Nereid's additions, counted anyway for the metrics: what a client polling the statistics (the web
      // console) needs beyond Triton's fields.
      nereid_failures: this.failures,
      nereid_prompt_tokens: this.promptTokens,
      nereid_generated_tokens: this.generatedTokens,
      ...this.observer?.statisticsJSON?.(),
    };
  }
}

function add(x: Duration, ns: number): void {
  x.count++;
  x.ns += ns;
}
