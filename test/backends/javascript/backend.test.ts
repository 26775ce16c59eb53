import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { FIXTURES } from '../../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../../helpers/server.js';
import { binaryBody, postJson, request, splitBinary } from '../../helpers/http.js';
import { isNereidError, type Tensor } from '../../../src/index.js';

// The JavaScript backend through the real server: Triton's Python model shape (initialize / execute /
// finalize, nereid/backend-utils), instances in the server's worker threads, errors per request and per batch,
// a crashed worker replaced, initialize failures, finalize at unload and auto-complete.

const JS = join(FIXTURES, 'js');

function int32(name: string, values: number[], shape = [values.length]): Tensor {
  return { name, datatype: 'INT32', shape, data: new Uint8Array(new Int32Array(values).buffer) };
}

const int32s = (t: Tensor): number[] => [...new Int32Array((t.data as Uint8Array).slice().buffer)];

async function withServer(models: string[], fn: (s: TestServer) => Promise<void>, extra: object = {}): Promise<void> {
  const s = await startTestServer({ modelRepositories: [JS], modelControlMode: 'explicit', loadModels: models, ...extra });
  try {
    await fn(s);
  } finally {
    await s.close();
  }
}

test('add_sub in JavaScript answers JSON and binary requests like the ONNX one', async () => {
  await withServer(['add_sub'], async (s) => {
    const a = [1, 2, 3, 4, 5, 6, 7, 8];
    const b = [0.5, 0.5, 0.5, 0.5, 2, 2, 2, 2];
    const r = await postJson(`${s.url}/v2/models/add_sub/infer`, {
      inputs: [
        { name: 'INPUT0', shape: [2, 4], datatype: 'FP32', data: a },
        { name: 'INPUT1', shape: [2, 4], datatype: 'FP32', data: b },
      ],
    });
    assert.equal(r.status, 200, r.body.toString());
    const body = r.json();
    assert.equal(body.model_name, 'add_sub');
    assert.equal(body.model_version, '1');
    const byName = new Map(body.outputs.map((o: any) => [o.name, o]));
    assert.deepEqual((byName.get('OUTPUT0') as any).shape, [2, 4]);
    assert.equal((byName.get('OUTPUT0') as any).datatype, 'FP32');
    assert.deepEqual((byName.get('OUTPUT0') as any).data, a.map((v, i) => v + b[i]!));
    assert.deepEqual((byName.get('OUTPUT1') as any).data, a.map((v, i) => v - b[i]!));

    // Binary in, binary out, only OUTPUT1 asked for.
    const bin = (v: number[]) => new Uint8Array(new Float32Array(v).buffer);
    const { body: payload, headers } = binaryBody({
      inputs: [
        { name: 'INPUT0', shape: [1, 4], datatype: 'FP32', parameters: { binary_data_size: 16 } },
        { name: 'INPUT1', shape: [1, 4], datatype: 'FP32', parameters: { binary_data_size: 16 } },
      ],
      outputs: [{ name: 'OUTPUT1', parameters: { binary_data: true } }],
    }, [bin([10, 20, 30, 40]), bin([1, 2, 3, 4])]);
    const rb = await request(`${s.url}/v2/models/add_sub/infer`, { body: payload, headers });
    assert.equal(rb.status, 200, rb.body.toString());
    const split = splitBinary(rb);
    assert.deepEqual(split.header.outputs.map((o: any) => o.name), ['OUTPUT1']);
    const out1 = split.blobs.get('OUTPUT1')!;
    assert.deepEqual([...new Float32Array(out1.buffer.slice(out1.byteOffset, out1.byteOffset + out1.byteLength))], [9, 18, 27, 36]);
  });
});

test('BYTES and INT64 tensors both ways; a response may go through the sender instead of the return value', async () => {
  await withServer(['strings_js'], async (s) => {
    for (const viaSender of [false, true]) {
      const r = await postJson(`${s.url}/v2/models/strings_js/infer`, {
        inputs: [{ name: 'TEXT', shape: [3], datatype: 'BYTES', data: ['abc', '', 'grüße'] }],
        ...(viaSender ? { parameters: { via_sender: true } } : {}),
      });
      assert.equal(r.status, 200, r.body.toString());
      const outs = new Map(r.json().outputs.map((o: any) => [o.name, o]));
      assert.deepEqual(outs.get('UPPER'), { name: 'UPPER', datatype: 'BYTES', shape: [3], data: ['ABC', '', 'GRÜSSE'] });
      assert.deepEqual(outs.get('LENGTHS'), { name: 'LENGTHS', datatype: 'INT64', shape: [3], data: [3, 0, 7] });
    }
  });
});

