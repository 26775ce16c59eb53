import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { EXAMPLES, FIXTURES } from '../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../helpers/server.js';
import { postJson, request, type Reply } from '../helpers/http.js';
import type { InferenceResponse } from '../../src/inference/index.js';
import type { ServerOptions } from '../../src/server/options.js';
import { until } from '../helpers/until.js';

// The dynamic batcher through the real server. Timing is checked by counts, the order answers come back in
// and batch statistics, never by how long something took: `slow_fp32` (~85 ms per execution on two cores,
// more when the machine is busy) makes requests wait behind a running batch. Where the order in which
// requests reach the batcher matters, they are sent through the in-process API, which enqueues synchronously.

interface Slow {
  s: TestServer;
  remove(): Promise<void>;
  /** In-process request of batch 1 filled with `v`; resolves to the tag (or `tag!` on error) in completion order. */
  send(tag: string, extra?: { priority?: number; timeoutUs?: number; id?: string; signal?: AbortSignal; v?: number; tenant?: string }): Promise<InferenceResponse>;
  order: string[];
  stats(): Promise<any>;
  instances(): Promise<any[]>;
  /** Requests the model holds: executing, and waiting in its queue. */
  held(): { executing: number; waiting: number };
}

async function slowServer(batching: string, opts: { mbs?: number; groups?: string; options?: Partial<ServerOptions>; ensembles?: Record<string, string> } = {}): Promise<Slow> {
  const repo = await tempRepository([{ from: join(FIXTURES, 'slow', 'slow_fp32') }]);
  for (const [name, config] of Object.entries(opts.ensembles ?? {})) {
    await mkdir(join(repo.dir, name, '1'), { recursive: true });
    await writeFile(join(repo.dir, name, 'config.pbtxt'), config);
  }
  const p = join(repo.dir, 'slow_fp32', 'config.pbtxt');
  let text = (await readFile(p, 'utf8')).replace('max_batch_size: 8', `max_batch_size: ${opts.mbs ?? 8}`);
  if (opts.groups) text = text.replace(/instance_group \[[^\]]*\]/, `instance_group [ ${opts.groups} ]`);
  // Placement is known (the model takes ~100 ms): skip the probe runs at load. One thread per session leaves
  // the other core to whatever test file runs beside this one.
  await writeFile(p, `${text}\n${batching}\nparameters { key: "nereid_execution_placement" value { string_value: "worker" } }\nparameters { key: "intra_op_thread_count" value { string_value: "1" } }\n`);
  const s = await startTestServer({ modelRepositories: [repo.dir], ...opts.options });
  const order: string[] = [];
  return {
    s,
    order,
    remove: async () => {
      await s.close();
      await repo.remove();
    },
    send: (tag, extra = {}) => {
      const data = new Uint8Array(new Float32Array(16).fill(extra.v ?? 0).buffer);
      const r = s.server.infer({
        model: 'slow_fp32', inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 16], data }],
        priority: extra.priority, timeoutUs: extra.timeoutUs, id: extra.id, signal: extra.signal, tenant: extra.tenant,
      });
      r.then(() => order.push(tag), () => order.push(`${tag}!`));
      return r;
    },
    stats: async () => (await request(`${s.url}/v2/models/slow_fp32/stats`)).json().model_stats[0],
    instances: async () => (await request(`${s.url}/v2/models/slow_fp32/nereid_instance_stats`)).json().model_stats[0].instance_stats,
    held: () => {
      const v = (s.server as any).manager.resolve('slow_fp32');
      return { executing: v.inflight() - v.waiting(), waiting: v.waiting() };
    },
  };
}

const slowBody = (v: number, params?: Record<string, unknown>, id?: string) => ({
  ...(id ? { id } : {}),
  inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'FP32', data: new Array(16).fill(v) }],
  ...(params ? { parameters: params } : {}),
});
const batchSizes = (st: any): Record<number, number> => Object.fromEntries(st.batch_stats.map((b: any) => [b.batch_size, b.compute_infer.count]));
const settle = <T>(p: Promise<T>): Promise<T | Error> => p.catch((e: Error) => e);
/** Failed requests by Triton's failure reason (kept for the failure counter's `reason` label). */
const failures = (s: TestServer, model = 'slow_fp32'): Record<string, number> => (s.server as any).manager.resolve(model).stats.failures;

