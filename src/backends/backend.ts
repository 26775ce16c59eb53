import { relative } from 'node:path';
import { invalidArg, type NereidError } from '../errors.js';
import type { ModelConfig } from '../config/types.js';
import { modelConfigToJson } from '../config/index.js';
import type { ModelFolder } from '../config/model-files.js';
import type { Logger } from '../observability/logger.js';
import type { InferenceRequest, InferenceResponse, Parameters, RequestTrace, ResponseSender } from '../inference/index.js';
import type { ResponseStream } from '../inference/stream.js';
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
  /**
   * A check of each request's inputs that the backend needs beyond the config's (something its engine cannot
   * carry), made once when a model version loads and run before a request is queued, so that a bad request is
   * refused alone rather than failing the batch it would join. Undefined (or absent): nothing to check.
   */
  inputCheck?(config: ModelConfig): InputCheck | undefined;
  /**
   * Starts what the backend's first instance would wait for (an engine's library, a worker thread), in the
   * background, as soon as the server knows that the model in `modelDir` will load: it then overlaps the other
   * models' loads. Never throws; a failure shows when the instance is created.
   */
  prestart?(modelDir: string): void;
}

/**
 * What the server must know of a backend before it loads it, given with its registration: a model's config is
 * completed with these while the backend's own modules may still be loading (or fail to).
 */
export interface BackendTraits {
  /**
   * Instances a KIND_CPU instance group without a count gets; absent: 1. Triton's backends opt into more where
   * several instances pay on one machine (ONNX Runtime: 2), and not where they cost (PyTorch, OpenVINO).
   */
  readonly defaultCpuInstanceCount?: number;
}

/**
 * The argument of a model's initialize() as Triton's Python backend gives it (string values by Triton's keys),
 * which JavaScript models take too.
 */
export function initializeArgs(spec: InstanceSpec): Record<string, string> {
  return {
    model_config: JSON.stringify(modelConfigToJson(spec.config)),
    model_instance_kind: spec.kind.replace(/^KIND_/, ''),
    model_instance_name: spec.instanceName,
    model_instance_device_id: '0',
    model_repository: spec.modelDir,
    model_version: String(spec.version),
    model_name: spec.name,
  };
}

/** Throws a NereidError (INVALID_ARG) for inputs the backend cannot take; see Backend.inputCheck. */
export type InputCheck = (inputs: readonly Tensor[]) => void;

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
  /**
   * The model's execute timeout in milliseconds (see executeTimeoutMs()); undefined: none, as in Triton. A
   * backend whose executions can hang stops an execution that runs longer: its requests fail, and the process
   * or worker that ran it is stopped and started again.
   */
  readonly executeTimeoutMs?: number;
}

/**
 * Calls back up from a running model to the server: a Python model's BLS requests and model management. The
 * server hands this down when a model loads, so backends never import it.
 */
export interface ModelCalls {
  infer(request: InferenceRequest): Promise<InferenceResponse>;
  /**
   * Every response of a request as it comes (a decoupled model's stream, or an ordinary model's one response);
   * its `drained` tells whether the response just read carried the final flag.
   */
  inferStream(request: InferenceRequest): ResponseStream;
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
  /** The request's trace when it is traced: a backend that calls out (BLS, an engine) hands it on. */
  readonly trace?: RequestTrace | undefined;
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
   * execute() without the promise, on a synchronous instance only: every sender is resolved when it returns.
   * The direct scheduler uses it to run a turn's requests back to back without a promise and a microtask each.
   */
  executeNow?(requests: readonly BackendRequest[]): ExecutionTimes;
  /**
   * False while the instance cannot serve although it loaded (an engine behind it is down): the model version
   * then reports not ready. Absent means ready. An instance that can say why implements status() instead.
   */
  ready?(): boolean;
  /** Whether the instance can serve, and if not why (what ready() says, with the reason). */
  status?(): InstanceStatus;
  /**
   * The load of the text-generation engine behind the instance, for the gauges an LLM-aware load balancer
   * reads (waiting and running requests, KV-cache use); absent, or undefined, where the engine reports none.
   * Never rejects.
   */
  engineLoad?(): Promise<EngineLoad | undefined>;
  /**
   * The Prometheus exposition text of an engine the server runs for this instance (a managed engine), which the
   * server's metrics re-export under the model's labels; `engine` identifies it, so that instances sharing one
   * are read once. Absent, or undefined, where there is none. Never rejects.
   */
  engineMetrics?(): Promise<{ readonly engine: object; readonly text: string } | undefined>;
  /**
   * What the instance holds in memory as its engine reports it, read once the instance is loaded: `bytes`,
   * and `external` true when they live outside Nereid's process (a Python stub's process, an engine run
   * elsewhere) so that the process's RSS does not show them. Absent where the engine reports nothing.
   * Instances that share one engine report its shared part once (the first instance), their own part each.
   * Cheap and synchronous: no I/O beyond a read of /proc.
   */
  memory?(): InstanceMemory;
  /**
   * Ends the instance at once, without waiting for anything it runs (shutdown past --exit-timeout-secs): the
   * process or worker behind it is killed, every request it holds is answered with `error`, and every
   * execute() it has not resolved resolves. It is not started again; close() then returns at once.
   */
  kill?(error: NereidError): void;
  close(): Promise<void>;
}

