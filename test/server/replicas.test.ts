import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EXAMPLES, FIXTURES } from '../helpers/paths.js';
import { postJson, request } from '../helpers/http.js';
import { tempRepository } from '../helpers/server.js';
import { until } from '../helpers/until.js';
import {
  Replica, freePort, missingPrograms, pause, startHaproxy, startPrometheus, startRedis, tempDir,
  type Haproxy, type Prometheus, type Service,
} from '../helpers/replicas.js';

// Three `nereid serve` processes behind a real HAProxy (health checks on /v2/health/ready), sharing one real
// Redis for sequences (--sequence-state-store) and for the response cache, scraped by a real Prometheus.
// Loads are short; assertions are on counts, values and order, never on milliseconds.

const missing = missingPrograms(['redis-server', 'redis-cli', 'haproxy', 'prometheus']);
if (missing && process.env['CI'] === 'true') throw new Error(`CI needs ${missing} (see .ci/run)`);
if (missing) process.stderr.write(`skipping the multi-replica tests: ${missing}\n`);
const skip = missing || false;

let redis: Service & { cli(...args: string[]): string };
let lb: Haproxy;
let prom: Prometheus;
let replicas: Replica[];
let work: { dir: string; remove(): Promise<void> };
let repo: { dir: string; remove(): Promise<void> };

before(async () => {
  if (skip) return;
  work = await tempDir('nereid-replicas-');
  redis = await startRedis();
  // `digits` with the response cache on; the sequence and load models come from the bundled repositories.
  repo = await tempRepository([{ from: join(EXAMPLES, 'digits') }, { from: join(EXAMPLES, 'sequence_accumulator') }]);
  await appendFile(join(repo.dir, 'digits', 'config.pbtxt'), '\nresponse_cache { enable: true }\n');
  const args = [
    `--model-repository=${repo.dir}`, `--model-repository=${join(FIXTURES, 'js')}`, '--model-control-mode=explicit',
    '--load-model=digits', '--load-model=sequence_accumulator', '--load-model=async_model',
    `--sequence-state-store=redis://127.0.0.1:${redis.port}/1`, `--cache-config=redis,host=127.0.0.1`, `--cache-config=redis,port=${redis.port}`,
    '--exit-drain-secs=2', '--exit-timeout-secs=10', '--log-info=false',
  ];
  replicas = [];
  for (const name of ['r0', 'r1', 'r2']) replicas.push(new Replica(name, await freePort(), await freePort(), args));
  await Promise.all(replicas.map((r) => r.start()));
  lb = await startHaproxy(work.dir, replicas);
  prom = await startPrometheus(work.dir, replicas.map((r) => r.metricsPort));
});

after(async () => {
  if (skip) return;
  for (const r of replicas ?? []) r.signal('SIGKILL');
  await Promise.all((replicas ?? []).map((r) => r.exited));
  await prom?.stop();
  await lb?.stop();
  await redis?.stop();
  await repo?.remove();
  await work?.remove();
});

const lbUrl = (): string => `http://127.0.0.1:${lb.port}`;

interface Step { value: number; start?: boolean; end?: boolean; id?: string }

/** One step of an accumulator sequence: its status, running sum (when 200) and the replica that answered. */
async function step(base: string, seq: number, s: Step): Promise<{ status: number; sum: number | undefined; replica: string; body: any }> {
  const r = await postJson(`${base}/v2/models/sequence_accumulator/infer`, {
    ...(s.id ? { id: s.id } : {}),
    parameters: { sequence_id: seq, sequence_start: s.start ?? false, sequence_end: s.end ?? false },
    inputs: [{ name: 'INPUT', shape: [1, 1], datatype: 'INT32', data: [s.value] }],
  });
  const body = r.json();
  return { status: r.status, sum: r.status === 200 ? body.outputs[0].data[0] : undefined, replica: r.headers.get('x-replica') ?? '', body };
}

const runningSums = (values: readonly number[]): number[] => values.map((_, i) => values.slice(0, i + 1).reduce((a, b) => a + b, 0));

