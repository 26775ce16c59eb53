import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cp, rm, appendFile, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { FIXTURES } from '../helpers/paths.js';
import { startTestServer, tempRepository } from '../helpers/server.js';
import { postJson } from '../helpers/http.js';

// Poll mode: versions appear, go and change while clients keep sending, and not one request fails.

test('poll mode adds, replaces and removes versions under load without a failed request', async () => {
  const repo = await tempRepository([{ from: join(FIXTURES, 'versions', 'vmodel') }]);
  await rm(join(repo.dir, 'vmodel', '3'), { recursive: true });
  const s = await startTestServer({ modelRepositories: [repo.dir], modelControlMode: 'poll', repositoryPollSecs: 0 });
  // Versions answered by requests sent after `since`; requests already in flight may finish on the old version.
  const answers: { sent: number; version: string }[] = [];
  const seenSince = (since: number) => [...new Set(answers.filter((a) => a.sent >= since).map((a) => a.version))];
  // Waits until at least `n` requests sent after `since` have been answered (or failed).
  const answered = async (since: number, n = 20) => {
    const deadline = Date.now() + 10_000;
    while (answers.filter((a) => a.sent >= since).length < n && failures.length === 0 && Date.now() < deadline) await sleep(10);
    return seenSince(since);
  };
  const failures: string[] = [];
  let running = true;
  const client = async () => {
    while (running) {
      const sent = performance.now();
      const r = await postJson(`${s.url}/v2/models/vmodel/infer`, { inputs: [{ name: 'INPUT0', shape: [1, 1], datatype: 'INT32', data: [100] }] });
      if (r.status !== 200) failures.push(`${r.status} ${r.body.toString()}`);
      else answers.push({ sent, version: r.json().model_version });
    }
  };
  const clients = [client(), client(), client(), client()];
  try {
    assert.deepEqual(await answered(0), ['2']);
    // A new version appears: it loads beside version 2 and takes over.
    await cp(join(FIXTURES, 'versions', 'vmodel', '3'), join(repo.dir, 'vmodel', '3'), { recursive: true });
    await s.server.pollRepository();
    assert.deepEqual(await answered(performance.now()), ['3']);
    // The config changes: the whole model reloads, still without a failed request.
    await appendFile(join(repo.dir, 'vmodel', 'config.pbtxt'), '\nparameters { key: "note" value { string_value: "changed" } }\n');
    await s.server.pollRepository();
    const cfg = s.server.modelConfigJson('vmodel') as any;
    assert.equal(cfg.parameters.note.string_value, 'changed');
    // The newest version goes away: version 2 serves again.
    await rm(join(repo.dir, 'vmodel', '3'), { recursive: true });
    await utimes(join(repo.dir, 'vmodel'), new Date(), new Date());
    await s.server.pollRepository();
    assert.deepEqual(await answered(performance.now()), ['2']);
  } finally {
    running = false;
    await Promise.all(clients);
    await s.close();
    await repo.remove();
  }
  assert.deepEqual(failures, []);
});

test('the poll timer notices a new model by itself', async () => {
  const repo = await tempRepository([]);
  const s = await startTestServer({ modelRepositories: [repo.dir], modelControlMode: 'poll', repositoryPollSecs: 1 });
  try {
    await cp(join(FIXTURES, 'versions', 'vmodel'), join(repo.dir, 'vmodel'), { recursive: true });
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      if ((await s.server.repositoryIndex(true)).some((e) => e.name === 'vmodel')) break;
      await sleep(200);
    }
    const r = await postJson(`${s.url}/v2/models/vmodel/infer`, { inputs: [{ name: 'INPUT0', shape: [1, 1], datatype: 'INT32', data: [1] }] });
    assert.equal(r.status, 200);
    // and the model going away
    await rm(join(repo.dir, 'vmodel'), { recursive: true });
    const deadline2 = Date.now() + 10_000;
    while (Date.now() < deadline2 && (await s.server.repositoryIndex(true)).length > 0) await sleep(200);
    assert.deepEqual(await s.server.repositoryIndex(true), []);
  } finally {
    await s.close();
    await repo.remove();
  }
});
