import { createRequire } from 'node:module';
import type { Redis as RedisClient } from 'ioredis';
import { invalidArg } from '../errors.js';
import { decodeSequence, encodeSequence, type SequenceStateStore, type StoredSequence } from './sequence-store.js';
import { reachRedis } from '../cache/redis-reach.js';

// Compare-and-set on the step counter, done inside Redis so that no other commit comes between the check and
// the write.
const COMMIT = `
local s = redis.call('HGET', KEYS[1], 'step')
if (s or '0') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'step', ARGV[2], 'blob', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1`;

// A step's arrival restarts its sequence's idle time, as in Triton, where the idle timer counts from the
// sequence's latest request: the read also moves the key's expiry to a full idle time from now.
const LOAD = `
local v = redis.call('HMGET', KEYS[1], 'step', 'blob')
if v[1] then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return v`;

type CommitClient = RedisClient & {
  nereidSequenceCommit(key: string, expected: string, next: string, blob: Buffer, ttl: string): Promise<number>;
  nereidSequenceLoadBuffer(key: string, ttl: string): Promise<[Buffer | null, Buffer | null]>;
};

/** The longest a step waits for the store, whatever the sequence's idle time. */
const MAX_WAIT_MS = 5000;

/**
 * How long a step waits for the store: a quarter of its sequence's idle time (at most 5 s), so that a step
 * refused because the store did not answer is refused while its sequence is still alive, and sending it again
 * (as the refusal says) continues the sequence rather than finding it expired.
 */
export function storeWaitMs(ttlMs: number): number {
  return Math.min(MAX_WAIT_MS, Math.max(1, Math.floor(ttlMs / 4)));
}

/**
 * --sequence-state-store redis://host:port[/db]: sequences in Redis, one hash per sequence under
 * `nereid:seq:<model>:<version>:<id>`. Unlike the response cache, a store that does not answer fails the step
 * (UNAVAILABLE): running it on a state that may be stale would give wrong outputs.
 */
export class RedisSequenceStore implements SequenceStateStore {
  private constructor(private readonly client: CommitClient) {}

  static async connect(url: string, timeoutMs = MAX_WAIT_MS): Promise<RedisSequenceStore> {
    const { host, port, db, username, password } = parseRedisUrl(url);
    const { Redis } = createRequire(import.meta.url)('ioredis') as typeof import('ioredis');
    const client = new Redis({
      host, port, db, ...(username ? { username } : {}), ...(password ? { password } : {}),
      // Each step bounds its own wait (storeWaitMs); the client's timeout only ends a command nobody waits for.
      connectTimeout: timeoutMs, commandTimeout: MAX_WAIT_MS, maxRetriesPerRequest: 1, lazyConnect: true,
      // The loads and commits of one batch go out in one write.
      enableAutoPipelining: true,
      retryStrategy: () => 200,
    });
    client.defineCommand('nereidSequenceCommit', { numberOfKeys: 1, lua: COMMIT });
    client.defineCommand('nereidSequenceLoad', { numberOfKeys: 1, lua: LOAD });
    // Errors reach the steps that fail on them (reachRedis's listener keeps a lost connection from ending the process).
    const unreachable = await reachRedis(client);
    if (unreachable !== undefined) throw invalidArg(`--sequence-state-store ${redact(url)}: cannot reach Redis: ${unreachable}`);
    return new RedisSequenceStore(client as CommitClient);
  }

  async load(key: string, ttlMs: number): Promise<StoredSequence | undefined> {
    const [step, blob] = await within(this.client.nereidSequenceLoadBuffer(key, ttl(ttlMs)), storeWaitMs(ttlMs));
    if (!step || !blob) return undefined;
    return decodeSequence(Number(step.toString()), blob);
  }

  async commit(key: string, expected: number, next: StoredSequence, ttlMs: number): Promise<boolean> {
    const done = await within(this.client.nereidSequenceCommit(key, String(expected), String(next.step), encodeSequence(next), ttl(ttlMs)), storeWaitMs(ttlMs));
    return done === 1;
  }

  async close(): Promise<void> {
    this.client.disconnect();
  }
}

const ttl = (ms: number): string => String(Math.max(1, Math.ceil(ms)));

/** `p`, or a rejection once `ms` have passed without its answer. */
function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** `url`'s parts; `flag` names the setting in errors. */
export function parseRedisUrl(url: string, flag = '--sequence-state-store'): { host: string; port: number; db: number; username?: string; password?: string } {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw invalidArg(`${flag} must be redis://<host>:<port>[/<db>], got '${redact(url)}'`);
  }
  const db = u.pathname === '' || u.pathname === '/' ? 0 : Number(u.pathname.slice(1));
  const port = u.port === '' ? 6379 : Number(u.port);
  if (u.protocol !== 'redis:' || u.hostname === '' || !Number.isInteger(db) || db < 0 || !Number.isInteger(port) || port <= 0) {
    throw invalidArg(`${flag} must be redis://<host>:<port>[/<db>], got '${redact(url)}'`);
  }
  return {
    host: u.hostname.replace(/^\[|\]$/g, ''), port, db,
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
  };
}

/** The URL without its password, for messages. */
export function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}