test('a sequence whose steps alternate between replicas gives the outputs it gives on one replica', { skip }, async () => {
  const values = [3, 1, 4, 1, 5, 9, 2, 6];
  const one: number[] = [];
  for (const [i, value] of values.entries()) {
    one.push((await step(replicas[0]!.url, 101, { value, start: i === 0, end: i === values.length - 1 })).sum!);
  }
  const spread: number[] = [];
  const seen: string[] = [];
  for (const [i, value] of values.entries()) {
    const r = await step(lbUrl(), 102, { value, start: i === 0, end: i === values.length - 1 });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    spread.push(r.sum!);
    seen.push(r.replica);
  }
  assert.deepEqual(one, runningSums(values));
  assert.deepEqual(spread, one);
  // Round robin: no two steps in a row on the same replica.
  assert.equal(new Set(seen).size, 3, `replicas seen: ${seen.join(' ')}`);
  for (let i = 1; i < seen.length; i++) assert.notEqual(seen[i], seen[i - 1]);
});

test('SIGKILL of a replica while it runs a step: the retry and the next steps continue on the others with correct outputs', { skip }, async () => {
  const values = [2, 7, 1, 8, 2, 8, 1, 8];
  const sums: number[] = [];
  let last = '';
  for (const [i, value] of values.slice(0, 4).entries()) {
    const r = await step(lbUrl(), 201, { value, start: i === 0, id: `201-${i}` });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    sums.push(r.sum!);
    last = r.replica;
  }
  // Step 4 goes to the replica that ran step 3, which is killed as soon as the request is sent: its reply is
  // lost (or, if the step was quicker than the kill, arrives). Whether or not it was applied, the client's retry
  // with the same request id answers the right sum and applies it at most once.
  const victim = replicas.find((r) => r.name === last)!;
  const inFlight = step(victim.url, 201, { value: values[4]!, id: '201-4' }).catch(() => undefined);
  victim.signal('SIGKILL');
  await victim.exited;
  await inFlight;
  for (const [k, value] of values.slice(4).entries()) {
    const i = 4 + k;
    const r = await step(lbUrl(), 201, { value, end: i === values.length - 1, id: `201-${i}` });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.notEqual(r.replica, victim.name);
    sums.push(r.sum!);
  }
  assert.deepEqual(sums, runningSums(values), '4 steps before the kill, 4 continued after it on the other replicas');
  await victim.start();
  await until(async () => (await lb.states())[victim.name] === 'UP', `${victim.name} back in HAProxy`);
});

test('a retried step is not applied twice, on whichever replica the retry lands', { skip }, async () => {
  const [a, b, c] = replicas.map((r) => r.url) as [string, string, string];
  assert.equal((await step(a, 301, { value: 10, start: true, id: 'x1' })).sum, 10);
  // The reply of x2 is "lost": the client sends it again to another replica, then to a third.
  assert.equal((await step(b, 301, { value: 5, id: 'x2' })).sum, 15);
  const retry = await step(c, 301, { value: 5, id: 'x2' });
  assert.equal(retry.status, 200);
  assert.equal(retry.sum, 15, 'the retry answers the first reply');
  assert.equal((await step(a, 301, { value: 5, id: 'x2' })).sum, 15);
  assert.equal((await step(b, 301, { value: 1, id: 'x3' })).sum, 16, 'x2 was applied once');
  // The same step sent to all three replicas at once: one applies it, the others answer its reply.
  const same = await Promise.all([a, b, c].map((u) => step(u, 301, { value: 100, id: 'x4' })));
  assert.deepEqual(same.map((r) => [r.status, r.sum]), [[200, 116], [200, 116], [200, 116]], JSON.stringify(same.map((r) => r.body)));
  // Different steps at once on three replicas: never both applied on one state; the sum counts exactly the
  // steps that were answered 200 (a step that lost the race is answered 503 and not applied).
  const racing = await Promise.all([a, b, c].map((u, i) => step(u, 301, { value: 1000 * (i + 1), id: `y${i}` })));
  for (const r of racing) assert.ok(r.status === 200 || r.status === 503, JSON.stringify(r.body));
  const applied = racing.filter((r) => r.status === 200);
  assert.ok(applied.length >= 1);
  const end = await step(a, 301, { value: 0, end: true, id: 'x5' });
  const expected = 116 + racing.reduce((sum, r, i) => sum + (r.status === 200 ? 1000 * (i + 1) : 0), 0);
  assert.equal(end.sum, expected);
  // After END, a step without START is refused as Triton refuses it.
  const late = await step(b, 301, { value: 1, id: 'x6' });
  assert.equal(late.status, 400);
  assert.match(late.body.error, /must specify the START flag/);
});

