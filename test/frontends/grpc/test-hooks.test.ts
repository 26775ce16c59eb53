import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import { EXAMPLES } from '../../helpers/paths.js';
import { spawnServer, tempRepository } from '../../helpers/server.js';
import { HealthClient, connect, failure, int32Bytes, int32s, startGrpcTestServer, unary, type GrpcTestServer } from '../../helpers/grpc.js';
import { until } from '../../helpers/until.js';
import { grpcTestHooks } from '../../../src/frontends/grpc/test-hooks.js';

// Triton's gRPC test hooks (TRITONSERVER_DELAY_GRPC_*), with the server
// started while they are set, as Triton's L0_decoupled and L0_request_cancellation start tritonserver. Delays
// are checked from below only: a hook that does nothing answers far sooner.

async function serverWith(env: Record<string, string>, dir: string): Promise<GrpcTestServer> {
  const saved = Object.keys(env).map((k) => [k, process.env[k]] as const);
  Object.assign(process.env, env);
  try {
    return await startGrpcTestServer({ modelRepositories: [dir] });
  } finally {
    for (const [k, v] of saved) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

test('the variables are read as Triton reads them (atoi); unset means no delay', () => {
  assert.deepEqual(grpcTestHooks({}), {
    responseDelayMs: 0, processDelayMs: 0, completeDelayMs: 0, notificationDelayMs: 0, enqueueDelayMs: 0, nonInferResponseDelayMs: 0, processEntryDelayMs: 0, answerDelayMs: 0,
  });
  assert.deepEqual(
    grpcTestHooks({
      TRITONSERVER_DELAY_GRPC_RESPONSE: '2000',
      TRITONSERVER_DELAY_GRPC_PROCESS: '5000x',
      TRITONSERVER_DELAY_GRPC_COMPLETE: '2000',
      TRITONSERVER_DELAY_GRPC_NOTIFICATION: '5000',
      TRITONSERVER_DELAY_GRPC_ENQUEUE: '-3',
      TRITONSERVER_SERVER_DELAY_GRPC_RESPONSE_SEC: '2',
      TRITONSERVER_DELAY_GRPC_PROCESS_ENTRY: '1000',
      TRITONSERVER_DELAY_RESPONSE_COMPLETION: '5000',
      TRITONSERVER_DELAY_RESPONSE_COMPLETE_EXEC: '500',
    }),
    {
      responseDelayMs: 2000, processDelayMs: 5000, completeDelayMs: 2000, notificationDelayMs: 5000, enqueueDelayMs: 0, nonInferResponseDelayMs: 2000, processEntryDelayMs: 1000, answerDelayMs: 5500,
    },
  );
});

test('TRITONSERVER_DELAY_GRPC_RESPONSE: each response on a stream is written that much later, all of them, in order', async () => {
  const repo = await tempRepository([{ from: join(EXAMPLES, 'repeat_int32') }, { from: join(EXAMPLES, 'simple') }]);
  const s = await serverWith({ TRITONSERVER_DELAY_GRPC_RESPONSE: '400' }, repo.dir);
  try {
    const call = s.client.ModelStreamInfer();
    const arrived: { out: number; at: number }[] = [];
    const done = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
    call.on('error', () => {});
    call.on('data', (r: any) => {
      const res = r.infer_response;
      const i = res.outputs.findIndex((o: any) => o.name === 'OUT' || o.name === 'OUTPUT0');
      arrived.push({ out: int32s(res.raw_output_contents[i])[0]!, at: performance.now() });
    });
    const t0 = performance.now();
    // Three responses the model sends at once, then an ordinary model's one response.
    call.write({
      model_name: 'repeat_int32', id: 'r',
      inputs: [{ name: 'IN', datatype: 'INT32', shape: [3] }, { name: 'DELAY', datatype: 'UINT32', shape: [3] }, { name: 'WAIT', datatype: 'UINT32', shape: [1] }],
      raw_input_contents: [int32Bytes([10, 20, 30]), Buffer.from(new Uint32Array([0, 0, 0]).buffer), Buffer.from(new Uint32Array([0]).buffer)],
    });
    call.end();
    assert.equal((await done).code, grpc.status.OK);
    assert.deepEqual(arrived.map((a) => a.out), [10, 20, 30]);
    // Written one after another, each after the delay: the last no sooner than three delays after the request.
    const last = arrived[2]!.at - t0;
    assert.ok(last >= 3 * 400 - 50, `the third response came after ${last.toFixed(0)} ms, sooner than three 400 ms delays`);

    const plain = await new Promise<number>((resolve, reject) => {
      const c = s.client.ModelStreamInfer();
      const t = performance.now();
      c.on('error', reject);
      c.on('data', (r: any) => {
        assert.deepEqual(int32s(r.infer_response.raw_output_contents[0]), Array(16).fill(3));
        resolve(performance.now() - t);
      });
      c.write({
        model_name: 'simple', id: 'p',
        inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }],
        raw_input_contents: [int32Bytes(Array(16).fill(2)), int32Bytes(Array(16).fill(1))],
      });
      c.end();
    });
    assert.ok(plain >= 350, `an ordinary model's response came after ${plain.toFixed(0)} ms, before the 400 ms delay`);
  } finally {
    await s.close();
    await repo.remove();
  }
});

