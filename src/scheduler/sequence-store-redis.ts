import { createRequire } from 'node:module';
import type { Redis as RedisClient } from 'ioredis';
import { invalidArg } from '../errors.js';
import { decodeSequence, encodeSequence, type SequenceStateStore, type StoredSequence } from './sequence-store.js';

// Compare-and-set on the step counter, done inside Redis so that no other commit comes between the check and
// the write.
const COMMIT = `
local s = redis.call('HGET', KEYS[1], 'step')
if (s or '0') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'step', ARGV[2], 'blob', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1`;

type CommitClient = RedisClient & { nereidSequenceCommit(key: string, expected: string, next: string, blob: Buffer, ttl: string): Promise<number> };

/**
 * --sequence-state-store redis://host:port[/db]: sequences in Redis, one hash per sequence under
 * `nereid:seq:<model>:<version>:<id>`. Unlike the response cache, a store that does not answer fails the step
 * (UNAVAILABLE): running it on a state that may be stale would give wrong outputs.
 */
export class RedisSequenceStore implements SequenceStateStore {
  private constructor(private readonly client: CommitClient) {}

  static async connect(url: string, timeoutMs = 5000): Promise<RedisSequenceStore> {
    const { host, port, db, username, password } = parseRedisUrl(url);
    const { Redis } = createRequire(import.meta.url)('ioredis') as typeof import('ioredis');
    const client = new Redis({
      host, port, db, ...(username ? { username } : {}), ...(password ? { password } : {}),
      connectTimeout: timeoutMs, commandTimeout: timeoutMs, maxRetriesPerRequest: 1, lazyConnect: true,
      // The loads and commits of one batch go out in one write.
      enableAutoPipelining: true,
      retryStrategy: () => 200,
    });
    client.defineCommand('nereidSequenceCommit', { numberOfKeys: 1, lua: COMMIT });
    // Errors reach the steps that fail on them; an 'error' listener keeps a lost connection from ending the process.
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.ping();
    } catch (e) {
      client.disconnect();
      throw invalidArg(`--sequence-state-store ${redact(url)}: cannot reach Redis: ${(e as Error).message}`);
    }
    return new RedisSequenceStore(client as CommitClient);
  }

  async load(key: string): Promise<StoredSequence | undefined> {
    const [step, blob] = await this.client.hmgetBuffer(key, 'step', 'blob');
    if (!step || !blob) return undefined;
    return decodeSequence(Number(step.toString()), blob);
  }

  async commit(key: string, expected: number, next: StoredSequence, ttlMs: number): Promise<boolean> {
    const done = await this.client.nereidSequenceCommit(key, String(expected), String(next.step), encodeSequence(next), String(Math.max(1, Math.ceil(ttlMs))));
    return done === 1;
  }

  async close(): Promise<void> {
    this.client.disconnect();
  }
}

export function parseRedisUrl(url: string): { host: string; port: number; db: number; username?: string; password?: string } {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw invalidArg(`--sequence-state-store must be redis://<host>:<port>[/<db>], got '${redact(url)}'`);
  }
  const db = u.pathname === '' || u.pathname === '/' ? 0 : Number(u.pathname.slice(1));
  const port = u.port === '' ? 6379 : Number(u.port);
  if (u.protocol !== 'redis:' || u.hostname === '' || !Number.isInteger(db) || db < 0 || !Number.isInteger(port) || port <= 0) {
    throw invalidArg(`--sequence-state-store must be redis://<host>:<port>[/<db>], got '${redact(url)}'`);
  }
  return {
    host: u.hostname.replace(/^\[|\]$/g, ''), port, db,
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
  };
}

/** The URL without its password, for messages. */
function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}
