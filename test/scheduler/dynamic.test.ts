import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { EXAMPLES, FIXTURES } from '../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../helpers/server.js';
import { postJson, request } from '../helpers/http.js';

// The dynamic batcher through the real server. Timing is checked by counts, order and batch statistics,
// with a slow model (~85 ms per run, one instance) to make requests queue.

async function slowServer(batching: string, mbs = 8): Promise<{ s: TestServer; remove(): Promise<void> }> {
  const repo = await tempRepository([{ from: join(FIXTURES, 'slow', 'slow_fp32') }]);
  const p = join(repo.dir, 'slow_fp32', 'config.pbtxt');
  await writeFile(p, `${(await readFile(p, 'utf8')).replace('max_batch_size: 8', `max_batch_size: ${mbs}`)}\n${batching}\n`);
  const s = await startTestServer({ modelRepositories: [repo.dir] });
  return { s, remove: async () => { await s.close(); await repo.remove(); } };
}

const slowBody = (v: number, params?: Record<string, unknown>) => ({
  inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'FP32', data: new Array(16).fill(v) }],
  ...(params ? { parameters: params } : {}),
});
const stats = async (s: TestServer, m: string) => (await request(`${s.url}/v2/models/${m}/stats`)).json().model_stats[0];

test('requests that wait together run as one batch, and each gets its own rows back', async () => {
  const { s, remove } = await slowServer('dynamic_batching { }');
  try {
    const first = postJson(`${s.url}/v2/models/slow_fp32/infer`, slowBody(0));
    await sleep(20); // the first occupies the instance; the next ones queue behind it
    const rest = await Promise.all([1, 2, 3, 4, 5].map((v) => postJson(`${s.url}/v2/models/slow_fp32/infer`, slowBody(v))));
    assert.equal((await first).status, 200);
    rest.forEach((r, i) => {
      assert.equal(r.status, 200, r.body.toString());
      assert.deepEqual(r.json().outputs[0].data, new Array(16).fill(i + 1));
      assert.deepEqual(r.json().outputs[0].shape, [1, 16]);
    });
    const st = await stats(s, 'slow_fp32');
    assert.equal(st.inference_count, 6);
    assert.equal(st.execution_count, 2);
    assert.ok(st.batch_stats.some((b: any) => b.batch_size === 5 && b.compute_infer.count === 1));
  } finally {
    await remove();
  }
});

test('max_queue_size: a full queue refuses at once with Triton\'s message', async () => {
  const { s, remove } = await slowServer('dynamic_batching { default_queue_policy { max_queue_size: 2 } }', 1);
  try {
    const rs = await Promise.all(Array.from({ length: 6 }, (_, i) => postJson(`${s.url}/v2/models/slow_fp32/infer`, slowBody(i))));
    const refused = rs.filter((r) => r.status !== 200);
    assert.ok(refused.length >= 2, `${refused.length} refused`);
    for (const r of refused) {
      assert.equal(r.status, 503);
      assert.match(r.json().error, /Exceeds maximum queue size/);
    }
    assert.ok((await stats(s, 'slow_fp32')).inference_stats.fail.count >= refused.length);
  } finally {
    await remove();
  }
});

test('queue timeouts fire while requests wait: REJECT answers at once, not after the running batch', async () => {
  const { s, remove } = await slowServer('dynamic_batching { default_queue_policy { timeout_action: REJECT default_timeout_microseconds: 1000000 allow_timeout_override: true } }', 1);
  try {
    const busy = postJson(`${s.url}/v2/models/slow_fp32/infer`, slowBody(0));
    await sleep(10);
    const busy2 = postJson(`${s.url}/v2/models/slow_fp32/infer`, slowBody(0));
    await sleep(10);
    // Queued behind two ~85 ms runs with a 5 ms timeout of its own: it must fail before the first run ends.
    const t0 = performance.now();
    const r = await postJson(`${s.url}/v2/models/slow_fp32/infer`, slowBody(1, { timeout: 5000 }));
    const waited = performance.now() - t0;
    assert.equal(r.status, 503);
    assert.match(r.json().error, /Request timeout expired/);
    const first = await busy;
    assert.equal(first.status, 200);
    assert.equal((await busy2).status, 200);
    assert.ok(waited < 150, `the timeout was answered after ${waited.toFixed(0)} ms`);
  } finally {
    await remove();
  }
});