test('TRITONSERVER_DELAY_GRPC_PROCESS: ModelInfer starts that much later; a call cancelled meanwhile never reaches the model', async () => {
  const repo = await tempRepository([{ from: join(EXAMPLES, 'simple') }]);
  const s = await serverWith({ TRITONSERVER_DELAY_GRPC_PROCESS: '1500' }, repo.dir);
  const request = {
    model_name: 'simple',
    inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }],
    raw_input_contents: [int32Bytes(Array(16).fill(5)), int32Bytes(Array(16).fill(1))],
  };
  const inferences = async () => Number((await unary(s.client, 'ModelStatistics', { name: 'simple' })).model_stats[0].inference_stats.success.count);
  try {
    const cancelled = new Promise<grpc.ServiceError>((resolve) => {
      const call = s.client.ModelInfer(request, (e: grpc.ServiceError) => resolve(e));
      setTimeout(() => call.cancel(), 300);
    });
    assert.equal((await cancelled).code, grpc.status.CANCELLED);
    await sleep(2000); // past the delay: the cancelled call would have run by now
    assert.equal(await inferences(), 0, 'the cancelled call reached the model');

    const t0 = performance.now();
    const res = await unary(s.client, 'ModelInfer', request);
    const took = performance.now() - t0;
    assert.deepEqual(int32s(res.raw_output_contents[0]), Array(16).fill(6));
    assert.ok(took >= 1450, `answered after ${took.toFixed(0)} ms, before the 1500 ms delay`);
    assert.equal(await inferences(), 1);
  } finally {
    await s.close();
    await repo.remove();
  }
});

test('TRITONSERVER_DELAY_GRPC_COMPLETE: every response arrives, and the stream ends OK only after the delay (L0_grpc_state_cleanup)', async () => {
  const repo = await tempRepository([{ from: join(EXAMPLES, 'repeat_int32') }, { from: join(EXAMPLES, 'simple') }]);
  const s = await serverWith({ TRITONSERVER_DELAY_GRPC_COMPLETE: '1500' }, repo.dir);
  // One request per stream, half-closed with it, as test_decoupled_infer_complete sends it: the responses, then
  // the stream's status; returns the outputs and how long the status came after the request was written. The
  // server's delay starts after the last response, itself after the request arrived, so that span is at least
  // the delay however late a busy machine delivers the responses (measured from the last response as the client
  // saw it, a late delivery shortens the span: 1,346 ms once on a loaded machine).
  const stream = (request: object): Promise<{ outs: number[]; code: number; statusAfterMs: number }> =>
    new Promise((resolve) => {
      const call = s.client.ModelStreamInfer();
      const outs: number[] = [];
      call.on('error', () => {});
      call.on('data', (r: any) => {
        assert.equal(r.error_message, '');
        outs.push(int32s(r.infer_response.raw_output_contents[0])[0]!);
      });
      const sent = performance.now();
      call.on('status', (st: grpc.StatusObject) => resolve({ outs, code: st.code, statusAfterMs: performance.now() - sent }));
      call.write(request);
      call.end();
    });
  try {
    const decoupled = await stream({
      model_name: 'repeat_int32', id: 'r',
      inputs: [{ name: 'IN', datatype: 'INT32', shape: [3] }, { name: 'DELAY', datatype: 'UINT32', shape: [3] }, { name: 'WAIT', datatype: 'UINT32', shape: [1] }],
      raw_input_contents: [int32Bytes([10, 20, 30]), Buffer.from(new Uint32Array([0, 0, 0]).buffer), Buffer.from(new Uint32Array([0]).buffer)],
    });
    assert.deepEqual(decoupled.outs, [10, 20, 30]);
    assert.equal(decoupled.code, grpc.status.OK);
    assert.ok(decoupled.statusAfterMs >= 1490, `the stream ended ${decoupled.statusAfterMs.toFixed(0)} ms after its request, before the 1500 ms delay`);

    const plain = await stream({
      model_name: 'simple', id: 'p',
      inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }],
      raw_input_contents: [int32Bytes(Array(16).fill(2)), int32Bytes(Array(16).fill(1))],
    });
    assert.deepEqual(plain.outs, [3]);
    assert.equal(plain.code, grpc.status.OK);
    assert.ok(plain.statusAfterMs >= 1490, `the stream ended ${plain.statusAfterMs.toFixed(0)} ms after its request, before the 1500 ms delay`);
  } finally {
    await s.close();
    await repo.remove();
  }
});