test('requests that wait together run as one batch; each gets its own rows back; batch and instance statistics', async () => {
  const m = await slowServer('dynamic_batching { }');
  try {
    const first = postJson(`${m.s.url}/v2/models/slow_fp32/infer`, slowBody(0));
    await until(() => m.held().executing === 1, 'the first request to occupy the instance'); // the next ones queue behind it
    const rest = await Promise.all([1, 2, 3, 4, 5].map((v) => postJson(`${m.s.url}/v2/models/slow_fp32/infer`, slowBody(v))));
    assert.equal((await first).status, 200);
    rest.forEach((r, i) => {
      assert.equal(r.status, 200, r.body.toString());
      assert.deepEqual(r.json().outputs[0].data, new Array(16).fill(i + 1));
      assert.deepEqual(r.json().outputs[0].shape, [1, 16]);
    });
    const st = await m.stats();
    assert.equal(st.inference_count, 6);
    assert.equal(st.execution_count, 2);
    assert.deepEqual(batchSizes(st), { 1: 1, 5: 1 });
    assert.equal(st.inference_stats.success.count, 6);
    assert.equal(st.inference_stats.compute_infer.count, 6);
    const [inst] = await m.instances();
    assert.deepEqual([inst.name, inst.kind, inst.passive, inst.execution_count, inst.inference_count], ['slow_fp32_0_0', 'KIND_CPU', false, 2, 6]);
    assert.equal(inst.compute_infer.count, 2);
  } finally {
    await m.remove();
  }
});

test('preferred_batch_size: without a queue delay, the largest preferred size that forms goes first', async () => {
  const m = await slowServer('dynamic_batching { preferred_batch_size: [ 2 ] }');
  try {
    const busy = m.send('busy');
    const queued = [1, 2, 3, 4, 5].map((i) => m.send(`r${i}`));
    await Promise.all([busy, ...queued]);
    // busy alone; then 5 waiting: 2 (preferred), 2 (preferred), 1 (what is left, no delay to wait for more).
    const st = await m.stats();
    assert.deepEqual(batchSizes(st), { 1: 2, 2: 2 });
    assert.equal(st.execution_count, 4);
    assert.equal(st.inference_count, 6);
    assert.deepEqual(m.order, ['busy', 'r1', 'r2', 'r3', 'r4', 'r5']);
  } finally {
    await m.remove();
  }
});

test('max_queue_delay_microseconds waits to fill a preferred batch; inline models batch a loop turn\'s requests', async () => {
  const repo = await tempRepository([{ from: join(EXAMPLES, 'digits') }]);
  const p = join(repo.dir, 'digits', 'config.pbtxt');
  await writeFile(p, (await readFile(p, 'utf8')).replace('dynamic_batching { }', 'dynamic_batching { preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 2000000 }'));
  const s = await startTestServer({ modelRepositories: [repo.dir] });
  try {
    const body = { inputs: [{ name: 'INPUT', shape: [1, 64], datatype: 'FP32', data: new Array(64).fill(1) }] };
    const pending: Promise<Reply>[] = [];
    for (let i = 0; i < 4; i++) {
      pending.push(postJson(`${s.url}/v2/models/digits/versions/2/infer`, body));
      await sleep(30); // each arrives in a different loop turn; the delay holds them for one batch of 4
    }
    for (const r of await Promise.all(pending)) assert.equal(r.status, 200);
    const st = (await request(`${s.url}/v2/models/digits/versions/2/stats`)).json().model_stats[0];
    assert.equal(st.inference_count, 4);
    assert.equal(st.execution_count, 1);
    assert.deepEqual(batchSizes(st), { 4: 1 });
  } finally {
    await s.close();
    await repo.remove();
  }
});