test('the model sees initialize args as Triton gives them and the request fields, sequence ones included', async () => {
  await withServer(['inspect'], async (s) => {
    const res = await s.server.infer({
      model: 'inspect', id: 'req-7', inputs: [int32('IN', [1, 2, 3])],
      parameters: { colour: 'blue', big: 9007199254740993n, on: true },
      sequenceId: 12345678901234567890n, sequenceStart: true, sequenceEnd: false, timeoutUs: 5000,
    });
    const info = JSON.parse(Buffer.from((res.outputs.find((o) => o.name === 'INFO')!.data as Uint8Array[])[0]!).toString());
    assert.deepEqual(Object.keys(info.args).sort(), [
      'model_config', 'model_instance_device_id', 'model_instance_kind', 'model_instance_name', 'model_name', 'model_repository', 'model_version',
    ]);
    assert.equal(info.args.model_name, 'inspect');
    assert.equal(info.args.model_version, '1');
    assert.equal(info.args.model_instance_kind, 'CPU');
    assert.equal(info.args.model_instance_device_id, '0');
    assert.equal(info.args.model_instance_name, 'inspect_0');
    assert.equal(info.args.model_repository, join(JS, 'inspect'));
    assert.equal(info.modelDir, join(JS, 'inspect'));
    const config = JSON.parse(info.args.model_config);
    assert.equal(config.name, 'inspect');
    assert.equal(config.backend, 'javascript');
    assert.deepEqual(config.output.map((o: any) => o.name), ['SUM', 'INFO']);
    assert.equal(info.requestId, 'req-7');
    assert.equal(info.correlationId, '12345678901234567890');
    assert.equal(info.correlationIdType, 'bigint');
    assert.equal(info.flags, 1);
    assert.equal(info.timeout, 5000);
    assert.deepEqual(info.parameters, { colour: 'blue', big: 9007199254740993, on: true });
    assert.deepEqual(info.requestedOutputNames, ['SUM', 'INFO']);
    assert.equal(info.inputType, 'Int32Array');
    assert.deepEqual(int32s(res.outputs.find((o) => o.name === 'SUM')!), [6]);
    assert.deepEqual(res.parameters, { executes: 1, model: 'inspect' });

    // Only SUM asked for: INFO is left out, as Triton prunes outputs nobody asked for. State is per instance.
    const only = await s.server.infer({ model: 'inspect', inputs: [int32('IN', [4])], outputs: [{ name: 'SUM' }], sequenceId: 'abc', sequenceEnd: true });
    assert.deepEqual(only.outputs.map((o) => o.name), ['SUM']);
    assert.equal(only.parameters?.executes, 2);
    const http = await postJson(`${s.url}/v2/models/inspect/infer`, {
      inputs: [{ name: 'IN', shape: [1], datatype: 'INT32', data: [5] }],
      parameters: { sequence_id: 'corr-1', sequence_start: true, sequence_end: true },
    });
    assert.equal(http.status, 200, http.body.toString());
    const body = http.json();
    assert.deepEqual(body.parameters, { executes: 3, model: 'inspect' });
    const httpInfo = JSON.parse(body.outputs.find((o: any) => o.name === 'INFO').data[0]);
    assert.equal(httpInfo.correlationId, 'corr-1');
    assert.equal(httpInfo.flags, 3);
  });
});