test('TRITONSERVER_DELAY_GRPC_NOTIFICATION and _ENQUEUE: a cancellation reaches its request late, so queued work cancelled meanwhile still runs; Triton\'s lines are logged', async () => {
  // An identity model that takes 600 ms per execution on one instance: a second call waits behind the first.
  const dir = await slowRepository(600);
  const p = await spawnServer(
    [`--model-repository=${dir}`, '--allow-grpc=true', '--grpc-port=0', '--grpc-address=127.0.0.1', '--log-verbose=1'],
    { TRITONSERVER_DELAY_GRPC_NOTIFICATION: '1500', TRITONSERVER_DELAY_GRPC_ENQUEUE: '1500' },
  );
  const client = await grpcClientOf(p.output);
  const request = { model_name: 'slow', inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1] }], raw_input_contents: [int32Bytes([7])] };
  const successes = async () => Number((await unary(client, 'ModelStatistics', { name: 'slow' })).model_stats[0].inference_stats.success.count);
  const lines = (text: string) => p.output().split('\n').filter((l) => l.includes(text)).length;
  try {
    const first = unary(client, 'ModelInfer', request);
    await sleep(100);
    // Two calls queued behind the first, one unary and one on a stream, both cancelled by their clients while queued.
    const unaryCancelled = new Promise<grpc.ServiceError>((resolve) => {
      const call = client.ModelInfer(request, (e: grpc.ServiceError) => resolve(e));
      setTimeout(() => call.cancel(), 300);
    });
    const streamCancelled = new Promise<number>((resolve) => {
      const call = client.ModelStreamInfer();
      call.on('error', (e: grpc.ServiceError) => resolve(e.code));
      call.write(request);
      setTimeout(() => call.cancel(), 300);
    });
    assert.equal((await unaryCancelled).code, grpc.status.CANCELLED);
    assert.equal(await streamCancelled, grpc.status.CANCELLED);
    assert.deepEqual(int32s((await first).raw_output_contents[0]), [7]);
    // Each cancellation is noticed once, after the notification delay, and reaches its request an enqueue delay
    // later: by then both queued requests have run (without the hooks they would have been dropped unrun).
    await until(() => lines('Cancellation notification received for ModelStreamInferHandler') === 1, 'the stream\'s cancellation to be noticed');
    await until(async () => (await successes()) === 3, 'the cancelled requests to run');
    assert.equal(lines('Cancellation notification received for ModelInferHandler'), 1, p.output());
    assert.equal(lines('Delaying the notification of the cancellation by 1500 ms...'), 2, p.output());
    await until(() => lines('Delaying the enqueue of the cancellation by 1500 ms...') === 2, 'both cancellations to be enqueued');
    await sleep(2000); // past the enqueue delay: the late cancellations reached requests already over
    assert.equal(await successes(), 3);
    assert.deepEqual(int32s((await unary(client, 'ModelInfer', request)).raw_output_contents[0]), [7], 'the server still answers');
  } finally {
    client.close();
    p.child.kill('SIGTERM');
    await p.exited;
    await rm(dir, { recursive: true, force: true });
  }
});

test('TRITONSERVER_SERVER_DELAY_GRPC_RESPONSE_SEC: every RPC but inference answers that many seconds late, so short deadlines pass (L0_client_timeout)', async () => {
  const repo = await tempRepository([{ from: join(EXAMPLES, 'simple') }]);
  const s = await serverWith({ TRITONSERVER_SERVER_DELAY_GRPC_RESPONSE_SEC: '1' }, repo.dir);
  const health = new HealthClient(`127.0.0.1:${s.grpc.port}`, grpc.credentials.createInsecure()) as any;
  const request = {
    model_name: 'simple',
    inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }],
    raw_input_contents: [int32Bytes(Array(16).fill(5)), int32Bytes(Array(16).fill(1))],
  };
  try {
    // A deadline shorter than the delay passes first, for every kind of RPC the hook covers.
    assert.equal((await failure(unary(s.client, 'ServerLive', {}, { deadlineMs: 300 }))).code, grpc.status.DEADLINE_EXCEEDED);
    assert.equal((await failure(unary(s.client, 'ModelMetadata', { name: 'simple' }, { deadlineMs: 300 }))).code, grpc.status.DEADLINE_EXCEEDED);
    assert.equal((await failure(unary(s.client, 'ModelMetadata', { name: 'nope' }, { deadlineMs: 300 }))).code, grpc.status.DEADLINE_EXCEEDED, 'an error answer waits too');
    assert.equal((await failure(unary(health, 'Check', {}, { deadlineMs: 300 }))).code, grpc.status.DEADLINE_EXCEEDED);

    // Without a deadline the answer comes, late; an inference sent after it is not delayed and answers first.
    const order: string[] = [];
    const t0 = performance.now();
    const live = unary(s.client, 'ServerLive', {}).then((r) => {
      order.push('live');
      return { r, took: performance.now() - t0 };
    });
    await sleep(50);
    const infer = unary(s.client, 'ModelInfer', request).then((r) => order.push('infer') && r);
    assert.deepEqual(int32s((await infer).raw_output_contents[0]), Array(16).fill(6));
    const { r, took } = await live;
    assert.deepEqual(r, { live: true });
    assert.deepEqual(order, ['infer', 'live']);
    assert.ok(took >= 950, `ServerLive answered after ${took.toFixed(0)} ms, before the 1 s delay`);
  } finally {
    health.close();
    await s.close();
    await repo.remove();
  }
});

