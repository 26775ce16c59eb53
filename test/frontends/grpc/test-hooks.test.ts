import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import { EXAMPLES } from '../../helpers/paths.js';
import { tempRepository } from '../../helpers/server.js';
import { int32Bytes, int32s, startGrpcTestServer, unary, type GrpcTestServer } from '../../helpers/grpc.js';
import { grpcTestHooks } from '../../../src/frontends/grpc/test-hooks.js';

// Triton's gRPC test hooks (TRITONSERVER_DELAY_GRPC_RESPONSE, TRITONSERVER_DELAY_GRPC_PROCESS), with the server
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
  assert.deepEqual(grpcTestHooks({}), { responseDelayMs: 0, processDelayMs: 0 });
  assert.deepEqual(grpcTestHooks({ TRITONSERVER_DELAY_GRPC_RESPONSE: '2000', TRITONSERVER_DELAY_GRPC_PROCESS: '5000x' }), { responseDelayMs: 2000, processDelayMs: 5000 });
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
