import type { NereidError } from '../errors.js';
import type { BackendRequest, ExecutionTimes } from '../backends/backend.js';

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
  /** The sequence extension's correlation id and flags (sequence batcher). */
  readonly sequenceId: number | bigint | string | undefined;
  readonly sequenceStart: boolean;
  readonly sequenceEnd: boolean;
  /** Owned by the scheduler: a queued job that is cancelled is skipped when reached. */
  state: 'queued' | 'running' | 'done';
  finish(execStartNs: bigint, times: ExecutionTimes): void;
  reject(error: NereidError): void;
}

/**
 * How requests become executions. The scheduler owns a job from a successful enqueue until it calls finish or
 * reject; enqueue never throws.
 */
/** Told of every execution, for statistics: how many rows ran together and where the time went. */
export type ExecutionListener = (batchRows: number, times: ExecutionTimes) => void;

export interface Scheduler {
  enqueue(job: Job): void;
  /** Jobs queued or executing. */
  inflight(): number;
  /** Refuses new jobs and resolves when every accepted job has finished. */
  drain(): Promise<void>;
  /** Answers every job still waiting with `error`; executions already running finish (shutdown timeout). */
  rejectQueued(error: NereidError): void;
}
