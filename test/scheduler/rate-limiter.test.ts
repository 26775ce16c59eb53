import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FIXTURES } from '../helpers/paths.js';
import { startTestServer, tempRepository } from '../helpers/server.js';
import { postJson } from '../helpers/http.js';
import { parseServeFlags } from '../../src/cli/flags.js';
import type { ServerOptions } from '../../src/server/options.js';

// The rate limiter: two slow models whose instances each need the one unit of resource R. With
// --rate-limit=execution_count they take turns; off (the default), or with two units, they run together.

async function twoModels(): Promise<{ dir: string; remove(): Promise<void> }> {
  const repo = await tempRepository([{ from: join(FIXTURES, 'slow', 'slow_fp32'), name: 'slow_a' }, { from: join(FIXTURES, 'slow', 'slow_fp32'), name: 'slow_b' }]);
  for (const m of ['slow_a', 'slow_b']) {
    const p = join(repo.dir, m, 'config.pbtxt');
    const text = (await readFile(p, 'utf8')).replace('"slow_fp32"', `"${m}"`)
      .replace(/instance_group \[[^\]]*\]/, 'instance_group [ { count: 1 kind: KIND_CPU rate_limiter { resources [ { name: "R" count: 1 } ] } } ]');
    await writeFile(p, `${text}\nparameters { key: "nereid_execution_placement" value { string_value: "worker" } }\nparameters { key: "intra_op_thread_count" value { string_value: "1" } }\n`);
  }
  return repo;
}

/** How far apart (in single-request times) answers to one request per model come when sent together. */
async function gap(options: Partial<ServerOptions>): Promise<number> {
  const repo = await twoModels();
  const s = await startTestServer({ modelRepositories: [repo.dir], ...options });
  try {
    const body = { inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'FP32', data: new Array(16).fill(1) }] };
    const send = (m: string) => postJson(`${s.url}/v2/models/${m}/infer`, body).then((r) => {
      assert.equal(r.status, 200, r.body.toString());
      return performance.now();
    });
    await Promise.all([send('slow_a'), send('slow_b')]);
    const gaps: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      const single = (await send('slow_a')) - t0;
      const [a, b] = await Promise.all([send('slow_a'), send('slow_b')]);
      gaps.push(Math.abs(a - b) / single);
    }
    return gaps.sort((x, y) => x - y)[1]!;
  } finally {
    await s.close();
    await repo.remove();
  }
}

test('--rate-limit=execution_count makes instances that need the same resource take turns', async () => {
  const limited = await gap({ rateLimit: 'execution_count' });
  const off = await gap({});
  const twoUnits = await gap({ rateLimit: 'execution_count', rateLimitResources: [{ name: 'R', count: 2, device: undefined }] });
  assert.ok(limited > 0.6, `limited: answers ${limited.toFixed(2)} single-request times apart`);
  assert.ok(off < 0.4, `off: answers ${off.toFixed(2)} apart`);
  assert.ok(twoUnits < 0.4, `two units: answers ${twoUnits.toFixed(2)} apart`);
});

test('the flags reach the server options', () => {
  const o = parseServeFlags(['--model-repository=/m', '--rate-limit=EXECUTION_COUNT', '--rate-limit-resource=R:2', '--rate-limit-resource=S:1:0']);
  assert.equal(o.server.rateLimit, 'execution_count');
  assert.deepEqual(o.server.rateLimitResources, [{ name: 'R', count: 2, device: undefined }, { name: 'S', count: 1, device: 0 }]);
});
