import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { EXAMPLES, FIXTURES } from '../../helpers/paths.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { postJson, request } from '../../helpers/http.js';
import { isNereidError, type InferenceResponse, type Tensor } from '../../../src/index.js';

// Decoupled JavaScript models: zero or more responses then the FINAL flag, read through the in-process
// streaming API (InferenceServer.inferStream); HTTP /infer refuses them as Triton does. repeat_js is
// Triton's repeat example written in JavaScript; stream_js is another test fixture.

const JS = join(FIXTURES, 'js');

const int32 = (name: string, values: number[]): Tensor => ({ name, datatype: 'INT32', shape: [values.length], data: new Uint8Array(new Int32Array(values).buffer) });
const uint32 = (name: string, values: number[]): Tensor => ({ name, datatype: 'UINT32', shape: [values.length], data: new Uint8Array(new Uint32Array(values).buffer) });

function value(r: InferenceResponse, name: string): number {
  const t = r.outputs.find((o) => o.name === name)!;
  const b = (t.data as Uint8Array).slice();
  return t.datatype === 'UINT32' ? new Uint32Array(b.buffer)[0]! : new Int32Array(b.buffer)[0]!;
}

function repeat(s: TestServer, id: string, values: number[], delays: number[], wait: number) {
  return s.server.inferStream({ model: 'repeat_js', id, inputs: [int32('IN', values), uint32('DELAY', delays), uint32('WAIT', [wait])] });
}

async function collect(stream: AsyncIterable<InferenceResponse>): Promise<InferenceResponse[]> {
  const out: InferenceResponse[] = [];
  for await (const r of stream) out.push(r);
  return out;
}

async function withServer(fn: (s: TestServer) => Promise<void>): Promise<void> {
  const s = await startTestServer({ modelRepositories: [EXAMPLES, JS], modelControlMode: 'explicit', loadModels: ['repeat_js', 'stream_js', 'simple'] });
  try {
    await fn(s);
  } finally {
    await s.close();
  }
}

test('repeat_js: one response per IN element with OUT and IDX, then the end; none for IN of shape [0]', async () => {
  await withServer(async (s) => {
    const responses = await collect(repeat(s, 'r1', [100, 101, 102, 103], [0, 10, 0, 5], 0));
    assert.deepEqual(responses.map((r) => [value(r, 'OUT'), value(r, 'IDX')]), [[100, 0], [101, 1], [102, 2], [103, 3]]);
    for (const r of responses) {
      assert.equal(r.model, 'repeat_js');
      assert.equal(r.version, 1);
      assert.equal(r.id, 'r1');
      assert.deepEqual(r.outputs.map((o) => [o.name, o.datatype, o.shape]).sort(), [['IDX', 'UINT32', [1]], ['OUT', 'INT32', [1]]]);
    }
    assert.deepEqual(await collect(repeat(s, 'r0', [], [], 0)), []);

    // Only OUT asked for: IDX is left out of every response.
    const onlyOut = await collect(s.server.inferStream({
      model: 'repeat_js', inputs: [int32('IN', [5, 6]), uint32('DELAY', [0, 0]), uint32('WAIT', [0])], outputs: [{ name: 'OUT' }],
    }));
    assert.deepEqual(onlyOut.map((r) => r.outputs.map((o) => o.name)), [['OUT'], ['OUT']]);

    // IN and DELAY must have the same shape: an error response, as Triton's repeat backend sends.
    await assert.rejects(collect(repeat(s, 'bad', [1, 2], [0], 0)), (e) => isNereidError(e) && e.code === 'INVALID_ARG' && e.message === 'expected IN and DELAY shape to match, got [2] and [1]');

    const stats = s.server.statistics('repeat_js').model_stats[0] as any;
    assert.equal(stats.inference_stats.success.count, 3);
    assert.equal(stats.inference_stats.fail.count, 1);
  });
});

test('repeat_js: WAIT frees the instance while responses are still coming, so requests interleave', async () => {
  await withServer(async (s) => {
    // One instance. A returns from execute at once (WAIT 0) but sends its response after 1 s, so B runs and
    // answers first.
    const order: string[] = [];
    const read = async (name: string, stream: AsyncIterable<InferenceResponse>) => {
      for await (const r of stream) order.push(`${name}${value(r, 'OUT')}`);
      order.push(`${name} end`);
    };
    await Promise.all([read('A', repeat(s, 'A', [1], [1000], 0)), read('B', repeat(s, 'B', [2], [0], 0))]);
    assert.deepEqual(order, ['B2', 'B end', 'A1', 'A end']);

    // Now A holds the instance for 500 ms (WAIT) but answers after 200 ms: B cannot start before A's execute
    // returns, so A's response comes first, and A's stream may end after B's.
    order.length = 0;
    await Promise.all([read('A', repeat(s, 'A', [1], [200], 500)), read('B', repeat(s, 'B', [2], [0], 0))]);
    assert.deepEqual(order.slice(0, 1), ['A1']);
    assert.deepEqual(order.filter((x) => x.startsWith('B')), ['B2', 'B end']);

    // Several requests at once, each with several responses: every stream gets its own, in order.
    const many = await Promise.all([0, 1, 2, 3].map((i) => collect(repeat(s, `m${i}`, [10 * i, 10 * i + 1, 10 * i + 2], [5, 5, 5], 1))));
    many.forEach((responses, i) => assert.deepEqual(responses.map((r) => [r.id, value(r, 'OUT'), value(r, 'IDX')]), [[`m${i}`, 10 * i, 0], [`m${i}`, 10 * i + 1, 1], [`m${i}`, 10 * i + 2, 2]]));
  });
});

