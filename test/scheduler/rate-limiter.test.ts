import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FIXTURES } from '../helpers/paths.js';
import { startTestServer, tempRepository } from '../helpers/server.js';
import { postJson } from '../helpers/http.js';
import { parseServeFlags } from '../../src/cli/flags.js';
import type { ServerOptions } from '../../src/server/options.js';
import { RateLimiter } from '../../src/scheduler/rate-limiter.js';
import type { BackendInstance } from '../../src/backends/backend.js';

// The rate limiter: two models whose one instance each needs the one unit of resource R. Each execution
// reports when it started and ended (test/fixtures/js/interval), so overlap is seen directly, not timed. With
// --rate-limit=execution_count they take turns; off (the default), or with two units of R, they overlap.

async function twoModels(): Promise<{ dir: string; remove(): Promise<void> }> {
  const repo = await tempRepository([{ from: join(FIXTURES, 'js', 'interval'), name: 'int_a' }, { from: join(FIXTURES, 'js', 'interval'), name: 'int_b' }]);
  for (const m of ['int_a', 'int_b']) {
    const p = join(repo.dir, m, 'config.pbtxt');
    const text = (await readFile(p, 'utf8')).replace('"interval"', `"${m}"`)
      .replace(/instance_group \[[^\]]*\]/, 'instance_group [ { count: 1 kind: KIND_CPU rate_limiter { resources [ { name: "R" count: 1 } ] } } ]');
    await writeFile(p, text);
  }
  return repo;
}

/** How many of five pairs of executions (one per model, sent together) overlapped in time. */
async function overlaps(options: Partial<ServerOptions>): Promise<number> {
  const repo = await twoModels();
  const s = await startTestServer({ modelRepositories: [repo.dir], ...options });
  try {
    const body = { inputs: [{ name: 'INPUT0', shape: [1, 1], datatype: 'FP32', data: [1] }] };
    const span = (m: string) => postJson(`${s.url}/v2/models/${m}/infer`, body).then((r) => {
      assert.equal(r.status, 200, r.body.toString());
      return r.json().outputs[0].data as [number, number];
    });
    let n = 0;
    for (let i = 0; i < 5; i++) {
      const [a, b] = await Promise.all([span('int_a'), span('int_b')]);
      if (a[0] < b[1] && b[0] < a[1]) n++;
    }
    return n;
  } finally {
    await s.close();
    await repo.remove();
  }
}

test('--rate-limit=execution_count makes instances that need the same resource take turns', async () => {
  assert.equal(await overlaps({ rateLimit: 'execution_count' }), 0, 'limited: no two executions overlap');
  assert.ok((await overlaps({})) >= 3, 'off: executions overlap');
  assert.ok((await overlaps({ rateLimit: 'execution_count', rateLimitResources: [{ name: 'R', count: 2, device: undefined }] })) >= 3, 'two units: executions overlap');
});

/**
 * The most executions of one three-instance model that ran at the same time, for three requests sent together,
 * each instance needing `need` units of R and --rate-limit-resource=R:`units`. Executions last 400 ms, so two
 * started together overlap however busy the machine is.
 */
async function mostAtOnce(need: number, units: number): Promise<number> {
  const repo = await tempRepository([{ from: join(FIXTURES, 'js', 'interval'), name: 'int_c' }]);
  const p = join(repo.dir, 'int_c', 'config.pbtxt');
  await writeFile(p, `${(await readFile(p, 'utf8')).replace('"interval"', '"int_c"')
    .replace(/instance_group \[[^\]]*\]/, `instance_group [ { count: 3 kind: KIND_CPU rate_limiter { resources [ { name: "R" count: ${need} } ] } } ]`)}
parameters { key: "DELAY_MS" value { string_value: "400" } }\n`);
  const s = await startTestServer({ modelRepositories: [repo.dir], rateLimit: 'execution_count', rateLimitResources: [{ name: 'R', count: units, device: undefined }] });
  try {
    const data = new Uint8Array(new Float32Array([1]).buffer);
    const spans = await Promise.all([0, 1, 2].map(async () => {
      const r = await s.server.infer({ model: 'int_c', inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 1], data }] });
      const d = r.outputs[0]!.data as Uint8Array;
      const v = new Float64Array(d.slice().buffer, 0, 2);
      return [v[0]!, v[1]!] as const;
    }));
    // At each start, how many executions were running.
    return Math.max(...spans.map(([start]) => spans.filter(([a, b]) => a <= start && start < b).length));
  } finally {
    await s.close();
    await repo.remove();
  }
}

test('resource counts above 1: units available and units an instance needs are both counted, not just whether any is free', async () => {
  assert.equal(await mostAtOnce(1, 2), 2, 'R:2, one unit each: two run at once, the third waits');
  assert.equal(await mostAtOnce(2, 3), 1, 'R:3, two units each: one at a time');
  assert.equal(await mostAtOnce(2, 4), 2, 'R:4, two units each: two at once, the third waits');
});

test('the flags reach the server options', () => {
  const o = parseServeFlags(['--model-repository=/m', '--rate-limit=EXECUTION_COUNT', '--rate-limit-resource=R:2', '--rate-limit-resource=S:1:0']);
  assert.equal(o.server.rateLimit, 'execution_count');
  assert.deepEqual(o.server.rateLimitResources, [{ name: 'R', count: 2, device: undefined }, { name: 'S', count: 1, device: 0 }]);
});

test('priority: among waiting instances, the one with the fewest executions × priority goes first', async () => {
  const limiter = new RateLimiter(true);
  const order: string[] = [];
  const instance = (name: string): BackendInstance => ({
    execute: async () => {
      order.push(name);
      await new Promise((r) => setImmediate(r));
      return { inputNs: 0, inferNs: 0, outputNs: 0 };
    },
    close: async () => undefined,
  });
  const needs = (priority: number) => ({ resources: [{ name: 'R', global: false, count: 1 }], priority });
  const high = limiter.wrap(instance('p1'), needs(1));
  const low = limiter.wrap(instance('p2'), needs(2));
  // Both keep asking; one unit of R means one execution at a time.
  const runs: Promise<unknown>[] = [];
  for (let i = 0; i < 30; i++) runs.push(high.execute([]), low.execute([]));
  await Promise.all(runs);
  // Priority 2 has half the chances of priority 1: of the first 30 grants, about 20 go to p1.
  const first = order.slice(0, 30);
  const p1 = first.filter((n) => n === 'p1').length;
  assert.ok(p1 >= 18 && p1 <= 22, `p1 got ${p1} of the first 30 executions: ${first.join(' ')}`);
  assert.equal(order.length, 60);
});