test('an exception in execute fails that execution\'s requests with its message; an error response fails only its request', async () => {
  await withServer(['faulty', 'batch_js'], async (s) => {
    const infer = (model: string, v: number, shape = [1]) => postJson(`${s.url}/v2/models/${model}/infer`, { inputs: [{ name: 'IN', shape, datatype: 'INT32', data: [v] }] });
    const bad = await infer('faulty', -5);
    assert.equal(bad.status, 500);
    assert.equal(bad.json().error, "Failed to process the request(s) for model 'faulty', message: Error: negative input -5");
    const unlucky = await infer('faulty', 13);
    assert.equal(unlucky.status, 400);
    assert.equal(unlucky.json().error, 'unlucky 13');
    const ok = await infer('faulty', 21);
    assert.equal(ok.status, 200, ok.body.toString());
    assert.deepEqual(ok.json().outputs[0].data, [42]);

    // Three requests arrive together, so the dynamic batcher gives execute() all three at once.
    const [a, b, c] = await Promise.all([infer('batch_js', 1, [1, 1]), infer('batch_js', 13, [1, 1]), infer('batch_js', 2, [1, 1])]);
    assert.equal(a.status, 200, a.body.toString());
    assert.deepEqual(a.json().outputs.map((o: any) => [o.name, o.data[0]]), [['OUT', 2], ['BATCH', 3]]);
    assert.equal(b.status, 400);
    assert.equal(b.json().error, 'unlucky 13');
    assert.deepEqual(c.json().outputs.map((o: any) => [o.name, o.data[0]]), [['OUT', 4], ['BATCH', 3]]);
    const all = await Promise.all([infer('batch_js', 1, [1, 1]), infer('batch_js', -1, [1, 1]), infer('batch_js', 2, [1, 1])]);
    for (const r of all) {
      assert.equal(r.status, 500);
      assert.equal(r.json().error, "Failed to process the request(s) for model 'batch_js', message: Error: negative input -1");
    }
    const stats = (await request(`${s.url}/v2/models/batch_js/stats`)).json().model_stats[0];
    assert.equal(stats.inference_stats.success.count, 2);
    assert.equal(stats.inference_stats.fail.count, 4);
    assert.equal(stats.execution_count, 2);
  });
});

test('a worker that dies fails its requests in flight and is started again, with fresh state', async () => {
  await withServer(['crashy'], async (s) => {
    const run = (v: number) => s.server.infer({ model: 'crashy', inputs: [int32('IN', [v])] });
    assert.deepEqual(int32s((await run(0)).outputs[0]!), [1]);
    assert.deepEqual(int32s((await run(0)).outputs[0]!), [2]);
    await assert.rejects(run(-1), (e) => isNereidError(e) && e.code === 'INTERNAL' && /crashy_0.*worker thread stopped \(exit code 3\)/.test(e.message));
    // The next request waits for the new worker; the model object is new, so its count starts again.
    assert.deepEqual(int32s((await run(0)).outputs[0]!), [1]);
    await assert.rejects(run(-2), (e) => isNereidError(e) && /worker thread stopped \(Error: thrown from a timer\)/.test(e.message));
    assert.deepEqual(int32s((await run(0)).outputs[0]!), [1]);
    assert.equal(s.server.isModelReady('crashy'), true);
  });
});

test('async execute: awaited; two instances run two requests at once, one instance in turn', async () => {
  await withServer(['async_model'], async (s) => {
    const order: number[] = [];
    const run = (ms: number) => s.server.infer({ model: 'async_model', inputs: [int32('IN', [ms])] }).then((r) => {
      order.push(int32s(r.outputs[0]!)[0]!);
    });
    // With count 2 the short request overtakes the long one that started first.
    await Promise.all([run(400), run(1)]);
    assert.deepEqual(order, [1, 400]);
  });
  const repo = await tempRepository([{ from: join(JS, 'async_model') }]);
  try {
    const { writeFile, readFile } = await import('node:fs/promises');
    const cfg = join(repo.dir, 'async_model', 'config.pbtxt');
    await writeFile(cfg, (await readFile(cfg, 'utf8')).replace('count: 2', 'count: 1'));
    const s = await startTestServer({ modelRepositories: [repo.dir] });
    try {
      const order: number[] = [];
      const run = (ms: number) => s.server.infer({ model: 'async_model', inputs: [int32('IN', [ms])] }).then((r) => {
        order.push(int32s(r.outputs[0]!)[0]!);
      });
      const first = run(200);
      await new Promise((r) => setTimeout(r, 20));
      await Promise.all([first, run(1)]);
      assert.deepEqual(order, [200, 1]);
    } finally {
      await s.close();
    }
  } finally {
    await repo.remove();
  }
});

