import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EXAMPLES } from '../helpers/paths.js';
import { InferenceServer, isNereidError, type Tensor } from '../../src/index.js';
import { createLogger } from '../../src/observability/logger.js';

const quiet = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });

function int32(name: string, values: number[]): Tensor {
  return { name, datatype: 'INT32', shape: [1, values.length], data: new Uint8Array(new Int32Array(values).buffer) };
}

test('the in-process API: create, metadata, infer, statistics, close', async () => {
  const server = await InferenceServer.create({ modelRepositories: [EXAMPLES] }, { logger: quiet });
  try {
    assert.equal(server.isReady(), true);
    assert.equal(server.metadata().name, 'triton');
    const meta = server.modelMetadata('simple');
    assert.deepEqual(meta.inputs.map((i) => i.name).sort(), ['INPUT0', 'INPUT1']);
    const a = Array.from({ length: 16 }, (_, i) => i);
    const res = await server.infer({ model: 'simple', inputs: [int32('INPUT0', a), int32('INPUT1', a)], outputs: [{ name: 'OUTPUT0' }] });
    assert.equal(res.model, 'simple');
    assert.equal(res.version, 1);
    assert.equal(res.outputs.length, 1);
    const out = res.outputs[0]!;
    assert.equal(out.datatype, 'INT32');
    const values = new Int32Array((out.data as Uint8Array).slice().buffer);
    assert.deepEqual([...values], a.map((v) => 2 * v));

    const stats = server.statistics('simple').model_stats[0] as any;
    assert.equal(stats.name, 'simple');
    assert.equal(stats.version, '1');
    assert.ok(stats.inference_count >= 1);
    assert.ok(stats.execution_count >= 1);
    assert.ok(stats.inference_stats.success.count >= 1);
    assert.ok(stats.inference_stats.compute_infer.ns > 0);
    // Triton's fields, then Nereid's own (nereid_ prefixed), which a Triton client ignores.
    assert.deepEqual(Object.keys(stats), ['name', 'version', 'last_inference', 'inference_count', 'execution_count', 'inference_stats', 'response_stats', 'batch_stats', 'memory_usage',
      'nereid_failures', 'nereid_prompt_tokens', 'nereid_generated_tokens', 'nereid_pending_count', 'nereid_inflight_count']);
    assert.deepEqual(Object.keys(stats.inference_stats), ['success', 'fail', 'queue', 'compute_input', 'compute_infer', 'compute_output', 'cache_hit', 'cache_miss']);

    await assert.rejects(server.infer({ model: 'simple', inputs: [int32('INPUT0', a)] }), (e) => isNereidError(e) && e.code === 'INVALID_ARG');
    // Data that does not fill the declared shape is refused before any backend sees it, with Triton's message.
    const short: Tensor = { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: new Uint8Array(60) };
    await assert.rejects(server.infer({ model: 'simple', inputs: [short, int32('INPUT1', a)] }),
      (e) => isNereidError(e) && e.code === 'INVALID_ARG' && e.message === "input byte size mismatch for input 'INPUT0' for model 'simple'. Expected 64, got 60");
    const after = server.statistics('simple').model_stats[0] as any;
    assert.ok(after.inference_stats.fail.count >= 1);
    assert.equal(after.nereid_failures.REJECTED + after.nereid_failures.OTHER + after.nereid_failures.BACKEND + after.nereid_failures.CANCELED, after.inference_stats.fail.count);
    assert.deepEqual([after.nereid_pending_count, after.nereid_inflight_count], [0, 0]);
    await assert.rejects(server.unloadModel('simple'), (e) => isNereidError(e) && e.code === 'UNAVAILABLE');
  } finally {
    await server.close();
  }
  assert.equal(server.isReady(), false);
  await assert.rejects(server.infer({ model: 'simple', inputs: [] }), (e) => isNereidError(e) && e.code === 'UNAVAILABLE');
});

test('explicit mode through the in-process API: load, unload', async () => {
  const server = await InferenceServer.create({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit', loadModels: ['simple'] }, { logger: quiet });
  try {
    assert.equal(server.isModelReady('simple'), true);
    await server.unloadModel('simple');
    assert.equal(server.isModelReady('simple'), false);
    await server.loadModel('simple');
    assert.equal(server.isModelReady('simple'), true);
  } finally {
    await server.close();
  }
});

test('inferTo: a request run at once is answered before inferTo returns, one run at the end of the turn afterwards, each once', async () => {
  const server = await InferenceServer.create({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit', loadModels: ['simple'] }, { logger: quiet });
  try {
    const a = Array.from({ length: 16 }, (_, i) => i);
    const request = { model: 'simple', inputs: [int32('INPUT0', a), int32('INPUT1', a)] };
    const answers: string[] = [];
    const call = (): Promise<void> => new Promise((done) => {
      server.inferTo(request, undefined, (r) => {
        answers.push(`ok ${r.outputs.length}`);
        done();
      }, (e) => {
        answers.push(`error ${String(e)}`);
        done();
      });
      answers.push('returned');
    });
    // A fresh model waits for the end of the loop's turn to run its requests: the answer comes after, and
    // the answers of a turn's requests come after all of the turn's runs (in promise jobs, as a promise's).
    const executions: number[] = [];
    const executed = (): number => (server.statistics('simple').model_stats[0] as { execution_count: number }).execution_count;
    await new Promise<void>((done) => {
      for (let i = 0; i < 2; i++) {
        server.inferTo(request, undefined, () => {
          executions.push(executed());
          if (executions.length === 2) done();
        }, () => done());
      }
    });
    assert.deepEqual(executions, [2, 2]);
    await call();
    assert.deepEqual(answers.splice(0), ['returned', 'ok 2']);
    // One request at a time, turn after turn: the scheduler runs them as they come, and the answer comes first.
    for (let i = 0; i < 80; i++) await call();
    assert.deepEqual(answers.splice(0).slice(-2), ['ok 2', 'returned']);
    // A refused request is refused at once, once.
    server.inferTo({ model: 'simple', inputs: [int32('INPUT0', a)] }, undefined, () => answers.push('ok'), (e) => answers.push(`refused ${(e as Error).message.includes('INPUT1')}`));
    answers.push('returned');
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(answers, ['refused true', 'returned']);
  } finally {
    await server.close();
  }
});
