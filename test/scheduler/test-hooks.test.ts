import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { EXAMPLES, FIXTURES } from '../helpers/paths.js';
import { spawnServer, startTestServer, tempRepository, type TestServer } from '../helpers/server.js';
import { postJson, request, type Reply } from '../helpers/http.js';
import { until } from '../helpers/until.js';
import type { ServerOptions } from '../../src/server/options.js';
import { envCount, schedulerHold } from '../../src/scheduler/test-hooks.js';

// Triton's scheduler test hooks (TRITONSERVER_DELAY_SCHEDULER, TRITONSERVER_BACKLOG_DELAY_SCHEDULER), which
// its QA suites (L0_batcher, L0_sequence_batcher) set so that requests collect before the first batch forms.
// Each server here is started with the variables set, as those suites start tritonserver; the batcher reads
// them when the model loads. Requests are counted where they wait, never timed; the only pause checks that
// nothing ran early.

/** A server whose models' schedulers are built with `env` set in the environment. */
async function serverWith(env: Record<string, string>, dir: string, options: Partial<ServerOptions> = {}): Promise<TestServer> {
  const saved = Object.keys(env).map((k) => [k, process.env[k]] as const);
  Object.assign(process.env, env);
  try {
    return await startTestServer({ modelRepositories: [dir], ...options });
  } finally {
    for (const [k, v] of saved) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

const waiting = (s: TestServer, model: string): number => (s.server as any).manager.resolve(model).waiting();
const batchSizes = async (s: TestServer, model: string): Promise<Record<number, number>> => {
  const st = (await request(`${s.url}/v2/models/${model}/stats`)).json().model_stats[0];
  return Object.fromEntries(st.batch_stats.map((b: any) => [b.batch_size, b.compute_infer.count]));
};

test('the variables are read as Triton reads them (atoi); unset or 0 means no hold', () => {
  assert.equal(schedulerHold({}), undefined);
  assert.equal(schedulerHold({ TRITONSERVER_DELAY_SCHEDULER: '0', TRITONSERVER_BACKLOG_DELAY_SCHEDULER: '3' }), undefined);
  assert.deepEqual(schedulerHold({ TRITONSERVER_DELAY_SCHEDULER: '12' }), { queued: 12, backlog: 0 });
  assert.deepEqual(schedulerHold({ TRITONSERVER_DELAY_SCHEDULER: '16', TRITONSERVER_BACKLOG_DELAY_SCHEDULER: '2' }), { queued: 16, backlog: 2 });
  assert.equal(envCount(' 7ms'), 7);
  assert.equal(envCount('x'), 0);
  assert.equal(envCount('-4'), 0);
});

test('TRITONSERVER_DELAY_SCHEDULER: the dynamic batcher runs nothing until that many requests wait, then batches them together, then no longer holds', async () => {
  // batch_js answers BATCH = the number of requests its execution had; without a queue delay it would run
  // each request the moment it arrives.
  const repo = await tempRepository([{ from: join(FIXTURES, 'js', 'batch_js') }]);
  const p = join(repo.dir, 'batch_js', 'config.pbtxt');
  await writeFile(p, (await readFile(p, 'utf8')).replace(/dynamic_batching \{[^}]*\}/, 'dynamic_batching { }'));
  const s = await serverWith({ TRITONSERVER_DELAY_SCHEDULER: '3' }, repo.dir);
  try {
    const answered: number[] = [];
    const send = (v: number): Promise<Reply> => postJson(`${s.url}/v2/models/batch_js/infer`, { inputs: [{ name: 'IN', shape: [1, 1], datatype: 'INT32', data: [v] }] })
      .then((r) => {
        answered.push(v);
        return r;
      });
    const first = [send(1), send(2)];
    await until(() => waiting(s, 'batch_js') === 2, 'two requests waiting');
    await sleep(300);
    assert.deepEqual(answered, [], 'two of three: nothing has run');
    const all = await Promise.all([...first, send(3)]);
    for (const [i, r] of all.entries()) {
      assert.equal(r.status, 200, r.body.toString());
      const out = Object.fromEntries(r.json().outputs.map((o: any) => [o.name, o.data[0]]));
      assert.deepEqual(out, { OUT: 2 * (i + 1), BATCH: 3 });
    }
    // The hold is over for good: a lone request runs at once, alone.
    const lone = await send(4);
    assert.equal(lone.json().outputs.find((o: any) => o.name === 'BATCH').data[0], 1);
    assert.deepEqual(await batchSizes(s, 'batch_js'), { 1: 1, 3: 1 });
  } finally {
    await s.close();
    await repo.remove();
  }
});

test('TRITONSERVER_DELAY_SCHEDULER with TRITONSERVER_BACKLOG_DELAY_SCHEDULER: the sequence batcher waits for requests in its places and in its backlog', async () => {
  // Two places (max_batch_size 2): sequences 1 and 2 take them, sequence 3 waits in the backlog.
  const repo = await tempRepository([{ from: join(EXAMPLES, 'sequence_accumulator') }]);
  const p = join(repo.dir, 'sequence_accumulator', 'config.pbtxt');
  await writeFile(p, (await readFile(p, 'utf8')).replace('max_batch_size: 8', 'max_batch_size: 2'));
  const s = await serverWith({ TRITONSERVER_DELAY_SCHEDULER: '2', TRITONSERVER_BACKLOG_DELAY_SCHEDULER: '1' }, repo.dir);
  try {
    const answered: number[] = [];
    const send = (id: number, value: number, start: boolean, end: boolean): Promise<Reply> => postJson(`${s.url}/v2/models/sequence_accumulator/infer`, {
      inputs: [{ name: 'INPUT', shape: [1, 1], datatype: 'INT32', data: [value] }],
      parameters: { sequence_id: id, sequence_start: start, sequence_end: end },
    }).then((r) => {
      answered.push(id);
      return r;
    });
    const one = send(1, 10, true, true);
    const two = send(2, 20, true, false);
    await until(() => waiting(s, 'sequence_accumulator') === 2, 'two sequences waiting in their places');
    await sleep(300);
    assert.deepEqual(answered, [], 'places full, backlog empty: nothing has run');
    const three = send(3, 30, true, true);
    const replies = await Promise.all([one, two, three]);
    assert.deepEqual(replies.map((r) => r.json().outputs[0].data[0]), [10, 20, 30]);
    // Sequences 1 and 2 ran as one batch; sequence 3 took the place sequence 1 left and ran alone.
    assert.deepEqual(await batchSizes(s, 'sequence_accumulator'), { 1: 1, 2: 1 });
    assert.equal((await send(2, 5, false, true)).json().outputs[0].data[0], 25);
  } finally {
    await s.close();
    await repo.remove();
  }
});

test('TRITONSERVER_DELAY_SCHEDULER, oldest strategy: counts one request per sequence, as the instances\' dynamic batchers Triton uses see them', async () => {
  const repo = await tempRepository([{ from: join(EXAMPLES, 'sequence_accumulator') }]);
  const p = join(repo.dir, 'sequence_accumulator', 'config.pbtxt');
  await writeFile(p, (await readFile(p, 'utf8')).replace('sequence_batching {', 'sequence_batching {\n  oldest { max_candidate_sequences: 4 }'));
  const s = await serverWith({ TRITONSERVER_DELAY_SCHEDULER: '2' }, repo.dir);
  try {
    const data = (v: number) => new Uint8Array(new Int32Array([v]).buffer);
    const answered: string[] = [];
    // In process, so that the two requests of sequence 1 reach the batcher in order.
    const send = (tag: string, id: number, v: number, start: boolean, end: boolean) => s.server.infer({
      model: 'sequence_accumulator', inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1], data: data(v) }],
      sequenceId: id, sequenceStart: start, sequenceEnd: end,
    }).then((r) => {
      answered.push(tag);
      const d = r.outputs[0]!.data as Uint8Array;
      return new Int32Array(d.slice().buffer)[0];
    });
    const a1 = send('a1', 1, 1, true, false);
    const a2 = send('a2', 1, 2, false, true);
    await until(() => waiting(s, 'sequence_accumulator') === 2, 'two requests of one sequence waiting');
    await sleep(300);
    assert.deepEqual(answered, [], 'two requests but one sequence: nothing has run');
    const b1 = send('b1', 2, 10, true, true);
    assert.deepEqual(await Promise.all([a1, a2, b1]), [1, 3, 10]);
    assert.equal(answered.at(-1), 'a2');
    assert.deepEqual(await batchSizes(s, 'sequence_accumulator'), { 1: 1, 2: 1 });
  } finally {
    await s.close();
    await repo.remove();
  }
});