test('max_queue_delay_microseconds: a batch below every preferred size goes once its oldest request has waited the delay', async () => {
  const m = await slowServer('dynamic_batching { preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 300000 }');
  try {
    const t0 = performance.now();
    await Promise.all([m.send('a'), m.send('b')]);
    const waited = performance.now() - t0;
    assert.deepEqual(batchSizes(await m.stats()), { 2: 1 });
    // A lower bound only: the pair cannot have run before the delay was over.
    assert.ok(waited >= 270, `answered after ${waited.toFixed(0)} ms, before the 300 ms queue delay`);
  } finally {
    await m.remove();
  }
});

test('max_queue_delay_microseconds: and not much longer: a lone request goes after about the delay, not several times it', async () => {
  // An upper bound that holds on a busy machine: a 500 ms delay must be over well before 5 s (a delay taken
  // ten times too long); the margin is 2 s on top of what a batch that need not wait takes in the same run.
  const repo = await tempRepository([{ from: join(FIXTURES, 'js', 'batch_js') }]);
  const p = join(repo.dir, 'batch_js', 'config.pbtxt');
  await writeFile(p, (await readFile(p, 'utf8')).replace('max_queue_delay_microseconds: 5000000', 'max_queue_delay_microseconds: 500000'));
  const s = await startTestServer({ modelRepositories: [repo.dir] });
  const infer = (v: number) => postJson(`${s.url}/v2/models/batch_js/infer`, { inputs: [{ name: 'IN', shape: [1, 1], datatype: 'INT32', data: [v] }] });
  const batchOf = (r: Reply) => r.json().outputs.find((o: any) => o.name === 'BATCH').data[0];
  try {
    let t0 = performance.now();
    const full = await Promise.all([infer(1), infer(2), infer(3)]); // the preferred size: no wait
    const baseline = performance.now() - t0;
    assert.deepEqual(full.map(batchOf), [3, 3, 3]);
    t0 = performance.now();
    const lone = await infer(4);
    const waited = performance.now() - t0;
    assert.equal(batchOf(lone), 1);
    assert.ok(waited >= 420, `answered after ${waited.toFixed(0)} ms, before the 500 ms queue delay`);
    assert.ok(waited <= baseline + 2500, `answered after ${waited.toFixed(0)} ms: far longer than the 500 ms queue delay (a full batch took ${baseline.toFixed(0)} ms)`);
  } finally {
    await s.close();
    await repo.remove();
  }
});

test('priority levels: a higher level overtakes the default one; 0 and numbers past the last level are the default level', async () => {
  const m = await slowServer('dynamic_batching { priority_levels: 3 default_priority_level: 2 }', { mbs: 1 });
  try {
    const all = [m.send('busy')];
    all.push(m.send('default', { priority: 0 }), m.send('low', { priority: 3 }), m.send('past-last', { priority: 9 }), m.send('high', { priority: 1 }));
    await Promise.all(all);
    assert.deepEqual(m.order, ['busy', 'high', 'default', 'past-last', 'low']);
  } finally {
    await m.remove();
  }
});

test('priority levels up to the uint64 maximum and a large default level load without a queue per level, and order as Triton\'s', async () => {
  // Triton's own QA configs declare `priority_levels: 18446744073709551615`; its PriorityQueue makes a level's
  // queue only when a request needs it.
  const m = await slowServer(`dynamic_batching {
    priority_levels: 18446744073709551615 default_priority_level: 4294967296
    priority_queue_policy { key: 9007199254740993 value { max_queue_size: 1 } }
  }`, { mbs: 1 });
  try {
    const all = [m.send('busy')];
    all.push(
      m.send('lowest', { priority: 2 ** 64 - 1 }), m.send('default', { priority: 0 }), m.send('mid', { priority: 5 }),
      m.send('high', { priority: 1 }), m.send('below-default', { priority: 2 ** 40 }),
    );
    await Promise.all(all);
    assert.deepEqual(m.order, ['busy', 'high', 'mid', 'default', 'below-default', 'lowest']);
    // The level with a policy of its own keeps it: a second waiting request there exceeds its queue size.
    const busy = m.send('busy2');
    const first = m.send('policy1', { priority: 9007199254740993 });
    const second = await settle(m.send('policy2', { priority: 9007199254740993 }));
    assert.match(String(second), /Exceeds maximum queue size/);
    await Promise.all([busy, first]);
  } finally {
    await m.remove();
  }
});

