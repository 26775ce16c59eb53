import { createRequire } from 'node:module';
import type { Redis as RedisClient } from 'ioredis';
import { NereidError } from '../errors.js';
import { reachRedis } from './redis-reach.js';

// Keeps a value and its place in the index of ids by time, then drops what is past the TTL from the index and
// the oldest entries past the count, all inside Redis so that replicas sharing it keep one bound.
const PUT = `
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('SET', ARGV[1] .. ARGV[2], ARGV[3], 'PX', ARGV[4])
redis.call('ZADD', KEYS[1], ms, ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ms - tonumber(ARGV[4]))
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[5])
if over > 0 then
  for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, over - 1)) do redis.call('DEL', ARGV[1] .. id) end
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, over - 1)
end
return 1`;

const DROP = `
redis.call('ZREM', KEYS[1], ARGV[2])
return redis.call('DEL', ARGV[1] .. ARGV[2])`;

type StoreClient = RedisClient & {
  nereidTextPut(index: string, prefix: string, id: string, value: string, ttlMs: string, maxEntries: string): Promise<number>;
  nereidTextDrop(index: string, prefix: string, id: string): Promise<number>;
};

export interface RedisTextStoreOptions {
  readonly host: string;
  readonly port: number;
  readonly db: number;
  readonly username?: string;
  readonly password?: string;
  /** Keys are `<prefix><id>`, and `<prefix>index` the ids by the time they were stored. */
  readonly prefix: string;
  readonly maxEntries: number;
  /** A larger value is not stored. */
  readonly maxEntryChars: number;
  readonly ttlMs: number;
  /** Named in errors: the setting that points here. */
  readonly setting: string;
}

/** The longest a command waits for Redis. */
const WAIT_MS = 5000;

/**
 * Texts by id in Redis, bounded as the in-memory store is (entries, size of each, a TTL), for the OpenAI
 * frontend's stored responses (--openai-response-store): replicas sharing the Redis see each other's. Redis
 * that does not answer fails the request (UNAVAILABLE): a stored response cannot be answered from nowhere.
 */
export class RedisTextStore {
  private readonly index: string;

  private constructor(private readonly client: StoreClient, private readonly o: RedisTextStoreOptions) {
    this.index = `${o.prefix}index`;
  }

  static async connect(o: RedisTextStoreOptions): Promise<RedisTextStore> {
    const { Redis } = createRequire(import.meta.url)('ioredis') as typeof import('ioredis');
    const client = new Redis({
      host: o.host, port: o.port, db: o.db, ...(o.username ? { username: o.username } : {}), ...(o.password ? { password: o.password } : {}),
      connectTimeout: WAIT_MS, commandTimeout: WAIT_MS, maxRetriesPerRequest: 1, lazyConnect: true, retryStrategy: () => 200,
    });
    client.defineCommand('nereidTextPut', { numberOfKeys: 1, lua: PUT });
    client.defineCommand('nereidTextDrop', { numberOfKeys: 1, lua: DROP });
    const unreachable = await reachRedis(client);
    if (unreachable !== undefined) throw new NereidError('INVALID_ARG', `${o.setting}: cannot reach Redis: ${unreachable}`);
    return new RedisTextStore(client as StoreClient, o);
  }

  async get(id: string): Promise<string | undefined> {
    return (await this.answer(this.client.get(this.o.prefix + id))) ?? undefined;
  }

  async set(id: string, value: string): Promise<void> {
    if (value.length > this.o.maxEntryChars) return;
    await this.answer(this.client.nereidTextPut(this.index, this.o.prefix, id, value, String(this.o.ttlMs), String(this.o.maxEntries)));
  }

  async delete(id: string): Promise<boolean> {
    return (await this.answer(this.client.nereidTextDrop(this.index, this.o.prefix, id))) === 1;
  }

  async close(): Promise<void> {
    this.client.disconnect();
  }

  private async answer<T>(p: Promise<T>): Promise<T> {
    try {
      return await p;
    } catch (e) {
      throw new NereidError('UNAVAILABLE', `the response store (${this.o.setting}) did not answer: ${(e as Error).message}`);
    }
  }
}