/** An instance's memory as its engine reports it (see BackendInstance.memory). */
export interface InstanceMemory {
  readonly bytes: number;
  /** The bytes live outside Nereid's process, so its RSS does not count them. */
  readonly external: boolean;
}

/** An engine's load as one instance sees it. */
export interface EngineLoad {
  /** The engine itself: instances that share one engine return the same object, and it counts once. */
  readonly engine: object;
  /** Requests the engine holds that are not generating yet (Nereid's own queue is counted apart). */
  readonly waiting: number;
  /** Requests generating. */
  readonly running: number;
  /**
   * The KV cache: the share in use (0 to 1) and its size, which weighs engines against each other (1 when the
   * engine gives only the share); absent when the engine does not report it.
   */
  readonly kvCache?: { readonly usage: number; readonly capacity: number };
}

/**
 * An instance's health as readiness, the repository index and the metrics report it: ready, or not with a
 * reason; `hung` when an execution ran past the model's execute timeout and the instance has not been
 * replaced yet (its process stopped, the new one not started or not initialized).
 */
export interface InstanceStatus {
  readonly ready: boolean;
  readonly hung: boolean;
  /** Why it is not ready ('' when ready). */
  readonly reason: string;
}

export const READY_INSTANCE: InstanceStatus = Object.freeze({ ready: true, hung: false, reason: '' });

/**
 * The status of an instance that runs its model in a process or worker of its own (Python stub, JavaScript
 * worker): hung past the execute timeout, down (died, or could not start again), unloaded, or still starting.
 */
export function workerStatus(instanceName: string, ready: boolean, s: { hungReason?: string | undefined; downReason?: string | undefined; closed: boolean; starting: string }): InstanceStatus {
  if (ready) return READY_INSTANCE;
  const why = s.hungReason ?? s.downReason ?? (s.closed ? 'unloaded' : s.starting);
  return { ready: false, hung: s.hungReason !== undefined, reason: `model instance '${instanceName}': ${why}` };
}

/** The status of any instance: status() where it has one, else what ready() says. */
export function instanceStatus(i: BackendInstance): InstanceStatus {
  if (i.status) return i.status();
  if (i.ready && !i.ready()) return { ready: false, hung: false, reason: 'not ready' };
  return READY_INSTANCE;
}

/**
 * The config parameter that bounds one execution of a model, in milliseconds (Triton has none). The Python
 * backend's earlier spelling, NEREID_EXECUTE_TIMEOUT_MS, is read too; a model with neither gets the
 * environment variable NEREID_EXECUTE_TIMEOUT_MS of the server, if set, else no timeout.
 */
export const EXECUTE_TIMEOUT_PARAMETER = 'nereid_execute_timeout_ms';
const EXECUTE_TIMEOUT_ALIASES = [EXECUTE_TIMEOUT_PARAMETER, 'NEREID_EXECUTE_TIMEOUT_MS'];
export const EXECUTE_TIMEOUT_ENV = 'NEREID_EXECUTE_TIMEOUT_MS';

/** The model's execute timeout (see EXECUTE_TIMEOUT_PARAMETER); throws INVALID_ARG for a value that is not one. */
export function executeTimeoutMs(config: ModelConfig, env: NodeJS.ProcessEnv = process.env): number | undefined {
  let source = '';
  let v: string | undefined;
  for (const key of EXECUTE_TIMEOUT_ALIASES) {
    v = config.parameters[key]?.string_value;
    if (v !== undefined && v !== '') {
      source = `parameter ${key} of model '${config.name}'`;
      break;
    }
  }
  if (v === undefined || v === '') {
    v = env[EXECUTE_TIMEOUT_ENV];
    if (v === undefined || v === '') return undefined;
    source = `the environment variable ${EXECUTE_TIMEOUT_ENV}`;
  }
  const n = Number(v);
  if (!(n > 0) || !Number.isFinite(n)) throw invalidArg(`${source} must be a positive number of milliseconds, got '${v}'`);
  return n;
}