test('priority over HTTP: the request\'s `priority` parameter', async () => {
  const m = await slowServer('dynamic_batching { priority_levels: 2 default_priority_level: 2 }', { mbs: 1 });
  try {
    const order: string[] = [];
    const send = (tag: string, params?: Record<string, unknown>) =>
      postJson(`${m.s.url}/v2/models/slow_fp32/infer`, slowBody(0, params)).then((r) => {
        assert.equal(r.status, 200);
        order.push(tag);
      });
    const first = send('busy');
    await until(() => m.held().executing === 1, "'busy' to run");
    const low = [send('low1'), send('low2'), send('low3')];
    await until(() => m.held().waiting === 3, 'three low-priority requests to queue');
    const high = send('high', { priority: 1 });
    await Promise.all([first, ...low, high]);
    assert.equal(order[0], 'busy');
    assert.equal(order[1], 'high', order.join(' '));
  } finally {
    await m.remove();
  }
});

test('an ensemble carries the request\'s priority and timeout into its steps', async () => {
  const ensemble = `name: "via_ensemble"
platform: "ensemble"
max_batch_size: 1
input [ { name: "X" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 16 ] } ]
ensemble_scheduling { step [ { model_name: "slow_fp32" model_version: -1 input_map { key: "INPUT0" value: "X" } output_map { key: "OUTPUT0" value: "Y" } } ] }
`;
  const m = await slowServer(`dynamic_batching {
    priority_levels: 2 default_priority_level: 2
    default_queue_policy { default_timeout_microseconds: 60000000 allow_timeout_override: true }
  }`, { mbs: 1, ensembles: { via_ensemble: ensemble } });
  try {
    const viaEnsemble = (tag: string, extra: { priority?: number; timeoutUs?: number }) => {
      const r = m.s.server.infer({ model: 'via_ensemble', inputs: [{ name: 'X', datatype: 'FP32', shape: [1, 16], data: new Uint8Array(64) }], ...extra });
      r.then(() => m.order.push(tag), () => m.order.push(`${tag}!`));
      return settle(r);
    };
    const busy = m.send('busy');
    const low = m.send('low');
    const high = viaEnsemble('high', { priority: 1 });
    const late = viaEnsemble('timed-out', { timeoutUs: 5000 });
    await Promise.all([busy, low, high, late]);
    assert.match(String(await late), /Request timeout expired/);
    assert.deepEqual(m.order, ['timed-out!', 'busy', 'high', 'low']);
  } finally {
    await m.remove();
  }
});

test('REJECT: a queued request times out while it waits, not when the running batch ends', async () => {
  const m = await slowServer('dynamic_batching { default_queue_policy { timeout_action: REJECT default_timeout_microseconds: 10000000 allow_timeout_override: true } }', { mbs: 1 });
  try {
    const busy = m.send('busy');
    const late = settle(m.send('timed-out', { timeoutUs: 5000, id: 'r7' }));
    await busy;
    const err = (await late) as Error & { code?: string };
    assert.equal(err.code, 'UNAVAILABLE');
    assert.equal(err.message, '[request id: r7] Request timeout expired');
    assert.deepEqual(m.order, ['timed-out!', 'busy']);
    const st = await m.stats();
    assert.equal(st.inference_stats.fail.count, 1);
    assert.equal(st.execution_count, 1);
    assert.deepEqual(failures(m.s), { REJECTED: 1, CANCELED: 0, BACKEND: 0, OTHER: 0 });
  } finally {
    await m.remove();
  }
});

test('REJECT over HTTP: 503 with Triton\'s message; the request\'s `timeout` parameter (µs) overrides', async () => {
  const m = await slowServer('dynamic_batching { default_queue_policy { default_timeout_microseconds: 60000000 allow_timeout_override: true } }', { mbs: 1 });
  try {
    const busy = postJson(`${m.s.url}/v2/models/slow_fp32/infer`, slowBody(0, { timeout: 60000000 }));
    await until(() => m.held().executing === 1, 'the first request to run');
    const r = await postJson(`${m.s.url}/v2/models/slow_fp32/infer`, slowBody(1, { timeout: 20000 }, 'h1'));
    assert.equal(r.status, 503);
    assert.deepEqual(r.json(), { error: '[request id: h1] Request timeout expired' });
    assert.equal((await busy).status, 200);
  } finally {
    await m.remove();
  }
});

