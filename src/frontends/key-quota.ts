/** The limits of one key's line: requests a second (token bucket of `burst`) and requests at once; Infinity when unset. */
export interface QuotaLimits {
  readonly ratePerSec: number;
  readonly burst: number;
  readonly concurrency: number;
}

export const NO_LIMITS: QuotaLimits = { ratePerSec: Infinity, burst: Infinity, concurrency: Infinity };

/** Outcomes counted per key id in `nereid_key_request_count{key_id,outcome}`. */
export type KeyOutcome = 'admitted' | 'permission_denied' | 'rate_limited' | 'concurrency_limited';

/**
 * One key id's quota state and counts. It outlives reloads of the key file (the limits of the new line apply
 * to the state kept), so that rewriting the file neither refills a bucket nor forgets requests in flight.
 */
export class KeyQuota {
  private tokens: number;
  private lastMs: number;
  inflight = 0;
  readonly counts: Record<KeyOutcome, number> = { admitted: 0, permission_denied: 0, rate_limited: 0, concurrency_limited: 0 };
  /** Whether requests of this key are counted in flight (it has a concurrency limit): they then release. */
  tracksInflight = false;

  constructor(public limits: QuotaLimits, private readonly now: () => number = Date.now) {
    this.tokens = limits.burst;
    this.lastMs = now();
    this.tracksInflight = limits.concurrency !== Infinity;
  }

  update(limits: QuotaLimits): void {
    this.limits = limits;
    this.tokens = Math.min(this.tokens, limits.burst);
    this.tracksInflight = limits.concurrency !== Infinity;
  }

  /**
   * Takes one request: 0 when admitted (counted in flight when `inflight` and the key tracks that: release()
   * once it is over; a stream's requests after its opening take from the rate alone), otherwise the whole seconds after which a retry can be admitted (at least 1).
   */
  admit(inflight = true): number {
    const l = this.limits;
    const counted = inflight && this.tracksInflight;
    if (counted && this.inflight >= l.concurrency) {
      this.counts.concurrency_limited++;
      return 1;
    }
    if (l.ratePerSec !== Infinity) {
      const t = this.now();
      this.tokens = Math.min(l.burst, this.tokens + ((t - this.lastMs) / 1000) * l.ratePerSec);
      this.lastMs = t;
      if (this.tokens < 1) {
        this.counts.rate_limited++;
        return Math.max(1, Math.ceil((1 - this.tokens) / l.ratePerSec));
      }
      this.tokens -= 1;
    }
    if (counted) this.inflight++;
    this.counts.admitted++;
    return 0;
  }

  release(): void {
    if (this.inflight > 0) this.inflight--;
  }
}

/** `rate=10/s` (or /m), `burst=20`, `concurrency=4`, after a line's digest; throws naming what is wrong. */
export function parseLimits(fields: readonly string[]): QuotaLimits {
  let ratePerSec = Infinity;
  let burst: number | undefined;
  let concurrency = Infinity;
  for (const f of fields) {
    const eq = f.indexOf('=');
    const name = f.slice(0, eq);
    const v = f.slice(eq + 1);
    if (name === 'rate') {
      const m = /^([0-9]+(?:\.[0-9]+)?)\/(s|m)$/.exec(v);
      if (m === null || Number(m[1]) <= 0) throw new Error(`rate is <number>/s or <number>/m, above 0, got '${v}'`);
      ratePerSec = Number(m[1]) / (m[2] === 'm' ? 60 : 1);
    } else if (name === 'burst' || name === 'concurrency') {
      if (!/^[0-9]{1,9}$/.test(v) || Number(v) < 1) throw new Error(`${name} is an integer of at least 1, got '${v}'`);
      if (name === 'burst') burst = Number(v);
      else concurrency = Number(v);
    } else {
      throw new Error(`unknown limit '${eq === -1 ? f : name}' (limits: rate=<n>/s, burst=<n>, concurrency=<n>)`);
    }
  }
  if (burst !== undefined && ratePerSec === Infinity) throw new Error('burst needs a rate');
  return { ratePerSec, burst: ratePerSec === Infinity ? Infinity : burst ?? Math.max(1, Math.ceil(ratePerSec)), concurrency };
}
