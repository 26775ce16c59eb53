import type { Logger } from './logger.js';

/**
 * Refusals by the server's limits (region counts, mapped bytes, body and decompressed sizes, instance counts,
 * …), counted per limit for the metric `nereid_limit_refusal_count{limit}` and logged at most once per
 * interval per limit, so that an operator sees an attack or a misconfigured client without a client being
 * able to flood the log. Frontends report every error that carries a `limit`; nothing else calls this.
 */
export class LimitRefusals {
  private readonly counts = new Map<string, number>();
  /** Per limit: when it was last logged, and the refusals since then that were not. */
  private readonly logged = new Map<string, { atMs: number; unlogged: number }>();

  constructor(private readonly logger: Logger, private readonly intervalMs = 60_000, private readonly now: () => number = Date.now) {}

  /** Counts one refusal by `limit`; logs it unless that limit was logged less than an interval ago. */
  refused(limit: string, message: string): void {
    this.counts.set(limit, (this.counts.get(limit) ?? 0) + 1);
    const t = this.now();
    const last = this.logged.get(limit);
    if (last !== undefined && t - last.atMs < this.intervalMs) {
      last.unlogged++;
      return;
    }
    const more = last !== undefined && last.unlogged > 0 ? ` (and ${last.unlogged} more refusal(s) by this limit since it was last logged)` : '';
    this.logged.set(limit, { atMs: t, unlogged: 0 });
    this.logger.warn(`limit '${limit}' refused a request: ${message}${more}`);
  }

  /** Refusals so far, by limit name. */
  entries(): IterableIterator<[string, number]> {
    return this.counts.entries();
  }
}
