import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FIXTURES } from '../../helpers/paths.js';
import { startTestServer, tempRepository } from '../../helpers/server.js';
import { postJson, request } from '../../helpers/http.js';

// instance_group count N gives N sessions that run at the same time (in worker threads for a slow model).

async function slowWith(count: number): Promise<{ dir: string; remove(): Promise<void> }> {
  const repo = await tempRepository([{ from: join(FIXTURES, 'slow', 'slow_fp32') }]);
  const p = join(repo.dir, 'slow_fp32', 'config.pbtxt');
  const text = (await readFile(p, 'utf8')).replace(/instance_group \[[^\]]*\]/, `instance_group [ { count: ${count} kind: KIND_CPU } ]`);
  await writeFile(p, `${text}\nparameters { key: "nereid_execution_placement" value { string_value: "worker" } }\nparameters { key: "intra_op_thread_count" value { string_value: "1" } }\n`);
  return repo;
}

/**
 * Sends two requests at once and returns how many executions each instance ran. The scheduler hands out the
 * most recently freed instance first, so a second instance only runs a request that arrived while the first
 * was busy: executions on two instances mean the two requests ran side by side. Counts, not timings, so a
 * busy machine cannot change the answer.
 */
async function executionsPerInstance(url: string): Promise<number[]> {
  const body = { inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'FP32', data: new Array(16).fill(0.5) }] };
  const send = () => postJson(`${url}/v2/models/slow_fp32/infer`, body).then((r) => assert.equal(r.status, 200));
  await send(); // one at a time: always the same instance
  await Promise.all([send(), send()]);
  const stats = (await request(`${url}/v2/models/slow_fp32/nereid_instance_stats`)).json().model_stats[0].instance_stats;
  return stats.map((i: { execution_count: number }) => i.execution_count);
}

test('two instances run two requests at once; one instance runs them one after the other', async () => {
  const runs: Record<number, number[]> = {};
  for (const count of [2, 1]) {
    const repo = await slowWith(count);
    const s = await startTestServer({ modelRepositories: [repo.dir] });
    try {
      runs[count] = await executionsPerInstance(s.url);
    } finally {
      await s.close();
      await repo.remove();
    }
  }
  assert.deepEqual(runs[2], [2, 1]);
  assert.deepEqual(runs[1], [3]);
});
