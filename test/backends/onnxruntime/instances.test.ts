import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FIXTURES } from '../../helpers/paths.js';
import { startTestServer, tempRepository } from '../../helpers/server.js';
import { postJson } from '../../helpers/http.js';

// instance_group count N gives N sessions that run at the same time (in worker threads for a slow model).

async function slowWith(count: number): Promise<{ dir: string; remove(): Promise<void> }> {
  const repo = await tempRepository([{ from: join(FIXTURES, 'slow', 'slow_fp32') }]);
  const p = join(repo.dir, 'slow_fp32', 'config.pbtxt');
  const text = (await readFile(p, 'utf8')).replace(/instance_group \[[^\]]*\]/, `instance_group [ { count: ${count} kind: KIND_CPU } ]`);
  await writeFile(p, `${text}\nparameters { key: "nereid_execution_placement" value { string_value: "worker" } }\nparameters { key: "intra_op_thread_count" value { string_value: "1" } }\n`);
  return repo;
}

async function timePair(url: string): Promise<{ one: number; two: number }> {
  const body = { inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'FP32', data: new Array(16).fill(0.5) }] };
  const send = () => postJson(`${url}/v2/models/slow_fp32/infer`, body).then((r) => assert.equal(r.status, 200));
  await send(); // warm
  let one = Infinity;
  let two = Infinity;
  for (let i = 0; i < 3; i++) {
    let t = performance.now();
    await send();
    one = Math.min(one, performance.now() - t);
    t = performance.now();
    await Promise.all([send(), send()]);
    two = Math.min(two, performance.now() - t);
  }
  return { one, two };
}

test('two instances run two requests at once; one instance runs them one after the other', async () => {
  const results: Record<number, { one: number; two: number }> = {};
  for (const count of [2, 1]) {
    const repo = await slowWith(count);
    const s = await startTestServer({ modelRepositories: [repo.dir] });
    try {
      results[count] = await timePair(s.url);
      const stats = (await postJson(`${s.url}/v2/repository/index`, {})).json();
      assert.equal(stats[0].state, 'READY');
    } finally {
      await s.close();
      await repo.remove();
    }
  }
  const { one: one2, two: two2 } = results[2]!;
  const { one: one1, two: two1 } = results[1]!;
  // Two cores: with two instances a pair takes about one model time; with one, about two.
  assert.ok(two2 < one2 * 1.75, `count 2: pair ${two2.toFixed(0)} ms vs single ${one2.toFixed(0)} ms`);
  assert.ok(two1 > one1 * 1.6, `count 1: pair ${two1.toFixed(0)} ms vs single ${one1.toFixed(0)} ms`);
});