test('priorities: a high-priority request overtakes those waiting at the default level', async () => {
  const { s, remove } = await slowServer('dynamic_batching { priority_levels: 2 default_priority_level: 2 }', 1);
  try {
    const order: string[] = [];
    const send = (tag: string, params?: Record<string, unknown>) =>
      postJson(`${s.url}/v2/models/slow_fp32/infer`, slowBody(0, params)).then((r) => {
        assert.equal(r.status, 200);
        order.push(tag);
      });
    const first = send('busy');
    await sleep(20);
    const low = [send('low1'), send('low2'), send('low3')];
    await sleep(20);
    const high = send('high', { priority: 1 });
    await Promise.all([first, ...low, high]);
    assert.equal(order[0], 'busy');
    assert.equal(order[1], 'high', order.join(' '));
  } finally {
    await remove();
  }
});

test('DELAY: a request whose timeout expired runs after the others', async () => {
  const { s, remove } = await slowServer('dynamic_batching { default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 1000 allow_timeout_override: true } }', 1);
  try {
    const order: string[] = [];
    const send = (tag: string, params?: Record<string, unknown>) =>
      postJson(`${s.url}/v2/models/slow_fp32/infer`, slowBody(0, params)).then((r) => {
        assert.equal(r.status, 200);
        order.push(tag);
      });
    const first = send('busy');
    await sleep(20);
    const delayed = send('delayed'); // 1 ms default timeout: moved behind
    await sleep(20);
    const patient = send('patient', { timeout: 10_000_000 });
    await Promise.all([first, delayed, patient]);
    assert.deepEqual(order, ['busy', 'patient', 'delayed']);
  } finally {
    await remove();
  }
});

test('max_queue_delay_microseconds waits to fill a preferred batch; inline models batch a loop turn\'s requests', async () => {
  const repo = await tempRepository([{ from: join(EXAMPLES, 'digits') }]);
  const p = join(repo.dir, 'digits', 'config.pbtxt');
  await writeFile(p, (await readFile(p, 'utf8')).replace('dynamic_batching { }', 'dynamic_batching { preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 2000000 }'));
  const s = await startTestServer({ modelRepositories: [repo.dir] });
  try {
    const body = { inputs: [{ name: 'INPUT', shape: [1, 64], datatype: 'FP32', data: new Array(64).fill(1) }] };
    const pending: Promise<unknown>[] = [];
    for (let i = 0; i < 4; i++) {
      pending.push(postJson(`${s.url}/v2/models/digits/versions/2/infer`, body));
      await sleep(30); // each arrives in a different loop turn; the delay holds them for one batch of 4
    }
    await Promise.all(pending);
    const st = (await request(`${s.url}/v2/models/digits/versions/2/stats`)).json().model_stats[0];
    assert.equal(st.inference_count, 4);
    assert.equal(st.execution_count, 1);
    assert.ok(st.batch_stats.some((b: any) => b.batch_size === 4));
  } finally {
    await s.close();
    await repo.remove();
  }
});

test('cancelled while queued: never executed; unload drains what is queued', async () => {
  const { s, remove } = await slowServer('dynamic_batching { }', 1);
  try {
    const busy = postJson(`${s.url}/v2/models/slow_fp32/infer`, slowBody(0));
    await sleep(20);
    const c = new AbortController();
    const gone = fetch(`${s.url}/v2/models/slow_fp32/infer`, { method: 'POST', body: JSON.stringify(slowBody(1)), signal: c.signal }).catch(() => 'aborted');
    await sleep(20);
    c.abort();
    assert.equal(await gone, 'aborted');
    assert.equal((await busy).status, 200);
    await sleep(50);
    assert.equal((await stats(s, 'slow_fp32')).execution_count, 1);
  } finally {
    await remove();
  }
});
