import type { Logger } from '../observability/logger.js';

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

/**
 * Triton's lines for the hooks, logged once when a scheduler is built, whenever a variable is set (even to 0),
 * as Triton logs them: at verbose 1 for each of `batchers` (Triton's batcher threads, one per instance in a
 * sequence batcher) for TRITONSERVER_DELAY_SCHEDULER, and as information for TRITONSERVER_BACKLOG_DELAY_SCHEDULER
 * when `backlog` (a sequence batcher).
 */
export function announceHold(logger: Logger | undefined, batchers: readonly string[], backlog: boolean, env: NodeJS.ProcessEnv = process.env): void {
  if (logger === undefined) return;
  const queued = env['TRITONSERVER_DELAY_SCHEDULER'];
  if (queued !== undefined && logger.isVerbose(1)) {
    for (const b of batchers) logger.verbose(1, `Delaying ${b} until ${envCount(queued)} queued requests...`);
  }
  const behind = env['TRITONSERVER_BACKLOG_DELAY_SCHEDULER'];
  if (backlog && behind !== undefined) logger.info(`Delaying scheduler until ${envCount(behind)} backlog queued requests...`);
}
