import * as crypto from 'node:crypto';
import { readFileSync, unwatchFile, watchFile, type Stats } from 'node:fs';
import { NereidError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import { KeyQuota, parseLimits, type KeyOutcome, type QuotaLimits } from './key-quota.js';

/** Triton's restricted-API categories: the scopes a key may hold (`*` holds them all). */
export const SCOPE_CATEGORIES = ['health', 'metadata', 'inference', 'shared-memory', 'model-config', 'model-repository', 'statistics', 'trace', 'logging'] as const;

/** Whether a model name is one a narrowed scope names. */
type ModelTest = (model: string) => boolean;

/** One line of the key file: what the key may do, never the key itself. */
export interface KeyLine {
  readonly id: string;
  /** Per category: null for every model, or the test of the model names the scope is narrowed to. */
  readonly scopes: ReadonlyMap<string, ModelTest | null>;
  readonly limits: QuotaLimits;
}

/** A key as requests present it: its line and its id's quota state. */
export interface ApiKey extends KeyLine {
  readonly quota: KeyQuota;
}

/**
 * A request the keys refuse: no or an unknown key (401 / UNAUTHENTICATED), a key without the scope (403 /
 * PERMISSION_DENIED), or one over its quota (429 / RESOURCE_EXHAUSTED, retry after `retryAfterSecs`).
 */
export interface KeyRefusal {
  readonly kind: 'unauthenticated' | 'permission-denied' | 'over-quota';
  readonly message: string;
  readonly retryAfterSecs?: number;
}

const MISSING: KeyRefusal = { kind: 'unauthenticated', message: "This API requires an API key, expecting header 'Authorization: Bearer <key>'" };
const UNKNOWN: KeyRefusal = { kind: 'unauthenticated', message: 'The API key is not valid' };
/** A key's digest in hex: 64 characters; a longer bearer token is refused before it is hashed. */
const MAX_KEY_LENGTH = 512;
const RELOAD_INTERVAL_MS = 1000;

/** SHA-256 in hex: the one-shot crypto.hash where Node has it (20.12 on), a third of createHash's cost. */
const sha256: (s: string) => string = typeof (crypto as { hash?: unknown }).hash === 'function'
  ? (s) => (crypto as unknown as { hash(alg: string, data: string, enc: 'hex'): string }).hash('sha256', s, 'hex')
  : (s) => crypto.createHash('sha256').update(s).digest('hex');
/** A key's quota refusals are logged at most once in this long (with the count of those not logged). */
const LOG_INTERVAL_MS = 60_000;
const OUTCOMES: readonly KeyOutcome[] = ['admitted', 'permission_denied', 'rate_limited', 'concurrency_limited'];

/**
 * --api-keys-file: the keys a request must present, looked up by the SHA-256 of the presented key (the file
 * holds digests only, and a lookup by digest tells nothing about how close a wrong key came). The file is
 * read again when it changes; a file that no longer parses keeps the keys last read, and the log says why.
 */
export class ApiKeys {
  private byDigest: ReadonlyMap<string, ApiKey> = new Map();
  /** Per key id, kept across reloads of the file. */
  private readonly quotas = new Map<string, KeyQuota>();
  private readonly logged = new Map<string, { atMs: number; unlogged: number }>();
  /**
   * A request head the HTTP direct path reuses (a frozen headers object, the same bytes as the connection's
   * last head) and what its Authorization came to, while the keys are the same: a kept-alive client's key is
   * hashed once per connection, and nothing here compares secrets.
   */
  private readonly memo = new WeakMap<object, { byDigest: ReadonlyMap<string, ApiKey>; key: ApiKey | KeyRefusal }>();
  private readonly onChange: (now: Stats, before: Stats) => void;

  /** Reads `file` (throws when it cannot be read or parsed: the server does not start with a bad key file). */
  constructor(private readonly file: string, readonly protectHealth: boolean, private readonly logger: Logger) {
    this.use(parseKeyFile(readFileSync(file, 'utf8')));
    this.onChange = (now, before) => {
      if (now.mtimeMs !== before.mtimeMs || now.size !== before.size || now.ino !== before.ino) this.reload();
    };
    watchFile(file, { interval: RELOAD_INTERVAL_MS, persistent: false }, this.onChange);
  }

  get size(): number {
    return this.byDigest.size;
  }

  close(): void {
    unwatchFile(this.file, this.onChange);
  }

  /** The key of an `Authorization` header's value, or why there is none. */
  authenticate(authorization: string | string[] | undefined): ApiKey | KeyRefusal {
    if (typeof authorization !== 'string') return MISSING;
    // The scheme is case-insensitive (RFC 9110 11.1).
    if (authorization.length < 8 || authorization.length > MAX_KEY_LENGTH || authorization.slice(0, 7).toLowerCase() !== 'bearer ') return MISSING;
    const digest = sha256(authorization.slice(7).trim());
    return this.byDigest.get(digest) ?? UNKNOWN;
  }

  /**
   * Whether `key` holds `category` for `model`: a scope narrowed to models grants only requests naming one of
   * them (`model` undefined: the request names no model, so it needs the whole category). `anyModel` checks
   * only that the key holds the category for some model (a stream whose requests name their models later).
   */
  permit(key: ApiKey, category: string, model: string | undefined, anyModel = false): KeyRefusal | null {
    const scopes = key.scopes;
    const test = scopes.has(category) ? scopes.get(category) : scopes.get('*');
    if (test === null) return null;
    if (test !== undefined && (anyModel || (model !== undefined && test(model)))) return null;
    key.quota.counts.permission_denied++;
    const missing = test === undefined || model === undefined ? category : `${category}:${model}`;
    return { kind: 'permission-denied', message: `The API key '${key.id}' lacks scope '${missing}'` };
  }

  /**
   * authenticate, then permit: the request's key, or why it is refused; null for health requests, open unless
   * --api-keys-protect-health. A key returned still has its quota to pass (admit).
   */
  check(authorization: string | string[] | undefined, category: string, model: string | undefined, head?: object): ApiKey | KeyRefusal | null {
    if (category === 'health' && !this.protectHealth) return null;
    const key = head !== undefined && Object.isFrozen(head) ? this.memoized(head, authorization) : this.authenticate(authorization);
    if (isRefusal(key)) return key;
    return this.permit(key, category, model) ?? key;
  }

  private memoized(head: object, authorization: string | string[] | undefined): ApiKey | KeyRefusal {
    const m = this.memo.get(head);
    if (m !== undefined && m.byDigest === this.byDigest) return m.key;
    const key = this.authenticate(authorization);
    this.memo.set(head, { byDigest: this.byDigest, key });
    return key;
  }

  /**
   * The key's quota takes the request (`inflight`: it counts as one in flight until key.quota.release(), when
   * the key has a concurrency limit), or refuses it, logged with the key id at most once a minute.
   */
  admit(key: ApiKey, inflight = true): KeyRefusal | null {
    const retryAfterSecs = key.quota.admit(inflight);
    if (retryAfterSecs === 0) return null;
    const l = key.limits;
    const message = key.quota.inflight >= l.concurrency && inflight
      ? `The API key '${key.id}' has ${l.concurrency} requests in flight, its concurrency limit`
      : `The API key '${key.id}' is over its rate of ${Number(l.ratePerSec.toPrecision(6))} requests a second`;
    this.logRefusal(key.id, message);
    return { kind: 'over-quota', message, retryAfterSecs };
  }

  /** `nereid_key_request_count{key_id,outcome}`: the requests of each key id in the file, by outcome. */
  counts(): { value: number; labels: { key_id: string; outcome: KeyOutcome } }[] {
    const out = [];
    for (const key of this.byDigest.values()) {
      for (const outcome of OUTCOMES) out.push({ value: key.quota.counts[outcome], labels: { key_id: key.id, outcome } });
    }
    return out;
  }

  private logRefusal(id: string, message: string): void {
    const t = Date.now();
    const last = this.logged.get(id);
    if (last !== undefined && t - last.atMs < LOG_INTERVAL_MS) {
      last.unlogged++;
      return;
    }
    const more = last !== undefined && last.unlogged > 0 ? ` (and ${last.unlogged} more refusals of this key since it was last logged)` : '';
    this.logged.set(id, { atMs: t, unlogged: 0 });
    this.logger.warn(`API key '${id}' over its quota: ${message}${more}`);
  }

  /** The keys of a parsed file, each given its id's quota state (kept from before, with the new limits). */
  private use(lines: ReadonlyMap<string, KeyLine>): void {
    const byDigest = new Map<string, ApiKey>();
    for (const [digest, line] of lines) {
      let quota = this.quotas.get(line.id);
      if (quota === undefined) this.quotas.set(line.id, (quota = new KeyQuota(line.limits)));
      else quota.update(line.limits);
      byDigest.set(digest, { ...line, quota });
    }
    this.byDigest = byDigest;
  }

  private reload(): void {
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch (e) {
      this.logger.error(`failed to read the API key file, keeping the ${this.byDigest.size} keys read before: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
      return;
    }
    // A file being rewritten in place is empty for a moment (truncated, not yet written): that is never taken
    // for "no keys", which would refuse every client until the next poll. A file of comments alone revokes all.
    if (text === '') {
      this.logger.warn(`the API key file is empty, keeping the ${this.byDigest.size} keys read before`);
      return;
    }
    try {
      this.use(parseKeyFile(text));
    } catch (e) {
      this.logger.error(`the API key file no longer parses, keeping the ${this.byDigest.size} keys read before: ${(e as Error).message}`);
      return;
    }
    this.logger.info(`API key file reloaded: ${this.byDigest.size} keys`);
  }
}

/** A refusal as the error its frontend answers: UNAUTHENTICATED or PERMISSION_DENIED. */
export function refusalError(r: KeyRefusal): NereidError {
  return new NereidError(r.kind === 'unauthenticated' ? 'UNAUTHENTICATED' : r.kind === 'permission-denied' ? 'PERMISSION_DENIED' : 'RESOURCE_EXHAUSTED', r.message);
}

/** True for an ApiKeys refusal, false for a key. */
export function isRefusal(k: KeyLine | KeyRefusal): k is KeyRefusal {
  return 'kind' in k;
}

const ID = /^[A-Za-z0-9._-]{1,64}$/;
const DIGEST = /^[0-9a-f]{64}$/;

/**
 * The key file: one key a line, `ID SCOPES SHA256 [LIMIT...]` separated by blanks; `#` starts a comment line.
 * SCOPES are separated by `;`, each a category or `*`, a category optionally narrowed to model names given as
 * globs (`inference:simple,digits*`). LIMITs: `rate=10/s` (or /m), `burst=20`, `concurrency=4`. Throws naming
 * the first bad line.
 */
export function parseKeyFile(text: string): Map<string, KeyLine> {
  const byDigest = new Map<string, KeyLine>();
  const ids = new Set<string>();
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '' || line.startsWith('#')) continue;
    const fail = (why: string): never => {
      throw new Error(`line ${i + 1}: ${why}`);
    };
    const fields = line.split(/\s+/);
    if (fields.length < 3) fail(`expected 'ID SCOPES SHA256 [LIMIT...]', got ${fields.length} fields`);
    const [id, scopes, digest, ...limitFields] = fields as [string, string, string, ...string[]];
    if (!ID.test(id)) fail('a key id is 1 to 64 letters, digits, dots, dashes or underscores');
    if (ids.has(id)) fail(`key id '${id}' appears twice`);
    if (!DIGEST.test(digest)) fail('the key is given as the SHA-256 of the key in 64 lowercase hex digits');
    if (byDigest.has(digest)) fail(`key '${id}' has the same digest as another key`);
    let parsed: Map<string, ModelTest | null>;
    let limits: QuotaLimits;
    try {
      parsed = parseScopes(scopes);
      limits = parseLimits(limitFields);
    } catch (e) {
      return fail((e as Error).message);
    }
    ids.add(id);
    byDigest.set(digest, { id, scopes: parsed, limits });
  }
  return byDigest;
}

/** `health;inference:simple,digits*` as a map from category to its model test (null: every model). */
export function parseScopes(text: string): Map<string, ModelTest | null> {
  const scopes = new Map<string, ModelTest | null>();
  for (const scope of text.split(';')) {
    const colon = scope.indexOf(':');
    const category = colon === -1 ? scope : scope.slice(0, colon);
    if (category !== '*' && !(SCOPE_CATEGORIES as readonly string[]).includes(category)) {
      throw new Error(`unknown scope '${category}' (scopes: ${SCOPE_CATEGORIES.join(', ')}, or *)`);
    }
    if (scopes.has(category)) throw new Error(`scope '${category}' appears twice`);
    if (colon === -1) {
      scopes.set(category, null);
      continue;
    }
    const globs = scope.slice(colon + 1).split(',');
    if (globs.some((g) => g === '')) throw new Error(`scope '${category}' names an empty model`);
    scopes.set(category, modelTest(globs));
  }
  return scopes;
}

/** Globs (`*` any run of characters, `?` one) as one anchored pattern. */
function modelTest(globs: readonly string[]): ModelTest {
  const alternatives = globs.map((g) => g.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.'));
  const re = new RegExp(`^(?:${alternatives.join('|')})$`, 's');
  return (model) => re.test(model);
}
