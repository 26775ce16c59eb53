import { createRequire } from 'node:module';
import type { Redis as RedisClient, RedisOptions } from 'ioredis';
import { NereidError, invalidArg } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { Tensor } from '../tensor/tensor.js';
import { packTensors, unpackTensors } from '../tensor/pack.js';
import type { ResponseCache } from './cache.js';
import { reachRedis } from './redis-reach.js';

/**
 * Triton's `redis` cache, on ioredis (loaded only when configured). Settings as Triton's redis_cache names them:
 * host and port (required), user (default "default"), password, db, connect_timeout, socket_timeout and
 * wait_timeout in milliseconds. As Triton's, the cache connects (and logs in) when the server starts, and a
 * failure there stops the server ("Failed to initialize RedisCache: <reason>"). Afterwards commands do not queue
 * while Redis is away: a lookup that cannot be answered within wait_timeout is a miss and an insert is dropped,
 * so an outage costs hits, never requests. Values are tensors packed as tensor/pack.ts writes them.
 */
export class RedisResponseCache implements ResponseCache {
  private lastWarning = 0;

  private constructor(private readonly client: RedisClient, private readonly waitMs: number, private readonly logger: Logger) {
    client.on('error', (e: Error) => this.warn(`redis cache: ${e.message}`));
  }

  static async connect(settings: Readonly<Record<string, string>>, logger: Logger): Promise<RedisResponseCache> {
    const host = settings['host'];
    const port = Number(settings['port']);
    if (!host || !Number.isInteger(port) || port <= 0) throw invalidArg('--cache-config redis needs host=<host> and port=<port>');
    const ms = (k: string, d: number): number => {
      const v = settings[k];
      if (v === undefined) return d;
      const n = Number(v);
      if (!Number.isInteger(n) || n < 0) throw invalidArg(`--cache-config redis,${k} must be a whole number of milliseconds, got '${v}'`);
      return n;
    };
    const options: RedisOptions = {
      host, port,
      username: settings['user'] ?? process.env['TRITONCACHE_REDIS_USERNAME'] ?? 'default',
      password: settings['password'] ?? process.env['TRITONCACHE_REDIS_PASSWORD'],
      db: Number(settings['db'] ?? 0),
      connectTimeout: ms('connect_timeout', 0) || 10_000,
      commandTimeout: ms('socket_timeout', 0) || undefined,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      lazyConnect: true,
      retryStrategy: () => 500,
    };
    const { Redis } = createRequire(import.meta.url)('ioredis') as typeof import('ioredis');
    const client = new Redis(options);
    const unreachable = await reachRedis(client);
    if (unreachable !== undefined) throw new NereidError('INTERNAL', `Failed to initialize RedisCache: ${unreachable}`);
    return new RedisResponseCache(client, ms('wait_timeout', 1000), logger);
  }

  async get(key: string): Promise<readonly Tensor[] | undefined> {
    try {
      const v = await this.within(this.client.getBuffer(`nereid:${key}`));
      return v ? unpackTensors(v) : undefined;
    } catch (e) {
      this.warn(`redis cache lookup failed, answering as a miss: ${(e as Error).message}`);
      return undefined;
    }
  }

  async insert(key: string, outputs: readonly Tensor[]): Promise<void> {
    try {
      await this.within(this.client.set(`nereid:${key}`, packTensors(outputs)));
    } catch (e) {
      this.warn(`redis cache insert failed: ${(e as Error).message}`);
    }
  }

  async close(): Promise<void> {
    this.client.disconnect();
  }

  private within<T>(p: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${this.waitMs} ms`)), this.waitMs);
    });
    return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
  }

  /** At most one warning every 10 s: an outage must not flood the log. */
  private warn(msg: string): void {
    const now = Date.now();
    if (now - this.lastWarning < 10_000) return;
    this.lastWarning = now;
    this.logger.warn(msg);
  }
}
