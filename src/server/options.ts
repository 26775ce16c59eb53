/**
 * Everything an InferenceServer is configured with. The CLI turns `tritonserver`-style flags into this; an app
 * embedding Nereid builds it directly. Names follow the flags they come from, in camelCase.
 */

export type ModelControlMode = 'none' | 'poll' | 'explicit';

export interface ServerOptions {
  /** Model repositories (--model-repository, repeatable): local directories, or s3://, gs:// and as:// URLs. */
  modelRepositories: string[];
  /**
   * --repository-cache-dir (Nereid's): where models of repositories at URLs are downloaded and kept between
   * starts (default: nereid-repository-cache under the OS temp dir). TRITON_AWS_MOUNT_DIRECTORY,
   * TRITON_GCS_MOUNT_DIRECTORY and TRITON_AZURE_MOUNT_DIRECTORY win for their store.
   */
  repositoryCacheDir?: string;
  /** --model-control-mode (default 'none'). */
  modelControlMode?: ModelControlMode;
  /** --load-model (explicit mode only); ['*'] loads every model. */
  loadModels?: string[];
  /** --repository-poll-secs (default 15; poll mode only). */
  repositoryPollSecs?: number;
  /** --strict-model-config / --disable-auto-complete-config: no backend auto-complete, config file required. */
  strictModelConfig?: boolean;
  /** --model-config-name: use `<model>/configs/<name>.pbtxt` when it exists. */
  modelConfigName?: string;
  /** --exit-on-error (default true): a model that fails to load at startup fails the start. */
  exitOnError?: boolean;
  /** --strict-readiness (default true): the server is ready only while every model is ready. */
  strictReadiness?: boolean;
  /**
   * --sequence-state-store redis://host:port[/db]: the sequence batcher keeps every sequence in Redis, so that
   * any replica sharing the store runs its next step (see scheduler/sequence-store.ts). Off by default.
   */
  sequenceStateStore?: string;
  /** --exit-timeout-secs (default 30): how long close() waits for in-flight requests. */
  exitTimeoutSecs?: number;
  /** --backend-config, parsed: backend name ('' for global) → key → value. */
  backendConfig?: Record<string, Record<string, string>>;
  /** --id (default 'triton'): the name server metadata reports. */
  id?: string;
  /** --model-load-thread-count (default 4). */
  modelLoadThreadCount?: number;
  /**
   * --model-namespacing (default false): each repository is a namespace, so a name may be in several; a
   * request naming one of those is refused as ambiguous, and an ensemble runs its own repository's models.
   */
  modelNamespacing?: boolean;
  /**
   * --model-memory-budget (Nereid's, bytes; default none): the loaded models' measured memory together stays
   * within it; a load that would pass it unloads the least recently used idle models first (models/memory-budget.ts).
   */
  modelMemoryBudget?: number;
  /**
   * --model-load-on-demand (Nereid's, default false): a request, metadata or ready call naming a model of the
   * repository that is not loaded loads it, and waits for it up to modelLoadWaitSecs (default 60).
   */
  modelLoadOnDemand?: boolean;
  modelLoadWaitSecs?: number;
  /** --model-load-retry-count (default 0): times a version whose creation failed is created again before its load fails. */
  modelLoadRetryCount?: number;
  /**
   * --model-max-instances (Nereid's, default 128): instances one model version may have, its instance_group counts
   * summed; a load asking for more fails, naming the limit.
   */
  modelMaxInstances?: number;
  /**
   * --server-max-instances (Nereid's, default 1024): instances of all loaded model versions together; a version
   * whose instances would pass it fails to load, naming the limit.
   */
  serverMaxInstances?: number;
  /** --rate-limit (default off): execution_count makes instances wait for their rate_limiter resources. */
  rateLimit?: 'off' | 'execution_count';
  /** --rate-limit-resource, parsed: units of a resource on one device (or every device when undefined). */
  rateLimitResources?: { name: string; count: number; device: number | undefined }[];
  /**
   * --cache-config (or --response-cache-byte-size), by cache name: the server's response cache, for models
   * with response_cache { enable: true }. Nereid has the `local` cache: `{ local: { size: '<bytes>' } }`.
   */
  responseCache?: Record<string, Record<string, string>>;
  /**
   * Prometheus metrics with Triton's names (the CLI's --allow-metrics, on by default there; off unless given
   * here). Read them with InferenceServer.metricsText() or metricsRegistry; `nereid serve` also serves them on
   * --metrics-port. Nothing is loaded or recorded while this is absent.
   */
  metrics?: MetricsOptions;
  /**
   * --allow-client-shm (default false, as current Triton): clients may register shared-memory regions and name
   * them in requests. Off, those calls and requests answer UNSUPPORTED; status still answers.
   */
  allowClientShm?: boolean;
  /**
   * --shm-max-regions (Nereid's; default 4096): shared-memory regions the server maps at once for its clients,
   * counted until their last request lets them go. Past it, registering answers RESOURCE_EXHAUSTED.
   */
  shmMaxRegions?: number;
  /** --shm-max-mapped-bytes (Nereid's; default 64 GiB): bytes of those regions mapped at once, in whole pages. */
  shmMaxMappedBytes?: number;
  /**
   * --trace-config entries (`<setting>=<value>` or `<mode>,<setting>=<value>`, the deprecated --trace-* flags
   * turned into them): Triton's trace settings at start, changed later through the trace APIs. Absent: level
   * OFF, rate 1000, count -1, Triton mode with no file, as tritonserver starts without the flag.
   */
  trace?: readonly string[];
}

export interface MetricsOptions {
  /** --metrics-config entries, `<setting>=<value>`: counter_latencies, histogram_latencies, summary_latencies, summary_quantiles. */
  config?: string[];
  /** --metrics-interval-ms (default 2000): how often the CPU and memory gauges are refreshed. */
  intervalMs?: number;
  /** --allow-cpu-metrics (default true). */
  cpu?: boolean;
}

export const DEFAULT_SERVER_ID = 'triton';
/** Nereid's own version, reported by server metadata. */
export const NEREID_VERSION = '0.1.0';
