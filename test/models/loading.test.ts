import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile, appendFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FIXTURES } from '../helpers/paths.js';
import { startTestServer, tempRepository } from '../helpers/server.js';
import { postJson, request } from '../helpers/http.js';
import { InferenceServer } from '../../src/server/inference-server.js';
import { createLogger } from '../../src/observability/logger.js';

// What happens when models load: warmup, reshape, auto-complete, strict config, the KIND_GPU deviation and the
// schedulers that do not exist yet, through the real server.

test('model_warmup runs before READY; a missing warmup file fails the load naming the file', async () => {
  const s = await startTestServer({ modelRepositories: [join(FIXTURES, 'warmup')], exitOnError: false, strictReadiness: false });
  try {
    for (const m of ['warmup_zero_random', 'warmup_file']) {
      assert.equal((await request(`${s.url}/v2/models/${m}/ready`)).status, 200, m);
      // Warmup runs do not count as inferences (Triton keeps them out of the statistics).
      const stats = (await request(`${s.url}/v2/models/${m}/stats`)).json().model_stats[0];
      assert.equal(stats.inference_count, 0, m);
    }
    const index = (await postJson(`${s.url}/v2/repository/index`, {})).json() as any[];
    const missing = index.find((e) => e.name === 'warmup_missing_file');
    assert.equal(missing.state, 'UNAVAILABLE');
    assert.match(missing.reason, /does_not_exist\.bin/);
  } finally {
    await s.close();
  }
});

test('reshape: clients use the config shapes, the model its own', async () => {
  const s = await startTestServer({ modelRepositories: [join(FIXTURES, 'reshape')] });
  try {
    const t = await postJson(`${s.url}/v2/models/reshape_2x2/infer`, { inputs: [{ name: 'INPUT0', shape: [2, 4], datatype: 'FP32', data: [1, 2, 3, 4, 5, 6, 7, 8] }] });
    assert.equal(t.status, 200, t.body.toString());
    assert.deepEqual(t.json().outputs[0].shape, [2, 4]);
    assert.deepEqual(t.json().outputs[0].data, [1, 3, 2, 4, 5, 7, 6, 8]);
    const sc = await postJson(`${s.url}/v2/models/reshape_scalar/infer`, { inputs: [{ name: 'INPUT0', shape: [3, 1], datatype: 'INT32', data: [1, 2, 3] }] });
    assert.equal(sc.status, 200, sc.body.toString());
    assert.deepEqual(sc.json().outputs[0].shape, [3, 1]);
    assert.deepEqual(sc.json().outputs[0].data, [3, 6, 9]);
    const nb = await postJson(`${s.url}/v2/models/reshape_nobatch/infer`, { inputs: [{ name: 'INPUT0', shape: [2, 3], datatype: 'FP32', data: [0, 1, 2, 3, 4, 5] }] });
    assert.equal(nb.status, 200, nb.body.toString());
    assert.deepEqual(nb.json().outputs[0].shape, [2, 3]);
    assert.deepEqual(nb.json().outputs[0].data, [1, 2, 3, 4, 5, 6]);
  } finally {
    await s.close();
  }
});

test('auto-complete fills configs as Triton\'s onnxruntime backend does', async () => {
  const s = await startTestServer({ modelRepositories: [join(FIXTURES, 'autocomplete')], exitOnError: false, strictReadiness: false });
  try {
    const cfg = async (m: string) => (await request(`${s.url}/v2/models/${m}/config`)).json();
    const batch = await cfg('ac_batch');
    assert.equal(batch.max_batch_size, 4);
    assert.deepEqual(batch.input.map((i: any) => [i.name, i.data_type, i.dims]).sort(), [['INPUT0', 'TYPE_FP32', [4]], ['INPUT1', 'TYPE_INT64', [3]]]);
    assert.ok(batch.dynamic_batching, 'dynamic_batching added');
    const nobatch = await cfg('ac_nobatch');
    assert.equal(nobatch.max_batch_size, 0);
    assert.deepEqual(nobatch.input[0].dims, [2, 3]);
    const scalar = await cfg('ac_scalar_output');
    assert.deepEqual(scalar.output[0].dims, [1]);
    assert.deepEqual(scalar.output[0].reshape, { shape: [] });
    assert.equal((await cfg('ac_output_fixed')).max_batch_size, 0);
    assert.equal((await cfg('ac_mbs_two')).max_batch_size, 2);
    const one = await cfg('ac_mbs_one');
    assert.equal(one.max_batch_size, 1);
    assert.equal(one.dynamic_batching, undefined);
    assert.equal((await cfg('ac_inputs_only')).output.length, 2);
    const index = (await postJson(`${s.url}/v2/repository/index`, {})).json() as any[];
    assert.match(index.find((e) => e.name === 'ac_mbs_nobatch_error').reason, /does not support batching while non-zero max_batch_size is specified/);
    const r = await postJson(`${s.url}/v2/models/ac_batch/infer`, {
      inputs: [{ name: 'INPUT0', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] }, { name: 'INPUT1', shape: [1, 3], datatype: 'INT64', data: [7, 8, 9] }],
    });
    assert.equal(r.status, 200, r.body.toString());
  } finally {
    await s.close();
  }
});

