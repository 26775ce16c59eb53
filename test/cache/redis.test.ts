import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { EXAMPLES, ROOT } from '../helpers/paths.js';
import { startServeCommand } from '../helpers/serve-process.js';
import { startTestServer, tempRepository, type TestServer } from '../helpers/server.js';
import { postJson, request } from '../helpers/http.js';
import { REDIS_SKIP, freeRedisPort, startRedis } from '../helpers/redis.js';

// The redis cache against a real redis-server from Debian, started here on a free loopback port: hits after
// misses, an outage that only costs hits, and hits again once Redis is back.

const skip = REDIS_SKIP;



let port: number;
let redis: ChildProcess | undefined;
let repo: { dir: string; remove(): Promise<void> };
let s: TestServer;
before(async () => {
  if (skip) return;
  port = await freeRedisPort();
  redis = await startRedis(port);
  repo = await tempRepository([{ from: join(EXAMPLES, 'digits') }]);
  await appendFile(join(repo.dir, 'digits', 'config.pbtxt'), '\nresponse_cache { enable: true }\n');
  s = await startTestServer({ modelRepositories: [repo.dir], responseCache: { redis: { host: '127.0.0.1', port: String(port), wait_timeout: '300' } } });
});
after(async () => {
  if (skip) return;
  await s.close();
  await repo.remove();
  redis?.kill();
});

const body = (v: number) => ({ inputs: [{ name: 'INPUT', shape: [1, 64], datatype: 'FP32', data: new Array(64).fill(v) }] });
const infer = (v: number) => postJson(`${s.url}/v2/models/digits/versions/2/infer`, body(v));
const stats = async () => (await request(`${s.url}/v2/models/digits/versions/2/stats`)).json().model_stats[0].inference_stats;

test('redis cache: a repeated request is answered from Redis', { skip }, async () => {
  const first = await infer(3);
  assert.equal(first.status, 200);
  // The insert is not awaited by the request: wait until Redis holds it.
  for (let i = 0; i < 50 && (await stats()).cache_hit.count === 0; i++) {
    const r = await infer(3);
    assert.deepEqual(r.json().outputs, first.json().outputs);
    await sleep(20);
  }
  assert.ok((await stats()).cache_hit.count >= 1);
});

test('redis cache: an outage costs hits, never requests; hits come back with Redis', { skip }, async () => {
  redis!.kill('SIGKILL');
  await new Promise((r) => redis!.once('exit', r));
  const hitsBefore = (await stats()).cache_hit.count;
  for (let i = 0; i < 5; i++) assert.equal((await infer(3)).status, 200);
  assert.equal((await stats()).cache_hit.count, hitsBefore, 'no hits while Redis is away');
  redis = await startRedis(port);
  // The client reconnects on its own; the restarted Redis is empty, so the first request fills it again.
  let hits = hitsBefore;
  for (let i = 0; i < 100 && hits === hitsBefore; i++) {
    assert.equal((await infer(4)).status, 200);
    hits = (await stats()).cache_hit.count;
    await sleep(50);
  }
  assert.ok(hits > hitsBefore, 'hits again after Redis came back');
});

/** `nereid serve` with the redis cache: its exit code and output, or the process once it serves. */
async function serveWithCache(settings: string[]): Promise<{ code: number | null; output: string }> {
  const args = [join(ROOT, 'bin', 'nereid.js'), 'serve', `--model-repository=${EXAMPLES}`, '--model-control-mode=explicit',
    '--http-port=0', '--http-address=127.0.0.1', '--allow-grpc=false', '--allow-metrics=false', ...settings.map((c) => `--cache-config=redis,${c}`)];
  try {
    const p = await startServeCommand(process.execPath, args);
    const output = p.output();
    return { code: await p.stop(), output: `${output}[served]` };
  } catch (e) {
    return { code: 1, output: (e as Error).message };
  }
}

test('redis cache: an unreachable Redis at start-up stops the server with Triton\'s message', { skip }, async () => {
  const r = await serveWithCache(['host=127.0.0.1', `port=${await freeRedisPort()}`]);
  assert.doesNotMatch(r.output, /\[served\]/);
  assert.match(r.output, /exited with 1/);
  assert.match(r.output, /Failed to initialize RedisCache: connect ECONNREFUSED/);
});

test('redis cache: a failed login at start-up stops the server; the right password serves', { skip }, async () => {
  const authPort = await freeRedisPort();
  const secured = await startRedis(authPort, ['--requirepass', 'sesame']);
  try {
    const wrong = await serveWithCache(['host=127.0.0.1', `port=${authPort}`, 'password=wrong']);
    assert.doesNotMatch(wrong.output, /\[served\]/);
    assert.match(wrong.output, /Failed to initialize RedisCache: WRONGPASS/);
    const none = await serveWithCache(['host=127.0.0.1', `port=${authPort}`]);
    assert.match(none.output, /Failed to initialize RedisCache: (NOAUTH|WRONGPASS)/);
    const right = await serveWithCache(['host=127.0.0.1', `port=${authPort}`, 'password=sesame']);
    assert.match(right.output, /\[served\]/);
  } finally {
    secured.kill();
  }
});