test('allow_timeout_override only shortens: a longer request timeout, or one with no default, does not apply', async () => {
  const m = await slowServer(`dynamic_batching {
    priority_levels: 2 default_priority_level: 1
    priority_queue_policy { key: 1 value { default_timeout_microseconds: 20000 allow_timeout_override: true } }
    priority_queue_policy { key: 2 value { allow_timeout_override: true } }
  }`, { mbs: 1 });
  try {
    const busy = m.send('busy');
    const longer = settle(m.send('longer', { priority: 1, timeoutUs: 60_000_000 }));
    const noDefault = settle(m.send('no-default', { priority: 2, timeoutUs: 1000 }));
    await Promise.all([busy, longer, noDefault]);
    assert.match(String(await longer), /Request timeout expired/);
    assert.ok(!((await noDefault) instanceof Error), 'the request timeout of a level without a default timeout is ignored');
  } finally {
    await m.remove();
  }
});

test('DELAY: a request whose timeout expired runs after its level\'s other requests, but before lower levels', async () => {
  const m = await slowServer(`dynamic_batching {
    priority_levels: 2 default_priority_level: 2
    priority_queue_policy { key: 1 value { timeout_action: DELAY default_timeout_microseconds: 60000000 allow_timeout_override: true } }
  }`, { mbs: 1 });
  try {
    const busy = m.send('busy');
    const delayed = m.send('delayed', { priority: 1, timeoutUs: 5000 });
    const low = m.send('low', { priority: 2 });
    await sleep(30); // 'delayed' has expired and moved behind level 1
    const patient = m.send('patient', { priority: 1 });
    await Promise.all([busy, delayed, low, patient]);
    assert.deepEqual(m.order, ['busy', 'patient', 'delayed', 'low']);
  } finally {
    await m.remove();
  }
});

test('tenants: past two batches per instance, requests wait by tenant and enter the queue in turns, so a flood delays another tenant by about a batch', async () => {
  const m = await slowServer('dynamic_batching { }', { mbs: 2 });
  try {
    const a = Array.from({ length: 12 }, (_, i) => `a${i + 1}`);
    const sent = [m.send('busy', { tenant: 'a' }), ...a.map((t) => m.send(t, { tenant: 'a' })), m.send('b1', { tenant: 'b' }), m.send('b2', { tenant: 'b' })];
    assert.deepEqual(m.held(), { executing: 1, waiting: 14 });
    await Promise.all(sent);
    // The queues take 4 (2 × max_batch_size × 1 instance): a1-a4; then as each batch leaves, a and b take turns.
    assert.deepEqual(m.order, ['busy', 'a1', 'a2', 'a3', 'a4', 'a5', 'b1', 'a6', 'b2', ...a.slice(6)]);
    const st = await m.stats();
    assert.equal(st.inference_stats.success.count, 15);
  } finally {
    await m.remove();
  }
});

test('tenants: a request held back keeps its deadline (REJECT answers it while it waits; DELAY puts it behind its level)', async () => {
  for (const action of ['REJECT', 'DELAY']) {
    const m = await slowServer(`dynamic_batching { default_queue_policy { timeout_action: ${action} default_timeout_microseconds: 60000000 allow_timeout_override: true } }`, { mbs: 2 });
    try {
      const a = Array.from({ length: 12 }, (_, i) => `a${i + 1}`);
      const sent = [m.send('busy', { tenant: 'a' }), ...a.map((t) => m.send(t, { tenant: 'a' }))];
      // Behind a5-a12 in its tenant's line: still held when its deadline passes, before a single batch has run.
      const timed = settle(m.send('timed', { tenant: 'a', timeoutUs: 30_000, id: 't1' }));
      await Promise.all(sent);
      const r = await timed;
      if (action === 'REJECT') {
        assert.equal((r as Error).message, '[request id: t1] Request timeout expired');
        assert.equal(m.order[0], 'timed!');
        assert.deepEqual(failures(m.s).REJECTED, 1);
      } else {
        assert.ok(!(r instanceof Error), String(r));
        assert.deepEqual(m.order, ['busy', ...a, 'timed']);
      }
      assert.equal(m.held().waiting, 0);
    } finally {
      await m.remove();
    }
  }
});

