import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { RedisTextStore, type RedisTextStoreOptions } from '../../src/cache/redis-text-store.js';
import { isNereidError } from '../../src/errors.js';
import { REDIS_SKIP, freeRedisPort, startRedis } from '../helpers/redis.js';

// The Redis store of the Responses API's stored responses against a real redis-server from Debian, started here
// on a free loopback port: its bounds (entries, size of each, a TTL) kept inside Redis, deletion, and a Redis
// that is gone failing the call as UNAVAILABLE.

const skip = REDIS_SKIP;


const cli = (...args: string[]): string => spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8' }).stdout.trim();

let port: number;
let redis: ChildProcess | undefined;
before(async () => {
  if (skip) return;
  port = await freeRedisPort();
  redis = await startRedis(port);
});
after(() => {
  redis?.kill();
});

const options = (o: Partial<RedisTextStoreOptions> = {}): RedisTextStoreOptions => ({
  host: '127.0.0.1', port, db: 2, prefix: 'test:resp:', maxEntries: 3, maxEntryChars: 100, ttlMs: 60_000, setting: '--openai-response-store redis://127.0.0.1', ...o,
});

test('values by id; past maxEntries the oldest go, from Redis and from the index; each expires after ttlMs', { skip }, async () => {
  const s = await RedisTextStore.connect(options());
  try {
    for (const k of ['a', 'b', 'c']) {
      await s.set(k, `v-${k}`);
      await sleep(5);
    }
    assert.equal(await s.get('a'), 'v-a');
    await s.set('d', 'v-d');
    assert.deepEqual(await Promise.all(['a', 'b', 'c', 'd'].map((k) => s.get(k))), [undefined, 'v-b', 'v-c', 'v-d']);
    assert.equal(cli('-n', '2', 'zcard', 'test:resp:index'), '3');
    const pttl = Number(cli('-n', '2', 'pttl', 'test:resp:d'));
    assert.ok(pttl > 0 && pttl <= 60_000, String(pttl));
    await s.set('big', 'x'.repeat(101));
    assert.equal(await s.get('big'), undefined);
    assert.equal(await s.delete('c'), true);
    assert.equal(await s.delete('c'), false);
    assert.equal(cli('-n', '2', 'zscore', 'test:resp:index', 'c'), '');
  } finally {
    await s.close();
  }
});

test('an expired entry is gone, and leaves the index once another is stored', { skip }, async () => {
  const s = await RedisTextStore.connect(options({ prefix: 'test:ttl:', ttlMs: 200 }));
  try {
    await s.set('old', '1');
    await sleep(400);
    assert.equal(await s.get('old'), undefined);
    await s.set('new', '2');
    assert.equal(cli('-n', '2', 'zrange', 'test:ttl:index', '0', '-1'), 'new');
  } finally {
    await s.close();
  }
});

test('no Redis: connect names the setting; a store whose Redis went away fails calls as UNAVAILABLE', { skip }, async () => {
  await assert.rejects(RedisTextStore.connect(options({ port: await freeRedisPort() })), (e: unknown) => isNereidError(e) && e.code === 'INVALID_ARG' && /^--openai-response-store redis:\/\/127\.0\.0\.1: cannot reach Redis/.test(e.message));
  const s = await RedisTextStore.connect(options());
  try {
    cli('client', 'kill', 'type', 'normal');
    redis!.kill();
    await new Promise((r) => redis!.once('exit', r));
    await assert.rejects(s.get('a'), (e: unknown) => isNereidError(e) && e.code === 'UNAVAILABLE' && /did not answer/.test(e.message));
  } finally {
    await s.close();
    redis = undefined;
  }
});