test('TRITONSERVER_DELAY_GRPC_PROCESS_ENTRY and _RESPONSE_COMPLETION / _COMPLETE_EXEC: ModelInfer starts late and answers late; a client may cancel a call whose request is over', async () => {
  const dir = await slowRepository(300);
  const p = await spawnServer(
    [`--model-repository=${dir}`, '--allow-grpc=true', '--grpc-port=0', '--grpc-address=127.0.0.1', '--log-verbose=1'],
    { TRITONSERVER_DELAY_GRPC_PROCESS_ENTRY: '500', TRITONSERVER_DELAY_RESPONSE_COMPLETION: '1000', TRITONSERVER_DELAY_RESPONSE_COMPLETE_EXEC: '1000' },
  );
  const client = await grpcClientOf(p.output);
  const request = { model_name: 'slow', inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1] }], raw_input_contents: [int32Bytes([7])] };
  const lines = (text: string) => p.output().split('\n').filter((l) => l.includes(text)).length;
  try {
    const t0 = performance.now();
    const answered = unary(client, 'ModelInfer', request).then((r) => ({ r, took: performance.now() - t0 }));
    // As test_grpc_async_infer_cancellation_before_finish_*: the client cancels while the answer is held back.
    const cancelled = new Promise<grpc.ServiceError>((resolve, reject) => {
      const call = client.ModelInfer(request, (e: grpc.ServiceError | null) => (e ? resolve(e) : reject(new Error('answered before the cancel'))));
      setTimeout(() => call.cancel(), 1500);
    });
    assert.equal((await cancelled).code, grpc.status.CANCELLED);
    const { r, took } = await answered;
    assert.deepEqual(int32s(r.raw_output_contents[0]), [7]);
    // Entry delay, the execution, then both response delays: far more than the execution alone.
    assert.ok(took >= 500 + 300 + 2000 - 100, `answered after ${took.toFixed(0)} ms, sooner than the delays`);
    await until(() => lines('Cancellation notification received for ModelInferHandler') === 1, 'the cancellation to be noticed');
    assert.ok(lines('Delaying the entry of Process by 500 ms...') >= 2, p.output());
    assert.ok(lines('Delaying the completion of the response by 2000 ms...') >= 1, p.output());
    await sleep(2500); // the held answer of the cancelled call is over too
    assert.equal(lines('Cancellation notification received for'), 1, p.output());
    assert.deepEqual(int32s((await unary(client, 'ModelInfer', request)).raw_output_contents[0]), [7], 'the server still answers');
  } finally {
    client.close();
    p.child.kill('SIGTERM');
    await p.exited;
    await rm(dir, { recursive: true, force: true });
  }
});

/** A repository with `slow`: an identity model (INT32, any shape) whose every execution takes `delayMs`, on one instance. */
async function slowRepository(delayMs: number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'nereid-grpc-hooks-'));
  await mkdir(join(dir, 'slow', '1'), { recursive: true });
  await writeFile(join(dir, 'slow', 'config.pbtxt'), [
    'name: "slow"', 'backend: "identity"', 'max_batch_size: 0', 'instance_group [{ count: 1, kind: KIND_CPU }]',
    'input [{ name: "INPUT0", data_type: TYPE_INT32, dims: [ -1 ] }]', 'output [{ name: "OUTPUT0", data_type: TYPE_INT32, dims: [ -1 ] }]',
    `parameters [{ key: "execute_delay_ms", value: { string_value: "${delayMs}" } }]`,
  ].join('\n'));
  return dir;
}

/** A client of a spawned server's gRPC frontend, once it reports its port. */
async function grpcClientOf(output: () => string): Promise<ReturnType<typeof connect>> {
  let port = 0;
  await until(() => {
    const m = /Started GRPCInferenceService at [^:]+:(\d+)/.exec(output());
    if (m) port = Number(m[1]);
    return port > 0;
  }, 'the gRPC frontend to start');
  return connect(port);
}