test('max_queue_size: a full queue refuses at once with UNAVAILABLE (HTTP 503) and Triton\'s message', async () => {
  const m = await slowServer('dynamic_batching { default_queue_policy { max_queue_size: 2 } }', { mbs: 1 });
  try {
    const busy = m.send('busy'); // running, so not in the queue
    const queued = [m.send('q1'), m.send('q2')];
    const refused = settle(m.send('refused', { id: 'x1' }));
    const err = (await refused) as Error & { code?: string };
    assert.equal(err.code, 'UNAVAILABLE');
    assert.equal(err.message, '[request id: x1] Exceeds maximum queue size');
    const http = await postJson(`${m.s.url}/v2/models/slow_fp32/infer`, slowBody(0));
    assert.equal(http.status, 503);
    assert.deepEqual(http.json(), { error: 'Exceeds maximum queue size' });
    await Promise.all([busy, ...queued]);
    assert.deepEqual(m.order, ['refused!', 'busy', 'q1', 'q2']);
    const st = await m.stats();
    assert.equal(st.inference_stats.fail.count, 2);
    assert.equal(st.inference_stats.success.count, 3);
    assert.equal(failures(m.s).REJECTED, 2);
  } finally {
    await m.remove();
  }
});

test('preserve_ordering: answers keep dispatch order when a later batch finishes first on another instance', async () => {
  const m = await slowServer('dynamic_batching { preserve_ordering: true }', { groups: '{ count: 2 kind: KIND_CPU }' });
  try {
    // Both instances busy; then nine requests wait: the first instance free takes eight (about three times
    // slower than one), the other takes the ninth, which is done long before the eight (without
    // preserve_ordering, r9 answers first).
    const busy = [m.send('busyA'), m.send('busyB')];
    await until(() => m.held().executing === 2, 'both instances to be busy');
    const queued = Array.from({ length: 9 }, (_, i) => m.send(`r${i + 1}`));
    await Promise.all([...busy, ...queued]);
    assert.deepEqual(batchSizes(await m.stats()), { 1: 3, 8: 1 });
    assert.deepEqual(m.order.filter((t) => t.startsWith('r')), ['r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7', 'r8', 'r9']);
  } finally {
    await m.remove();
  }
});

test('shapes: requests whose variable dims differ go in different batches', async () => {
  const repo = await tempRepository([{ from: join(FIXTURES, 'dtypes', 'identity_fp32') }]);
  const p = join(repo.dir, 'identity_fp32', 'config.pbtxt');
  await writeFile(p, `${await readFile(p, 'utf8')}\ndynamic_batching { preferred_batch_size: [ 3 ] max_queue_delay_microseconds: 300000 }\n`);
  const s = await startTestServer({ modelRepositories: [repo.dir] });
  try {
    const input = (n: number, v: number) => ({ name: 'INPUT0', datatype: 'FP32' as const, shape: [1, n], data: new Uint8Array(new Float32Array(n).fill(v).buffer) });
    const rs = await Promise.all([s.server.infer({ model: 'identity_fp32', inputs: [input(2, 1)] }), s.server.infer({ model: 'identity_fp32', inputs: [input(2, 2)] }), s.server.infer({ model: 'identity_fp32', inputs: [input(3, 3)] })]);
    rs.forEach((r, i) => {
      const t = r.outputs[0]!;
      assert.deepEqual(t.shape, [1, i < 2 ? 2 : 3]);
      assert.deepEqual([...new Float32Array(new Uint8Array(t.data as Uint8Array).buffer)], new Array(i < 2 ? 2 : 3).fill(i + 1));
    });
    const st = (await request(`${s.url}/v2/models/identity_fp32/stats`)).json().model_stats[0];
    // The two [1,2] requests together (the [1,3] one stops the batch), then the [1,3] one after the delay.
    assert.deepEqual(batchSizes(st), { 1: 1, 2: 1 });
  } finally {
    await s.close();
    await repo.remove();
  }
});