test('HTTP /infer on a decoupled model answers 501 with Triton\'s message, before reading the body', async () => {
  await withServer(async (s) => {
    const r = await postJson(`${s.url}/v2/models/repeat_js/infer`, {
      inputs: [
        { name: 'IN', shape: [1], datatype: 'INT32', data: [1] },
        { name: 'DELAY', shape: [1], datatype: 'UINT32', data: [0] },
        { name: 'WAIT', shape: [1], datatype: 'UINT32', data: [0] },
      ],
    });
    assert.equal(r.status, 501);
    assert.deepEqual(r.json(), { error: "HTTP end point doesn't support models with decoupled transaction policy" });
    const garbage = await request(`${s.url}/v2/models/repeat_js/versions/1/infer`, { body: 'not json', headers: { 'Content-Type': 'application/json' } });
    assert.equal(garbage.status, 501);
    assert.equal(garbage.json().error, "HTTP end point doesn't support models with decoupled transaction policy");
    // Metadata and config still work; the policy shows in the config.
    const cfg = (await request(`${s.url}/v2/models/repeat_js/config`)).json();
    assert.deepEqual(cfg.model_transaction_policy, { decoupled: true });
    // The in-process infer() points to inferStream().
    await assert.rejects(s.server.infer({ model: 'repeat_js', inputs: [int32('IN', [1]), uint32('DELAY', [0]), uint32('WAIT', [0])] }),
      (e) => isNereidError(e) && e.code === 'UNSUPPORTED' && /inferStream/.test(e.message));
  });
});

test('inferStream on an ordinary model yields its one response; errors are thrown from the iterator', async () => {
  await withServer(async (s) => {
    const a = Array.from({ length: 16 }, (_, i) => i);
    const t = (name: string): Tensor => ({ name, datatype: 'INT32', shape: [1, 16], data: new Uint8Array(new Int32Array(a).buffer) });
    const responses = await collect(s.server.inferStream({ model: 'simple', inputs: [t('INPUT0'), t('INPUT1')] }));
    assert.equal(responses.length, 1);
    assert.deepEqual(responses[0]!.outputs.map((o) => o.name).sort(), ['OUTPUT0', 'OUTPUT1']);
    await assert.rejects(collect(s.server.inferStream({ model: 'simple', inputs: [t('INPUT0')] })), (e) => isNereidError(e) && e.code === 'INVALID_ARG');
    await assert.rejects(collect(s.server.inferStream({ model: 'nope', inputs: [] })), (e) => isNereidError(e) && /unknown model/.test(e.message));
    await assert.rejects(collect(s.server.inferStream({ model: 'stream_js', inputs: [int32('IN', [1, 2])] })), (e) => isNereidError(e) && e.code === 'INVALID_ARG');
  });
});

test('a decoupled stream: responses before an error are delivered, then the error; leaving early cancels', async () => {
  await withServer(async (s) => {
    const got: number[] = [];
    await assert.rejects(async () => {
      for await (const r of s.server.inferStream({ model: 'stream_js', inputs: [int32('IN', [-3])] })) got.push(value(r, 'OUT'));
    }, (e) => isNereidError(e) && e.code === 'UNAVAILABLE' && e.message === 'stream broke');
    assert.deepEqual(got, [0, 1, 2]);

    // Break after two of many responses: the model sees the request cancelled and stops sending.
    const seen: number[] = [];
    for await (const r of s.server.inferStream({ model: 'stream_js', inputs: [int32('IN', [1000])] })) {
      seen.push(value(r, 'OUT'));
      if (seen.length === 2) break;
    }
    assert.deepEqual(seen, [0, 1]);
    let stoppedAt = -1;
    for (let i = 0; i < 100 && stoppedAt < 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
      const [res] = await collect(s.server.inferStream({ model: 'stream_js', inputs: [int32('IN', [0])] }));
      stoppedAt = value(res!, 'OUT');
    }
    assert.ok(stoppedAt >= 2 && stoppedAt < 1000, `the model stopped after ${stoppedAt} responses`);

    // A client signal that aborts cancels the request too, and ends the stream with CANCELLED.
    const controller = new AbortController();
    const early: number[] = [];
    await assert.rejects(async () => {
      for await (const r of s.server.inferStream({ model: 'stream_js', inputs: [int32('IN', [1000])], signal: controller.signal })) {
        early.push(value(r, 'OUT'));
        if (early.length === 1) controller.abort();
      }
    }, (e) => isNereidError(e) && e.code === 'CANCELLED');
    assert.deepEqual(early, [0]);
  });
});
