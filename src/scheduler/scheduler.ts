import { unavailable, type NereidError } from '../errors.js';
import type { BackendInstance, BackendRequest, ExecutionTimes } from '../backends/backend.js';

/**
 * A request as the scheduler holds it. The model layer creates it; the scheduler decides when and on which
 * instance it runs and then calls exactly one of `finish` (it executed; the backend answered through the
 * request's sender) or `reject` (it never ran).
 */
export interface Job extends BackendRequest {
  /** Rows this request contributes to a batch (1 for models without batching). */
  readonly rows: number;
  readonly enqueuedNs: bigint;
  readonly signal: AbortSignal | undefined;
  /** The client's request id ('' when none), and its schedule_policy parameters, for schedulers that use them. */
  readonly id: string;
  readonly priority: number | undefined;
  readonly timeoutUs: number | undefined;
  /** The request's tenant (its API key id), by which a contended queue is shared; undefined without keys. */
  readonly tenant?: string | undefined;
  /** The sequence extension's correlation id and flags (sequence batcher). */
  readonly sequenceId: number | bigint | string | undefined;
  readonly sequenceStart: boolean;
  readonly sequenceEnd: boolean;
  /** Owned by the scheduler: a queued job that is cancelled is skipped when reached. */
  state: 'queued' | 'running' | 'done';
  finish(execStartNs: bigint, times: ExecutionTimes): void;
  /** The job never ran; `reason` is how statistics count the failure (default OTHER). */
  reject(error: NereidError, reason?: FailureReason): void;
}

/**
 * Why a request failed, as Triton's failure counter labels it: REJECTED by the scheduler's queue policy (full
 * queue, timeout), CANCELED while waiting, BACKEND when the model failed, OTHER for anything else.
 */
export type FailureReason = 'REJECTED' | 'CANCELED' | 'BACKEND' | 'OTHER';

/**
 * Told of every execution, for statistics: how many rows ran together, where the time went, and on which
 * instance (schedulers that know it say so, for per-instance statistics).
 */
export type ExecutionListener = (batchRows: number, times: ExecutionTimes, instance?: BackendInstance) => void;

/**
 * How requests become executions. The scheduler owns a job from a successful enqueue until it calls finish or
 * reject; enqueue never throws.
 */
export interface Scheduler {
  enqueue(job: Job): void;
  /** Jobs queued or executing. */
  inflight(): number;
  /** Jobs accepted but not yet handed to an instance (Triton's pending request count). */
  waiting(): number;
  /** Sequences started and not ended (sequence batcher): a model holding any is not idle. */
  liveSequences?(): number;
  /** Refuses new jobs and resolves when every accepted job has finished. */
  drain(): Promise<void>;
  /** Answers every job still waiting with `error`; executions already running finish (shutdown timeout). */
  rejectQueued(error: NereidError): void;
}

/** Triton prefixes a request's errors with its id when it has one. */
export function logPrefix(job: Job): string {
  return job.id ? `[request id: ${job.id}] ` : '';
}

/** The refusal of a request that arrives while its model unloads or the server stops, in Triton's words. */
export function stoppedScheduler(job: Job, prefixed = true): NereidError {
  return unavailable(`${prefixed ? logPrefix(job) : ''}Server is stopping, scheduler for model has stopped accepting new inference requests`);
}
