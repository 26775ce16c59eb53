import { setTimeout as sleep } from 'node:timers/promises';
import { isTransient } from './store.js';

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  readonly attempts: number;
  /** The wait before the second attempt; it doubles each time after. */
  readonly firstDelayMs: number;
}

/** About 16 s of waiting in all: long enough for a store restarting or a connection dropped, short for a start. */
export const DEFAULT_RETRY: RetryPolicy = { attempts: 7, firstDelayMs: 250 };

/** Runs `op` until it succeeds, a failure is not transient, or the attempts are spent. */
export async function withRetries<T>(op: () => Promise<T>, policy: RetryPolicy, onRetry: (e: unknown, attempt: number, delayMs: number) => void): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await op();
    } catch (e) {
      if (attempt >= policy.attempts || !isTransient(e)) throw e;
      // Jitter keeps many files that failed together from coming back together.
      const delay = Math.round(policy.firstDelayMs * 2 ** (attempt - 1) * (0.75 + Math.random() * 0.5));
      onRetry(e, attempt, delay);
      await sleep(delay);
    }
  }
}