test('the response cache in Redis is shared: a hit on one replica for a response computed on another', { skip }, async () => {
  const body = { inputs: [{ name: 'INPUT', shape: [1, 64], datatype: 'FP32', data: new Array(64).fill(7) }] };
  const stats = async (r: Replica) => (await request(`${r.url}/v2/models/digits/versions/2/stats`)).json().model_stats[0].inference_stats;
  const [a, b] = replicas as [Replica, Replica];
  const hitsBefore = await stats(b);
  const first = await postJson(`${a.url}/v2/models/digits/versions/2/infer`, body);
  assert.equal(first.status, 200);
  // The insert is not awaited by the request: wait until Redis holds it.
  await until(() => Number(redis.cli('dbsize').trim()) >= 1, 'the response in Redis');
  const second = await postJson(`${b.url}/v2/models/digits/versions/2/infer`, body);
  assert.deepEqual(second.json().outputs, first.json().outputs);
  const afterStats = await stats(b);
  assert.equal(afterStats.cache_hit.count - hitsBefore.cache_hit.count, 1, 'a hit on the replica that never computed it');
  assert.equal(afterStats.cache_miss.count - hitsBefore.cache_miss.count, 0);
});

/** `clients` loops sending requests through HAProxy until stop() resolves; counts answers by status. */
function steadyLoad(clients: number, ms: number): { stop(): Promise<Map<number | string, number>> } {
  const counts = new Map<number | string, number>();
  let running = true;
  const loops = Array.from({ length: clients }, async () => {
    while (running) {
      const r = await postJson(`${lbUrl()}/v2/models/async_model/infer`, { inputs: [{ name: 'IN', shape: [1], datatype: 'INT32', data: [ms] }] })
        .then((x) => (x.status === 200 ? 200 : `${x.status} ${x.headers.get('x-replica') ?? 'haproxy'}: ${x.body.toString().slice(0, 200)}`), (e: Error) => `error: ${e.message}`);
      counts.set(r, (counts.get(r) ?? 0) + 1);
    }
  });
  return { stop: async () => { running = false; await Promise.all(loops); return counts; } };
}

test('rolling restart under a steady load: SIGTERM each replica in turn, zero failed requests', { skip }, async () => {
  const load = steadyLoad(4, 20);
  await pause(300);
  for (const r of replicas) {
    r.signal('SIGTERM');
    // Unready at once, while still serving: HAProxy takes it out during the drain.
    await until(async () => (await lb.states())[r.name]?.startsWith('DOWN') ?? false, `HAProxy to take ${r.name} out`);
    assert.equal(await r.exited, 0, r.output);
    await r.start();
    await until(async () => (await lb.states())[r.name] === 'UP', `HAProxy to put ${r.name} back`);
  }
  await pause(300);
  const counts = await load.stop();
  const ok = counts.get(200) ?? 0;
  counts.delete(200);
  assert.deepEqual([...counts], [], `failed requests during the rollout (${ok} succeeded)`);
  assert.ok(ok > 0);
  process.stderr.write(`rolling restart: ${ok} requests, 0 failed\n`);
});

test('autoscaling signal: pending requests rise at the first scrape under a load step and fall after it', { skip }, async () => {
  // 18 clients on 3 replicas of 2 instances: about 4 requests wait on each replica while the load runs.
  const load = steadyLoad(18, 100);
  // Once a first answer came back, every replica has a queue, until the load stops.
  const startedS = await (async () => {
    await until(async () => (await request(`${replicas[0]!.url}/v2/models/async_model/stats`)).json().model_stats[0].inference_stats.success.count > 0, 'a first answer');
    return Date.now() / 1000;
  })();
  const samples = async () => prom.samples('nv_inference_pending_request_count{model="async_model"}[2m]');
  const firstAfter = async (t: number) => {
    let found: { instance: string; value: number }[] = [];
    await until(async () => {
      const series = await samples();
      found = series.map((s) => ({ instance: s.metric['instance']!, at: s.values.find(([ts]) => ts > t) }))
        .filter((s) => s.at !== undefined).map((s) => ({ instance: s.instance, value: Number(s.at![1]) }));
      return found.length === replicas.length;
    }, 'a scrape of every replica');
    return found;
  };
  const rising = await firstAfter(startedS);
  const endedS = await (async () => {
    await load.stop();
    return Date.now() / 1000;
  })();
  const falling = await firstAfter(endedS);
  // The rule an HPA reads sums the replicas' gauges.
  assert.ok(rising.reduce((n, s) => n + s.value, 0) > 0, `first scrape after the load began: ${JSON.stringify(rising)}`);
  assert.ok(falling.every((s) => s.value === 0), `first scrape after the load ended: ${JSON.stringify(falling)}`);
});