test('initialize() failing leaves the model UNAVAILABLE with the exception\'s text', async () => {
  const s = await startTestServer({ modelRepositories: [JS], modelControlMode: 'explicit' });
  try {
    const load = await postJson(`${s.url}/v2/repository/models/init_fail/load`, {});
    assert.equal(load.status, 400);
    assert.match(load.json().error, /TritonModelException: weights file for init_fail is missing/);
    const index = (await postJson(`${s.url}/v2/repository/index`, {})).json() as any[];
    const entry = index.find((e) => e.name === 'init_fail');
    assert.equal(entry.state, 'UNAVAILABLE');
    assert.match(entry.reason, /initialize\(\) of model instance 'init_fail_0' failed: TritonModelException: weights file for init_fail is missing/);
    assert.equal((await request(`${s.url}/v2/models/init_fail/ready`)).status, 400);
  } finally {
    await s.close();
  }
});

test('finalize() runs in every instance when the model unloads', async () => {
  const repo = await tempRepository([{ from: join(JS, 'finalize_marker') }]);
  try {
    const s = await startTestServer({ modelRepositories: [repo.dir], modelControlMode: 'explicit', loadModels: ['finalize_marker'] });
    try {
      const r = await s.server.infer({ model: 'finalize_marker', inputs: [int32('IN', [7])] });
      assert.deepEqual(int32s(r.outputs[0]!), [7]);
      const dir = join(repo.dir, 'finalize_marker');
      assert.deepEqual((await readdir(dir)).filter((f) => f.startsWith('finalized')), []);
      await s.server.unloadModel('finalize_marker');
      assert.deepEqual((await readdir(dir)).filter((f) => f.startsWith('finalized')).sort(), ['finalized-finalize_marker_0_0.txt', 'finalized-finalize_marker_0_1.txt']);
    } finally {
      await s.close();
    }
  } finally {
    await repo.remove();
  }
});

test('a static autoComplete fills in the config, as Python\'s auto_complete_config', async () => {
  await withServer(['auto_js'], async (s) => {
    const cfg = (await request(`${s.url}/v2/models/auto_js/config`)).json();
    assert.equal(cfg.max_batch_size, 4);
    assert.deepEqual(cfg.input.map((i: any) => [i.name, i.data_type, i.dims]), [['X', 'TYPE_FP32', [2]]]);
    assert.deepEqual(cfg.output.map((o: any) => [o.name, o.data_type, o.dims]), [['Y', 'TYPE_FP32', [2]]]);
    assert.ok(cfg.dynamic_batching);
    const r = await postJson(`${s.url}/v2/models/auto_js/infer`, { inputs: [{ name: 'X', shape: [1, 2], datatype: 'FP32', data: [1, 2] }] });
    assert.equal(r.status, 200, r.body.toString());
    assert.deepEqual(r.json().outputs[0].data, [2, 3]);
  });
});

// The JavaScript backend offers the Python backend's API, so its refusals use python_backend's words
// (pb_stub.cc ProcessReturnedResponses, response_sender.cc; Triton's L0_backend_python response_sender tests).
test('a model that answers wrongly is refused in the Python backend\'s words', async () => {
  await withServer(['misbehaving'], async (s) => {
    const infer = async (v: number): Promise<string> => {
      const r = await postJson(`${s.url}/v2/models/misbehaving/infer`, { inputs: [{ name: 'IN', shape: [1], datatype: 'INT32', data: [v] }] });
      return r.status === 200 ? 'ok' : String(r.json().error);
    };
    assert.match(await infer(1), /message: Expected a list in the execute return, found type 'Object'\./);
    assert.match(await infer(2), /Number of InferenceResponse objects do not match the number of InferenceRequest objects\. InferenceRequest\(s\) size is:1, and InferenceResponse\(s\) size is:2/);
    assert.match(await infer(3), /Expected an 'InferenceResponse' object in the execute function return list, found type 'number'\./);
    assert.match(await infer(4), /Unable to send response\. Non-decoupled model cannot send more than one response\./);
    assert.match(await infer(5), /Unable to send response\. Non-decoupled model cannot send complete final before sending a response\./);
    assert.match(await infer(6), /Inference Response object must be provided when the response flags is set to zero\./);
    assert.equal(await infer(7), 'ok');
  });
});