test('ragged batching: different shapes share a batch; the batch input and batch output tell the requests apart', async () => {
  const s = await startTestServer({ modelRepositories: [join(FIXTURES, 'batching')] });
  try {
    const input = (values: number[]) => ({ name: 'INPUT0', datatype: 'FP32' as const, shape: [1, values.length], data: new Uint8Array(new Float32Array(values).buffer) });
    const sent = [[1, 2], [3, 4, 5], [6]];
    const rs = await Promise.all(sent.map((v) => s.server.infer({ model: 'ragged_acc', inputs: [input(v)] })));
    rs.forEach((r, i) => {
      const out = r.outputs.find((t) => t.name === 'OUTPUT0')!;
      const acc = r.outputs.find((t) => t.name === 'ACC')!;
      assert.deepEqual(out.shape, [1, sent[i]!.length]);
      assert.deepEqual([...new Float32Array(new Uint8Array(out.data as Uint8Array).buffer)], sent[i]!.map((x) => 2 * x));
      assert.deepEqual(acc.shape, [1, 1]);
      assert.deepEqual([...new Int32Array(new Uint8Array(acc.data as Uint8Array).buffer)], [[2, 5, 6][i]]);
    });
    // The same over HTTP, three at once (in whatever order they arrive).
    const http = await Promise.all(sent.map((v) => postJson(`${s.url}/v2/models/ragged_acc/infer`, { inputs: [{ name: 'INPUT0', shape: [1, v.length], datatype: 'FP32', data: v }] })));
    const accs: number[] = [];
    http.forEach((r, i) => {
      assert.equal(r.status, 200, r.body.toString());
      const outs = r.json().outputs;
      assert.deepEqual(outs.find((o: any) => o.name === 'OUTPUT0').data, sent[i]!.map((x) => 2 * x));
      assert.deepEqual(outs.find((o: any) => o.name === 'OUTPUT0').shape, [1, sent[i]!.length]);
      accs.push(outs.find((o: any) => o.name === 'ACC').data[0]);
    });
    assert.equal(Math.max(...accs), 6, `the last request's running element count is the batch's: ${accs}`);
    const st = (await request(`${s.url}/v2/models/ragged_acc/stats`)).json().model_stats[0];
    assert.deepEqual(batchSizes(st), { 3: 2 });
  } finally {
    await s.close();
  }
});

test('cancelled while queued: answered as cancelled when reached, never executed', async () => {
  const m = await slowServer('dynamic_batching { }', { mbs: 1 });
  try {
    const busy = m.send('busy');
    const c = new AbortController();
    const gone = settle(m.send('gone', { signal: c.signal }));
    const kept = m.send('kept');
    c.abort();
    await Promise.all([busy, kept]);
    const err = (await gone) as Error & { code?: string };
    assert.equal(err.code, 'CANCELLED');
    assert.deepEqual(m.order, ['busy', 'gone!', 'kept']);
    const st = await m.stats();
    assert.equal(st.execution_count, 2);
    assert.equal(st.inference_stats.fail.count, 1);
    assert.equal(failures(m.s).CANCELED, 1);
    // A client that hangs up over HTTP cancels its queued request the same way.
    const busy2 = postJson(`${m.s.url}/v2/models/slow_fp32/infer`, slowBody(0));
    await until(() => m.held().executing === 1, 'the HTTP request to run');
    const ac = new AbortController();
    const hungUp = fetch(`${m.s.url}/v2/models/slow_fp32/infer`, { method: 'POST', body: JSON.stringify(slowBody(1)), signal: ac.signal }).catch(() => 'aborted');
    await until(() => m.held().waiting === 1, 'the second HTTP request to queue');
    ac.abort();
    assert.equal(await hungUp, 'aborted');
    await until(() => failures(m.s).CANCELED === 2, 'the hung-up request to be answered as cancelled');
    assert.equal((await busy2).status, 200);
    await until(() => m.held().executing + m.held().waiting === 0, 'the model to be idle');
    assert.equal((await m.stats()).execution_count, 3);
  } finally {
    await m.remove();
  }
});