test('--strict-model-config: models without config.pbtxt fail to load, saying why', async () => {
  const s = await startTestServer({ modelRepositories: [join(FIXTURES, 'autocomplete')], strictModelConfig: true, exitOnError: false, strictReadiness: false });
  try {
    const index = (await postJson(`${s.url}/v2/repository/index`, {})).json() as any[];
    const e = index.find((m) => m.name === 'ac_batch');
    assert.equal(e.state, 'UNAVAILABLE');
    assert.match(e.reason, /auto-complete is disabled/);
  } finally {
    await s.close();
  }
});

test('KIND_GPU loads on CPU with a warning; a bare sequence_batching model runs under the sequence batcher', async () => {
  const repo = await tempRepository([{ from: join(FIXTURES, 'versions', 'vmodel'), name: 'gpu_model' }, { from: join(FIXTURES, 'versions', 'vmodel'), name: 'seq_model' }]);
  const logDir = await mkdtemp(join(tmpdir(), 'nereid-log-'));
  const logFile = join(logDir, 'server.log');
  const fix = async (name: string, extra: string) => {
    const p = join(repo.dir, name, 'config.pbtxt');
    await writeFile(p, (await readFile(p, 'utf8')).replace('"vmodel"', `"${name}"`));
    await appendFile(p, extra);
  };
  await fix('gpu_model', '\ninstance_group [ { count: 1 kind: KIND_GPU gpus: [ 0 ] } ]\n');
  await fix('seq_model', '\nsequence_batching { }\n');
  const logger = createLogger({ info: true, warning: true, error: true, verbose: 0, format: 'default', file: logFile });
  const server = await InferenceServer.create({ modelRepositories: [repo.dir], exitOnError: false }, { logger });
  try {
    assert.ok(server.isModelReady('gpu_model'));
    const r = await server.infer({ model: 'gpu_model', inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 1], data: new Uint8Array(new Int32Array([5]).buffer) }] });
    const out = r.outputs[0]!.data as Uint8Array;
    assert.deepEqual([...new Int32Array(out.slice().buffer)], [8]);
    // sequence_batching { } alone: the model loads under the sequence batcher, which wants a correlation id.
    assert.ok(server.isModelReady('seq_model'));
    await assert.rejects(server.infer({ model: 'seq_model', inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 1], data: new Uint8Array(4) }] }), /correlation ID/);
    const ok = await server.infer({ model: 'seq_model', sequenceId: 5, sequenceStart: true, sequenceEnd: true, inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 1], data: new Uint8Array(4) }] });
    assert.equal(ok.outputs.length, 1);
  } finally {
    await server.close();
    await logger.close();
  }
  const log = await readFile(logFile, 'utf8');
  assert.match(log, /^W.*gpu_model.*KIND_GPU.*CPU/m);
  await rm(logDir, { recursive: true, force: true });
  await repo.remove();
});

test('version policies: latest N, all, specific', async () => {
  for (const [policy, ready] of [['{ latest { num_versions: 2 } }', [2, 3]], ['{ all { } }', [1, 2, 3]], ['{ specific { versions: [ 1, 3 ] } }', [1, 3]]] as const) {
    const repo = await tempRepository([{ from: join(FIXTURES, 'versions', 'vmodel') }]);
    await appendFile(join(repo.dir, 'vmodel', 'config.pbtxt'), `\nversion_policy: ${policy}\n`);
    const s = await startTestServer({ modelRepositories: [repo.dir] });
    try {
      for (const v of [1, 2, 3]) {
        const expected = (ready as readonly number[]).includes(v);
        assert.equal((await request(`${s.url}/v2/models/vmodel/versions/${v}/ready`)).status, expected ? 200 : 400, `${policy} version ${v}`);
        if (!expected) continue;
        const r = await postJson(`${s.url}/v2/models/vmodel/versions/${v}/infer`, { inputs: [{ name: 'INPUT0', shape: [1, 1], datatype: 'INT32', data: [10] }] });
        assert.deepEqual(r.json().outputs[0].data, [10 + v]);
      }
      // No version in the path: the highest ready one.
      const r = await postJson(`${s.url}/v2/models/vmodel/infer`, { inputs: [{ name: 'INPUT0', shape: [1, 1], datatype: 'INT32', data: [0] }] });
      assert.equal(r.json().model_version, String(Math.max(...ready)));
    } finally {
      await s.close();
      await repo.remove();
    }
  }
});
