import { relative } from 'node:path';
import type { ModelConfig } from '../config/types.js';
import type { ModelFolder } from '../config/model-files.js';
import type { Logger } from '../observability/logger.js';
import type { InferenceRequest, InferenceResponse, Parameters, ResponseSender } from '../inference/index.js';
import type { Tensor } from '../tensor/tensor.js';

/**
 * The seam between Nereid and the engines that run models. A backend never sees a protocol: it gets tensors
 * shaped as the model expects them (config `reshape` already applied) and answers through each request's
 * ResponseSender. In-process engines, worker threads and out-of-process stubs all fit this one interface.
 */
export interface Backend {
  readonly name: string;
  /**
   * Fills what the config leaves out from the model file itself (Triton's backend auto-complete). Called only
   * when auto-complete is on; may change `config` in place.
   */
  autoComplete?(model: ModelFiles, config: ModelConfig): Promise<void>;
  /** Creates one instance of a model version; the instance is ready to execute when the promise resolves. */
  createInstance(spec: InstanceSpec): Promise<BackendInstance>;
}

export interface ModelFiles {
  readonly name: string;
  /** The model's folder (or the temporary copy a load with file overrides built). */
  readonly modelDir: string;
  /** The folder of the version being loaded. */
  readonly versionDir: string;
  /** --backend-config values for this backend, global ones underneath. */
  readonly backendConfig: Readonly<Record<string, string>>;
  /**
   * True when the config came with a load request rather than from the repository: then even the paths Triton
   * lets a config point anywhere (an absolute EXECUTION_ENV_PATH) must stay inside the model folder.
   */
  readonly configFromRequest?: boolean;
}

/** The version folder, for config/model-files.ts: where a backend looks for its model file. */
export function versionFolder(files: ModelFiles): ModelFolder {
  return { model: files.name, modelDir: files.modelDir, sub: relative(files.modelDir, files.versionDir) };
}

export interface InstanceSpec extends ModelFiles {
  readonly version: number;
  /** The normalized, validated config. */
  readonly config: ModelConfig;
  /** Instance name as Triton forms it: `<group name>_<index>`. */
  readonly instanceName: string;
  readonly kind: string;
  readonly logger: Logger;
  /** What the model may ask of the server (BLS); absent when the server offers nothing. */
  readonly calls?: ModelCalls;
}

/**
 * Calls back up from a running model to the server: a Python model's BLS requests and model management. The
 * server hands this down when a model loads, so backends never import it.
 */
export interface ModelCalls {
  infer(request: InferenceRequest): Promise<InferenceResponse>;
  /** Every response of a request as it comes (a decoupled model's stream, or an ordinary model's one response). */
  inferStream(request: InferenceRequest): AsyncIterableIterator<InferenceResponse> & { return(): Promise<IteratorResult<InferenceResponse>> };
  loadModel(name: string, request: { config?: ModelConfig; files?: ReadonlyMap<string, Uint8Array> }): Promise<void>;
  unloadModel(name: string, options: { unloadDependents?: boolean }): Promise<void>;
  isModelReady(name: string, version?: number): boolean;
  /**
   * Tells the server that shared-memory objects whose names start with `prefix` are a backend's own (the Python
   * stubs' regions, which hold other clients' tensors), so that no client may register them. Absent where
   * nothing else registers shared memory.
   */
  reserveSharedMemory?(prefix: string): void;
  /** Custom metrics (pb_utils.MetricFamily), exported when the server's metrics are on; absent: refused. */
  readonly metrics?: CustomMetrics;
}

/** A model's own metric families, exported beside the server's. Kinds as pb_utils numbers them. */
export interface CustomMetrics {
  family(name: string, description: string, kind: 'counter' | 'gauge' | 'histogram'): CustomMetricFamily;
}

export interface CustomMetricFamily {
  metric(labels: Readonly<Record<string, string>>, buckets?: readonly number[]): CustomMetric;
}

export interface CustomMetric {
  increment(value: number): void;
  set(value: number): void;
  observe(value: number): void;
  value(): number;
  /** Takes the metric off the endpoint (its model instance is gone). */
  delete(): void;
}

/** One request of an execution. Inputs are in backend shape; `outputs` are the names the request wants. */
export interface BackendRequest {
  readonly inputs: readonly Tensor[];
  readonly outputs: readonly string[];
  readonly parameters: Parameters | undefined;
  readonly sender: ResponseSender;
  /** The client's request id ('' or absent when none), for backends that show it to the model. */
  readonly id?: string;
  /** The sequence extension as the model sees it: correlation id (0 / '' / absent outside a sequence), flags. */
  readonly sequenceId?: number | bigint | string;
  readonly sequenceStart?: boolean;
  readonly sequenceEnd?: boolean;
  readonly timeoutUs?: number;
  /** Aborts once nobody wants the answer any more (client gone, stream dropped): a backend may stop early. */
  readonly signal?: AbortSignal;
  /**
   * The sender takes a `release` with the outputs (see ResponseSender.send): the backend may lend memory of its
   * own instead of copying outputs out of it. Absent or false: outputs must stay valid for good.
   */
  readonly borrowOutputs?: boolean;
}

/** Where an execution's time went, for statistics: compute input, compute infer, compute output. */
export interface ExecutionTimes {
  inputNs: number;
  inferNs: number;
  outputNs: number;
  /**
   * How long the execution waited inside the instance behind an earlier one before it started (an instance with
   * a pipelineDepth above 1); the scheduler counts it as queue time. Absent: 0.
   */
  waitNs?: number;
}

export interface BackendInstance {
  /**
   * True when execute() does its work on the event loop before returning (an inline ONNX Runtime session):
   * the scheduler then runs such an instance's requests together once per turn of the loop, after the
   * turn's network reads, rather than one by one as they arrive (see scheduler/direct.ts).
   */
  readonly synchronous?: boolean;
  /**
   * How many executions the direct scheduler may hand this instance at once; absent: 1. An instance whose
   * executions run one after another in another process (the Python stub) gets the next one while the current
   * one runs, so the next starts as soon as the current one ends, rather than after the server has read the
   * answer and sent the next request: that round trip then overlaps the work instead of adding to it. The
   * batchers ignore it (a batch should grow while its instance is busy, not leave early).
   */
  readonly pipelineDepth?: number;
  /**
   * Runs the requests as one execution (a batch of one or more). Every request's sender is resolved (sent or
   * failed) before the promise settles, except for decoupled models, whose senders may go on sending after
   * the instance is free again (the promise then means only that). The promise itself rejects only if the
   * instance is broken.
   */
  execute(requests: readonly BackendRequest[]): Promise<ExecutionTimes>;
  /**
   * False while the instance cannot serve although it loaded (an engine behind it is down): the model version
   * then reports not ready. Absent means ready.
   */
  ready?(): boolean;
  close(): Promise<void>;
}
