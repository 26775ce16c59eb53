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

/**
 * Sends two requests at once and returns how far apart their answers came, relative to one request's time:
 * about 0 when two instances run them side by side, about 1 when one instance runs them in turn. Comparing
 * finish times keeps the measure fair on a busy machine, where both runs slow down alike.
 */
async function finishGap(url: string): Promise<number> {
  const body = { inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'FP32', data: new Array(16).fill(0.5) }] };
  const send = () => postJson(`${url}/v2/models/slow_fp32/infer`, body).then((r) => {
    assert.equal(r.status, 200);
    return performance.now();
  });
  await send(); // warm
  const gaps: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    const single = (await send()) - t0;
    const [a, b] = await Promise.all([send(), send()]);
    gaps.push(Math.abs(a - b) / single);
  }
  return gaps.sort((x, y) => x - y)[1]!;
}

test('two instances run two requests at once; one instance runs them one after the other', async () => {
  const gaps: Record<number, number> = {};
  for (const count of [2, 1]) {
    const repo = await slowWith(count);
    const s = await startTestServer({ modelRepositories: [repo.dir] });
    try {
      gaps[count] = await finishGap(s.url);
    } finally {
      await s.close();
      await repo.remove();
    }
  }
  assert.ok(gaps[2]! < 0.4, `count 2: answers ${gaps[2]!.toFixed(2)} single-request times apart`);
  assert.ok(gaps[1]! > 0.6, `count 1: answers ${gaps[1]!.toFixed(2)} single-request times apart`);
});
