import { createHash } from 'node:crypto';
import { readFileSync, unwatchFile, watchFile, type Stats } from 'node:fs';
import { NereidError } from '../errors.js';
import type { Logger } from '../observability/logger.js';

/** Triton's restricted-API categories: the scopes a key may hold (`*` holds them all). */
export const SCOPE_CATEGORIES = ['health', 'metadata', 'inference', 'shared-memory', 'model-config', 'model-repository', 'statistics', 'trace', 'logging'] as const;

/** Whether a model name is one a narrowed scope names. */
type ModelTest = (model: string) => boolean;

/** One line of the key file: what the key may do, never the key itself. */
export interface ApiKey {
  readonly id: string;
  /** Per category: null for every model, or the test of the model names the scope is narrowed to. */
  readonly scopes: ReadonlyMap<string, ModelTest | null>;
}

/** A request the keys refuse: no or an unknown key (401 / UNAUTHENTICATED), or a key without the scope (403 / PERMISSION_DENIED). */
export interface KeyRefusal {
  readonly kind: 'unauthenticated' | 'permission-denied';
  readonly message: string;
}

const MISSING: KeyRefusal = { kind: 'unauthenticated', message: "This API requires an API key, expecting header 'Authorization: Bearer <key>'" };
const UNKNOWN: KeyRefusal = { kind: 'unauthenticated', message: 'The API key is not valid' };
/** A key's digest in hex: 64 characters; a longer bearer token is refused before it is hashed. */
const MAX_KEY_LENGTH = 512;
const RELOAD_INTERVAL_MS = 1000;

/**
 * --api-keys-file: the keys a request must present, looked up by the SHA-256 of the presented key (the file
 * holds digests only, and a lookup by digest tells nothing about how close a wrong key came). The file is
 * read again when it changes; a file that no longer parses keeps the keys last read, and the log says why.
 */
export class ApiKeys {
  private byDigest: ReadonlyMap<string, ApiKey>;
  private readonly onChange: (now: Stats, before: Stats) => void;

  /** Reads `file` (throws when it cannot be read or parsed: the server does not start with a bad key file). */
  constructor(private readonly file: string, readonly protectHealth: boolean, private readonly logger: Logger) {
    this.byDigest = parseKeyFile(readFileSync(file, 'utf8'));
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
    const digest = createHash('sha256').update(authorization.slice(7).trim()).digest('hex');
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
    const missing = test === undefined || model === undefined ? category : `${category}:${model}`;
    return { kind: 'permission-denied', message: `The API key '${key.id}' lacks scope '${missing}'` };
  }

  /** authenticate, then permit; null when the request may go on. Health is open unless --api-keys-protect-health. */
  check(authorization: string | string[] | undefined, category: string, model: string | undefined): KeyRefusal | null {
    if (category === 'health' && !this.protectHealth) return null;
    const key = this.authenticate(authorization);
    return 'kind' in key ? key : this.permit(key, category, model);
  }

  private reload(): void {
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch (e) {
      this.logger.error(`failed to read the API key file, keeping the ${this.byDigest.size} keys read before: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
      return;
    }
    try {
      this.byDigest = parseKeyFile(text);
    } catch (e) {
      this.logger.error(`the API key file no longer parses, keeping the ${this.byDigest.size} keys read before: ${(e as Error).message}`);
      return;
    }
    this.logger.info(`API key file reloaded: ${this.byDigest.size} keys`);
  }
}

/** A refusal as the error its frontend answers: UNAUTHENTICATED or PERMISSION_DENIED. */
export function refusalError(r: KeyRefusal): NereidError {
  return new NereidError(r.kind === 'unauthenticated' ? 'UNAUTHENTICATED' : 'PERMISSION_DENIED', r.message);
}

/** True for an ApiKeys refusal, false for a key. */
export function isRefusal(k: ApiKey | KeyRefusal): k is KeyRefusal {
  return 'kind' in k;
}

const ID = /^[A-Za-z0-9._-]{1,64}$/;
const DIGEST = /^[0-9a-f]{64}$/;

/**
 * The key file: one key a line, `ID SCOPES SHA256` separated by blanks; `#` starts a comment line. SCOPES are
 * separated by `;`, each a category or `*`, a category optionally narrowed to model names given as globs
 * (`inference:simple,digits*`). Throws naming the first bad line.
 */
export function parseKeyFile(text: string): Map<string, ApiKey> {
  const byDigest = new Map<string, ApiKey>();
  const ids = new Set<string>();
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '' || line.startsWith('#')) continue;
    const fail = (why: string): never => {
      throw new Error(`line ${i + 1}: ${why}`);
    };
    const fields = line.split(/\s+/);
    if (fields.length !== 3) fail(`expected 'ID SCOPES SHA256', got ${fields.length} fields`);
    const [id, scopes, digest] = fields as [string, string, string];
    if (!ID.test(id)) fail('a key id is 1 to 64 letters, digits, dots, dashes or underscores');
    if (ids.has(id)) fail(`key id '${id}' appears twice`);
    if (!DIGEST.test(digest)) fail('the key is given as the SHA-256 of the key in 64 lowercase hex digits');
    if (byDigest.has(digest)) fail(`key '${id}' has the same digest as another key`);
    let parsed: Map<string, ModelTest | null>;
    try {
      parsed = parseScopes(scopes);
    } catch (e) {
      return fail((e as Error).message);
    }
    ids.add(id);
    byDigest.set(digest, { id, scopes: parsed });
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