test('cancelled while its pending batch waits for the queue delay: answered, not run with the others', async () => {
  const m = await slowServer('dynamic_batching { preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 200000 }');
  try {
    const c = new AbortController();
    const gone = settle(m.send('gone', { signal: c.signal }));
    const kept = m.send('kept');
    await until(() => m.held().waiting === 2, 'both requests to wait for the queue delay');
    c.abort();
    await kept;
    assert.equal(((await gone) as Error & { code?: string }).code, 'CANCELLED');
    assert.deepEqual(batchSizes(await m.stats()), { 1: 1 });
  } finally {
    await m.remove();
  }
});

test('unload drains: queued requests still run; new ones are refused', async () => {
  const m = await slowServer('dynamic_batching { preferred_batch_size: [ 8 ] max_queue_delay_microseconds: 60000000 }', {
    options: { modelControlMode: 'explicit', loadModels: ['slow_fp32'] },
  });
  try {
    const busy = m.send('busy');
    // These would wait a minute for a batch of 8; unloading sends them at once.
    const queued = [m.send('q1'), m.send('q2')];
    await until(() => m.held().waiting === 3, 'three requests to wait for a batch of 8');
    const unloading = m.s.server.unloadModel('slow_fp32');
    await sleep(10);
    const after = settle(m.s.server.infer({ model: 'slow_fp32', inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 16], data: new Uint8Array(64) }] }));
    await unloading;
    await Promise.all([busy, ...queued]);
    assert.deepEqual(m.order, ['busy', 'q1', 'q2']);
    assert.ok((await after) instanceof Error);
  } finally {
    await m.remove();
  }
});

test('instance groups: a request goes to a free instance; passive instances get none; per-instance statistics', async () => {
  const m = await slowServer('dynamic_batching { }', { groups: '{ count: 2 kind: KIND_CPU }, { name: "standby" count: 1 kind: KIND_CPU passive: true }' });
  try {
    await Promise.all([m.send('a'), m.send('b')]);
    const st = await m.stats();
    assert.equal(st.execution_count, 2, 'the second request did not wait for the first: another instance was free');
    const inst = await m.instances();
    assert.deepEqual(inst.map((i: any) => [i.name, i.passive, i.execution_count, i.inference_count]), [
      ['slow_fp32_0_0', false, 1, 1],
      ['slow_fp32_0_1', false, 1, 1],
      ['standby_0', true, 0, 0],
    ]);
    const all = (await request(`${m.s.url}/v2/models/nereid_instance_stats`)).json();
    assert.equal(all.model_stats[0].name, 'slow_fp32');
    assert.equal(all.model_stats[0].version, '1');
    assert.equal((await request(`${m.s.url}/v2/models/nope/nereid_instance_stats`)).status, 400);
  } finally {
    await m.remove();
  }
});

test('max_batch_size 0: the dynamic batcher still applies its queue policies, one request per execution', async () => {
  const repo = await tempRepository([{ from: join(FIXTURES, 'slow', 'slow_fp32') }]);
  const p = join(repo.dir, 'slow_fp32', 'config.pbtxt');
  const text = (await readFile(p, 'utf8')).replace('max_batch_size: 8', 'max_batch_size: 0').replaceAll('dims: [ 16 ]', 'dims: [ -1, 16 ]');
  await writeFile(p, `${text}\ndynamic_batching { default_queue_policy { max_queue_size: 1 } }\nparameters { key: "nereid_execution_placement" value { string_value: "worker" } }\n`);
  const s = await startTestServer({ modelRepositories: [repo.dir] });
  try {
    const send = () => settle(s.server.infer({ model: 'slow_fp32', inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 16], data: new Uint8Array(64) }] }));
    const [busy, queued, refused] = await Promise.all([send(), send(), send()]);
    assert.ok(!(busy instanceof Error) && !(queued instanceof Error));
    assert.match(String(refused), /Exceeds maximum queue size/);
    const st = (await request(`${s.url}/v2/models/slow_fp32/stats`)).json().model_stats[0];
    assert.deepEqual([st.execution_count, st.inference_count], [2, 2]);
  } finally {
    await s.close();
    await repo.remove();
  }
});
