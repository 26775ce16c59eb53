import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FIXTURES } from '../helpers/paths.js';
import { startTestServer, tempRepository } from '../helpers/server.js';
import { postJson } from '../helpers/http.js';

// --model-load-retry-count as Triton's model lifecycle has it: a version whose creation fails is created again,
// up to that many more times, before the load fails. And a load's error never shows the server's folders.

const attempts = async (dir: string) => Number(await readFile(join(dir, 'flaky', 'attempts'), 'utf8'));

async function loadFlaky(retries: number | undefined, failTimes: number) {
  const repo = await tempRepository([{ from: join(FIXTURES, 'js', 'flaky') }]);
  const s = await startTestServer({ modelRepositories: [repo.dir], modelControlMode: 'explicit', ...(retries === undefined ? {} : { modelLoadRetryCount: retries }) });
  try {
    const config = JSON.stringify({ parameters: { fail_times: { string_value: String(failTimes) } } });
    const r = await postJson(`${s.url}/v2/repository/models/flaky/load`, failTimes === 1 ? {} : { parameters: { config: mergedConfig(config) } });
    const index = (await postJson(`${s.url}/v2/repository/index`, {})).json();
    return { status: r.status, body: (r.body.length > 0 ? r.json() : {}) as { error?: string }, index, attempts: await attempts(repo.dir), repo: repo.dir };
  } finally {
    await s.close();
    await repo.remove();
  }
}

/** The fixture's config with fail_times replaced (a config override replaces the whole config). */
function mergedConfig(parameters: string): string {
  return JSON.stringify({
    backend: 'javascript', max_batch_size: 0,
    input: [{ name: 'IN', data_type: 'TYPE_INT32', dims: [1] }], output: [{ name: 'OUT', data_type: 'TYPE_INT32', dims: [1] }],
    instance_group: [{ kind: 'KIND_CPU', count: 1 }], ...JSON.parse(parameters),
  });
}

test('without --model-load-retry-count a failed creation fails the load, once', async () => {
  const r = await loadFlaky(undefined, 1);
  assert.equal(r.status, 400);
  assert.equal(r.attempts, 1);
});

test('--model-load-retry-count 1: the version is created again and the load succeeds', async () => {
  const r = await loadFlaky(1, 1);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.attempts, 2);
  assert.equal(r.index[0].state, 'READY');
});

test('--model-load-retry-count 2 with three failures to come: three attempts, then the load fails', async () => {
  const r = await loadFlaky(2, 3);
  assert.equal(r.status, 400);
  assert.equal(r.attempts, 3);
  assert.equal(r.index[0].state, 'UNAVAILABLE');
});

test("a load error and the index reason name the model's files from its folder, never the server's paths", async () => {
  const r = await loadFlaky(undefined, 1);
  const reason = r.index[0].reason as string;
  for (const text of [r.body.error!, reason]) {
    assert.ok(!text.includes(r.repo), text);
    assert.match(text, /cannot read flaky\/1\/weights\.bin/);
  }
});