test('TRITONSERVER_DELAY_SCHEDULER: a model unloaded while its batcher holds runs what waits, so the unload ends', async () => {
  const repo = await tempRepository([{ from: join(EXAMPLES, 'sequence_accumulator') }]);
  const s = await serverWith({ TRITONSERVER_DELAY_SCHEDULER: '5' }, repo.dir, { modelControlMode: 'explicit', loadModels: ['sequence_accumulator'] });
  try {
    const r = postJson(`${s.url}/v2/models/sequence_accumulator/infer`, {
      inputs: [{ name: 'INPUT', shape: [1, 1], datatype: 'INT32', data: [6] }],
      parameters: { sequence_id: 9, sequence_start: true, sequence_end: true },
    });
    await until(() => waiting(s, 'sequence_accumulator') === 1, 'one request waiting');
    await s.server.unloadModel('sequence_accumulator');
    const reply = await r;
    assert.equal(reply.status, 200, reply.body.toString());
    assert.equal(reply.json().outputs[0].data[0], 6);
  } finally {
    await s.close();
    await repo.remove();
  }
});

test('the hooks are announced with Triton\'s lines when a model\'s scheduler is built', async () => {
  const repo = await tempRepository([{ from: join(FIXTURES, 'js', 'batch_js') }, { from: join(EXAMPLES, 'sequence_accumulator') }]);
  const p = await spawnServer([`--model-repository=${repo.dir}`, '--log-verbose=1'], { TRITONSERVER_DELAY_SCHEDULER: '2', TRITONSERVER_BACKLOG_DELAY_SCHEDULER: '1' });
  const lines = (text: string): string[] => p.output().split('\n').filter((l) => l.includes(text));
  try {
    // The server serves once its models are loaded, so their schedulers are built. A dynamic batcher: one batcher (Triton: one thread for the model); the sequence batcher: one per instance,
    // and the backlog line once, as information.
    assert.equal(lines('Delaying batcher thread for batch_js until 2 queued requests...').length, 1, p.output());
    assert.equal(lines('Delaying scheduler thread 0 until 2 queued requests...').length, 1, p.output());
    const backlog = lines('Delaying scheduler until 1 backlog queued requests...');
    assert.equal(backlog.length, 1, p.output());
    assert.match(backlog[0]!, /^I/, 'an information line');
  } finally {
    p.child.kill('SIGTERM');
    await p.exited;
    await repo.remove();
  }
});
