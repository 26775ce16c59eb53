/**
 * Triton's scheduler test hooks: environment variables its QA suites set so that requests collect in a
 * batcher's queues before the first batch forms, which makes the batches its tests expect deterministic.
 * Each scheduler reads them once, when it is built; unset, they cost the request path nothing.
 *
 * TRITONSERVER_DELAY_SCHEDULER=<n>: a dynamic or sequence batcher runs nothing until <n> requests wait in it
 *   (direct sequence batcher: requests of the sequences that have a place; oldest: sequences that have a place
 *   and a request waiting, what Triton's per-instance dynamic batchers see); from then on it batches as usual,
 *   for good.
 * TRITONSERVER_BACKLOG_DELAY_SCHEDULER=<m>: together with the above, a direct sequence batcher also waits until
 *   <m> requests wait in its backlog (sequences that have no place yet). Alone it does nothing, as in Triton.
 *
 * A batcher that is stopping (model unload, server shutdown) stops holding: nothing more will arrive.
 */
export interface SchedulerHold {
  /** Requests that must wait in the batcher (in placed sequences, for the sequence batcher). */
  readonly queued: number;
  /** Requests that must wait in the sequence batcher's backlog as well (0: no condition). */
  readonly backlog: number;
}

/** The hold the environment asks for, or undefined (the usual case) when TRITONSERVER_DELAY_SCHEDULER is unset or 0. */
export function schedulerHold(env: NodeJS.ProcessEnv = process.env): SchedulerHold | undefined {
  const queued = envCount(env['TRITONSERVER_DELAY_SCHEDULER']);
  if (queued === 0) return undefined;
  return { queued, backlog: envCount(env['TRITONSERVER_BACKLOG_DELAY_SCHEDULER']) };
}

/** A count read the way Triton reads these variables (C's atoi): leading digits; anything else, or below 1, is 0. */
export function envCount(value: string | undefined): number {
  const n = value === undefined ? 0 : parseInt(value, 10);
  return n > 0 ? n : 0;
}
