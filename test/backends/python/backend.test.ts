import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { readFile, writeFile } from 'node:fs/promises';
import { spawnServer, startTestServer, tempRepository, type TestServer } from '../../helpers/server.js';
import { postJson } from '../../helpers/http.js';
import { until } from '../../helpers/until.js';
import { isNereidError } from '../../../src/index.js';
import { PYTHON_EXAMPLES, PYTHON_FIXTURES, fp32, fp32s, int32, int32s, output, pythonSkip, strings, text } from './helpers.js';

// The Python backend through the real server with Debian's python3 and numpy: Triton's model.py files
// (initialize / execute / finalize with triton_python_backend_utils), one stub process per instance, tensors
// in shared memory, errors per request and per batch, a crashed or hung stub replaced, a failing initialize.

const skip = pythonSkip();

async function withServer(repos: string[], models: string[], fn: (s: TestServer) => Promise<void>): Promise<void> {
  const s = await startTestServer({ modelRepositories: repos, modelControlMode: 'explicit', loadModels: models });
  try {
    await fn(s);
  } finally {
    await s.close();
  }
}

const shmObjects = (): string[] => readdirSync('/dev/shm').filter((n) => n.startsWith(`nereid_python_${process.pid}_`));

test("Triton's add_sub model.py answers over HTTP and in process; its regions go at unload", { skip }, async () => {
  await withServer([PYTHON_EXAMPLES], ['add_sub'], async (s) => {
    const r = await postJson(`${s.url}/v2/models/add_sub/infer`, {
      inputs: [
        { name: 'INPUT0', shape: [4], datatype: 'FP32', data: [1, 2, 3, 4] },
        { name: 'INPUT1', shape: [4], datatype: 'FP32', data: [0.5, 0.5, 2, 2] },
      ],
    });
    assert.equal(r.status, 200, r.body.toString());
    const outs = new Map(r.json().outputs.map((o: any) => [o.name, o]));
    assert.deepEqual(outs.get('OUTPUT0'), { name: 'OUTPUT0', datatype: 'FP32', shape: [4], data: [1.5, 2.5, 5, 6] });
    assert.deepEqual((outs.get('OUTPUT1') as any).data, [0.5, 1.5, 1, 2]);

    // Many requests in a row reuse the same blocks; only the requested output comes back.
    for (let i = 0; i < 50; i++) {
      const res = await s.server.infer({ model: 'add_sub', inputs: [fp32('INPUT0', [i, i, i, i]), fp32('INPUT1', [1, 2, 3, 4])], outputs: [{ name: 'OUTPUT1' }] });
      assert.deepEqual(res.outputs.map((o) => o.name), ['OUTPUT1']);
      assert.deepEqual(fp32s(res.outputs[0]!), [i - 1, i - 2, i - 3, i - 4]);
    }
    assert.ok(shmObjects().length > 0, 'the instance keeps shared-memory regions while loaded');
    await s.server.unloadModel('add_sub');
    assert.deepEqual(shmObjects(), []);
  });
});

test('BYTES tensors both ways, request id and parameters reach the model, a response through the sender', { skip }, async () => {
  await withServer([PYTHON_FIXTURES], ['strings'], async (s) => {
    for (const viaSender of [false, true]) {
      const r = await s.server.infer({
        model: 'strings', id: 'req-7', inputs: [text('TEXT', ['abc', '', 'grüße'])],
        parameters: { via_sender: viaSender, n: 3 },
      });
      assert.deepEqual(strings(output(r.outputs, 'UPPER')), ['ABC', '', 'GRÜSSE']);
      const lengths = output(r.outputs, 'LENGTHS');
      assert.equal(lengths.datatype, 'INT64');
      assert.deepEqual([...new BigInt64Array((lengths.data as Uint8Array).slice().buffer)], [3n, 0n, 7n]);
      assert.deepEqual(strings(output(r.outputs, 'INFO')), ['req-7', JSON.stringify({ n: 3, via_sender: viaSender }).replace(/,/g, ', ').replace(/:/g, ': ')]);
    }
  });
});

test('a large tensor grows the regions; an identity model answers from the input region itself', { skip }, async () => {
  await withServer([PYTHON_FIXTURES], ['identity_fp32'], async (s) => {
    for (const n of [10, 3 * 1024 * 1024, 100]) {
      const values = Array.from({ length: n }, (_, i) => i % 1000);
      const r = await s.server.infer({ model: 'identity_fp32', inputs: [fp32('INPUT0', values)] });
      const out = output(r.outputs, 'OUTPUT0');
      assert.deepEqual(out.shape, [n]);
      const got = new Float32Array((out.data as Uint8Array).slice().buffer);
      assert.equal(got.length, n);
      assert.equal(got[n - 1], (n - 1) % 1000);
    }
  });
});

test('errors: one request\'s error response, an exception failing its batch with the Python message', { skip }, async () => {
  await withServer([PYTHON_FIXTURES], ['faulty'], async (s) => {
    const ok = await s.server.infer({ model: 'faulty', inputs: [int32('IN', [21])] });
    assert.deepEqual(int32s(output(ok.outputs, 'OUT')), [42]);

    await assert.rejects(s.server.infer({ model: 'faulty', inputs: [int32('IN', [-1])] }), (e: unknown) => {
      assert.ok(isNereidError(e));
      assert.equal(e.code, 'INVALID_ARG');
      assert.equal(e.message, 'negative input');
      return true;
    });
    await assert.rejects(s.server.infer({ model: 'faulty', inputs: [int32('IN', [-2])] }), (e: unknown) => {
      assert.ok(isNereidError(e));
      assert.match(e.message, /^Failed to process the request\(s\) for model 'faulty', message: ValueError: bad value -2/);
      assert.match(e.message, /model\.py\(\d+\): check/);
      return true;
    });
    // Over HTTP the same error answers with the message.
    const r = await postJson(`${s.url}/v2/models/faulty/infer`, { inputs: [{ name: 'IN', shape: [1], datatype: 'INT32', data: [-2] }] });
    assert.equal(r.status, 500);
    assert.match(r.json().error, /ValueError: bad value -2/);
    const again = await s.server.infer({ model: 'faulty', inputs: [int32('IN', [1])] });
    assert.deepEqual(int32s(output(again.outputs, 'OUT')), [2]);
  });
});

test('a stub that dies fails its requests at once and is started again', { skip }, async () => {
  await withServer([PYTHON_FIXTURES], ['faulty'], async (s) => {
    const before = int32s(output((await s.server.infer({ model: 'faulty', inputs: [int32('IN', [1])] })).outputs, 'PID'))[0];
    // The model's execute timeout (1.5 s) would fail it with "did not finish within": the error names the exit.
    await assert.rejects(s.server.infer({ model: 'faulty', inputs: [int32('IN', [-3])] }), /its Python stub stopped \(exit code 3\)/);
    assert.equal(s.server.isModelReady('faulty'), false, 'not ready while its stub starts again');
    const after = await s.server.infer({ model: 'faulty', inputs: [int32('IN', [5])] });
    assert.deepEqual(int32s(output(after.outputs, 'OUT')), [10]);
    assert.notEqual(int32s(output(after.outputs, 'PID'))[0], before);
    assert.ok(s.server.isModelReady('faulty'));
  });
});

test('a hung execute past the model\'s NEREID_EXECUTE_TIMEOUT_MS fails, the stub is killed and restarted', { skip }, async () => {
  await withServer([PYTHON_FIXTURES], ['faulty'], async (s) => {
    const t0 = Date.now();
    await assert.rejects(s.server.infer({ model: 'faulty', inputs: [int32('IN', [-4])] }), /did not finish within 1500 ms/);
    const waited = Date.now() - t0;
    // Not 1500: a timer starts from the event loop's cached time, which a busy loop leaves a little behind the clock.
    assert.ok(waited >= 1450, `failed after ${waited} ms, before the timeout`);
    const after = await s.server.infer({ model: 'faulty', inputs: [int32('IN', [4])] });
    assert.deepEqual(int32s(output(after.outputs, 'OUT')), [8]);
  });
});

test('an execution waiting in the stub behind another: the execute timeout counts from its start, the wait is queue time', { skip }, async () => {
  await withServer([PYTHON_FIXTURES], ['faulty'], async (s) => {
    // Both go to the stub at once and run one after the other (1.8 s in all, past the 1.5 s timeout, which
    // each execution only starts when the stub starts it).
    // Lower bounds only (sleeps are never short); the upper side is a relation between figures of one run.
    const both = await Promise.all([5, 6].map(() => s.server.infer({ model: 'faulty', inputs: [int32('IN', [-5])] })));
    for (const r of both) assert.deepEqual(int32s(output(r.outputs, 'OUT')), [10]);
    const st = (s.server.statistics('faulty').model_stats[0] as any).inference_stats;
    const ms = (k: string): number => Number(st[k].ns) / 1e6;
    // The second waits for the first's 0.9 s less the moments between their arrivals at the stub: most of it.
    assert.ok(ms('queue') >= 700, `the second one's wait is queue time (${ms('queue')} ms)`);
    assert.ok(ms('compute_infer') >= 1800, `compute infer is the two executions (${ms('compute_infer')} ms)`);
    // Counted once: queue and compute infer add up to no more than the requests' own durations (the 0.9 s wait
    // counted as queue and again as compute would not fit).
    const parts = ms('queue') + ms('compute_infer');
    assert.ok(parts <= ms('success'), `queue + compute infer ${parts} ms exceed the requests' ${ms('success')} ms`);
  });
});

test('a stub that dies with an execution waiting behind the one it ran: that one runs on the next stub', { skip }, async () => {
  await withServer([PYTHON_FIXTURES], ['faulty'], async (s) => {
    const before = int32s(output((await s.server.infer({ model: 'faulty', inputs: [int32('IN', [1])] })).outputs, 'PID'))[0];
    const [crashed, waited] = await Promise.allSettled([
      s.server.infer({ model: 'faulty', inputs: [int32('IN', [-3])] }),
      s.server.infer({ model: 'faulty', inputs: [int32('IN', [7])] }),
    ]);
    assert.equal(crashed.status, 'rejected');
    assert.match(String((crashed as PromiseRejectedResult).reason), /its Python stub stopped \(exit code 3\)/);
    assert.equal(waited.status, 'fulfilled', String((waited as PromiseRejectedResult).reason));
    const r = (waited as PromiseFulfilledResult<Awaited<ReturnType<typeof s.server.infer>>>).value;
    assert.deepEqual(int32s(output(r.outputs, 'OUT')), [14]);
    assert.notEqual(int32s(output(r.outputs, 'PID'))[0], before, 'answered by the restarted stub');
  });
});

test('a request cancelled while it waits in the stub is answered CANCELLED at once and never runs', { skip }, async () => {
  await withServer([PYTHON_FIXTURES], ['faulty'], async (s) => {
    const order: string[] = [];
    const running = s.server.infer({ model: 'faulty', inputs: [int32('IN', [-5])] }).finally(() => order.push('running'));
    const ac = new AbortController();
    const waiting = s.server.infer({ model: 'faulty', inputs: [int32('IN', [7])], signal: ac.signal }).finally(() => order.push('cancelled'));
    setTimeout(() => ac.abort(), 100);
    await assert.rejects(waiting, (e: unknown) => isNereidError(e) && e.code === 'CANCELLED');
    assert.deepEqual(int32s(output((await running).outputs, 'OUT')), [10]);
    assert.deepEqual(order, ['cancelled', 'running'], 'answered before the running execution ended');
    // The stub skipped the cancelled execution and serves the next request.
    assert.deepEqual(int32s(output((await s.server.infer({ model: 'faulty', inputs: [int32('IN', [3])] })).outputs, 'OUT')), [6]);
    const stats = s.server.statistics('faulty').model_stats[0] as any;
    assert.equal(Number(stats.execution_count), 2, 'the cancelled request never executed');
  });
});

test('a model with two instances: a request waits for a free instance, never behind a busy one', { skip }, async () => {
  const repo = await tempRepository([{ from: join(PYTHON_FIXTURES, 'faulty'), name: 'faulty2' }]);
  try {
    const config = join(repo.dir, 'faulty2', 'config.pbtxt');
    const text = (await readFile(config, 'utf8')).replace('name: "faulty"', 'name: "faulty2"');
    await writeFile(config, `${text}\ninstance_group [ { count: 2 kind: KIND_CPU } ]\n`);
    await withServer([repo.dir], ['faulty2'], async (s) => {
      const done: string[] = [];
      const slow = s.server.infer({ model: 'faulty2', inputs: [int32('IN', [-5])] }).then(() => done.push('slow'));
      const quick = [1, 2, 3].map((v) => s.server.infer({ model: 'faulty2', inputs: [int32('IN', [v])] }).then(() => done.push(`quick${v}`)));
      await Promise.all([slow, ...quick]);
      assert.equal(done.at(-1), 'slow', `the quick ones ran on the free instance while the slow one ran (${done.join(', ')})`);
    });
  } finally {
    await repo.remove();
  }
});

test('a server killed while a stub hangs in execute: the stub notices, removes the regions and exits', { skip }, async () => {
  const repo = await tempRepository([{ from: join(PYTHON_FIXTURES, 'faulty') }]);
  const config = join(repo.dir, 'faulty', 'config.pbtxt');
  // No execute timeout: nothing but the server's death ends the hung execute.
  await writeFile(config, (await readFile(config, 'utf8')).replace(/^parameters .*$/m, ''));
  const server = await spawnServer([`--model-repository=${repo.dir}`, '--model-control-mode=explicit', '--load-model=faulty']);
  try {
    const first = await postJson(`${server.url}/v2/models/faulty/infer`, { inputs: [{ name: 'IN', shape: [1], datatype: 'INT32', data: [1] }] });
    assert.equal(first.status, 200, first.body.toString());
    const stubPid = first.json().outputs.find((o: any) => o.name === 'PID').data[0] as number;
    void postJson(`${server.url}/v2/models/faulty/infer`, { inputs: [{ name: 'IN', shape: [1], datatype: 'INT32', data: [-4] }] }).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 300));
    const serverPid = server.child.pid!;
    server.child.kill('SIGKILL');
    await server.exited;
    const alive = (pid: number): boolean => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    // The hung execute would sleep for 1000 s: an exit at all is the stub noticing.
    await until(() => !alive(stubPid), 'the stub to exit');
    assert.deepEqual(readdirSync('/dev/shm').filter((n) => n.startsWith(`nereid_python_${serverPid}_`)), [], 'its regions are gone');
  } finally {
    server.child.kill('SIGKILL');
    await repo.remove();
  }
});

test('a model.py failing in initialize is UNAVAILABLE with the traceback; other models load', { skip }, async () => {
  const s = await startTestServer({ modelRepositories: [PYTHON_FIXTURES], modelControlMode: 'explicit' });
  try {
    await assert.rejects(s.server.loadModel('init_fail'), /initialize\(\) of model instance 'init_fail_0' failed: TritonModelException: no weights at \/nonexistent\/weights\.bin/);
    const index = await s.server.repositoryIndex();
    const entry = index.find((e) => e.name === 'init_fail')!;
    assert.equal(entry.state, 'UNAVAILABLE');
    assert.match(entry.reason!, /model\.py\(\d+\): load_weights/);
    assert.match(entry.reason!, /model\.py\(\d+\): initialize/);
    assert.deepEqual(shmObjects(), [], 'a failed load leaves no shared memory behind');
    await s.server.loadModel('faulty');
    assert.ok(s.server.isModelReady('faulty'));
  } finally {
    await s.close();
  }
  // With --exit-on-error (the default) a failing initialize stops the start.
  await assert.rejects(
    startTestServer({ modelRepositories: [PYTHON_FIXTURES], modelControlMode: 'explicit', loadModels: ['init_fail'] }),
    /failed to load all models: 'init_fail': .*no weights/s,
  );
});

test('decoupled square_int32 streams through inferStream and HTTP generate_stream', { skip }, async () => {
  await withServer([PYTHON_EXAMPLES], ['square_int32'], async (s) => {
    const got: number[] = [];
    for await (const r of s.server.inferStream({ model: 'square_int32', inputs: [int32('IN', [4])] })) got.push(...int32s(output(r.outputs, 'OUT')));
    assert.deepEqual(got, [4, 4, 4, 4]);
    const none: unknown[] = [];
    for await (const r of s.server.inferStream({ model: 'square_int32', inputs: [int32('IN', [0])] })) none.push(r);
    assert.deepEqual(none, []);
    const r = await postJson(`${s.url}/v2/models/square_int32/generate_stream`, { IN: [3] });
    assert.equal(r.status, 200);
    const events = r.body.toString().split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => JSON.parse(e.slice(6)));
    assert.deepEqual(events.map((e) => e.OUT), [3, 3, 3]);
  });
});

test('async def execute in a decoupled model: streams overlap, a cancelled stream stops early', { skip }, async () => {
  await withServer([PYTHON_FIXTURES], ['async_decoupled'], async (s) => {
    const run = async (count: number, delay: number, tag = '', log: string[] = []): Promise<number[]> => {
      const out: number[] = [];
      for await (const r of s.server.inferStream({ model: 'async_decoupled', inputs: [int32('COUNT', [count]), int32('DELAY_MS', [delay])] })) {
        out.push(...int32s(output(r.outputs, 'INDEX')));
        log.push(`${tag}${out.at(-1)}`);
      }
      return out;
    };
    const arrivals: string[] = [];
    const [a, b] = await Promise.all([run(5, 60, 'a', arrivals), run(5, 60, 'b', arrivals)]);
    assert.deepEqual(a, [0, 1, 2, 3, 4]);
    assert.deepEqual(b, [0, 1, 2, 3, 4]);
    // One instance: the second execution starts while the first coroutine awaits, so the streams interleave.
    assert.ok(arrivals.indexOf('b0') < arrivals.indexOf('a4'), `arrivals: ${arrivals.join(' ')}`);

    const stream = s.server.inferStream({ model: 'async_decoupled', inputs: [int32('COUNT', [1000]), int32('DELAY_MS', [5])] });
    let n = 0;
    for await (const _ of stream) if (++n === 3) break;
    assert.deepEqual(await run(2, 0), [0, 1]);
  });
});

test('a decoupled model streaming from inside a synchronous execute: each response leaves when it is sent', { skip }, async () => {
  await withServer([PYTHON_FIXTURES], ['stream_in_execute'], async (s) => {
    const t0 = Date.now();
    const arrivals: number[] = [];
    const got: number[] = [];
    for await (const r of s.server.inferStream({ model: 'stream_in_execute', inputs: [int32('COUNT', [4]), int32('DELAY_MS', [150])] })) {
      arrivals.push(Date.now() - t0);
      got.push(...int32s(output(r.outputs, 'INDEX')));
    }
    assert.deepEqual(got, [0, 1, 2, 3]);
    assert.ok(arrivals[3]! - arrivals[0]! >= 300, `responses arrived at ${arrivals.join(', ')} ms: held until execute() returned`);
    // is_cancelled() inside a synchronous execute sees a stream dropped by its client (nothing else reads the
    // stub's pipe while it runs), so the execution (an hour, uncancelled) ends early and the next request
    // does not wait for it: the test ending at all shows it.
    const stream = s.server.inferStream({ model: 'stream_in_execute', inputs: [int32('COUNT', [720_000]), int32('DELAY_MS', [5])] });
    let n = 0;
    for await (const _ of stream) if (++n === 3) break;
    const next: number[] = [];
    for await (const r of s.server.inferStream({ model: 'stream_in_execute', inputs: [int32('COUNT', [2]), int32('DELAY_MS', [0])] })) next.push(...int32s(output(r.outputs, 'INDEX')));
    assert.deepEqual(next, [0, 1]);
  });
});

test('auto_complete_config fills a config-less model: inputs, outputs, max_batch_size, dynamic batching', { skip }, async () => {
  await withServer([PYTHON_FIXTURES], ['auto_complete'], async (s) => {
    const config = s.server.modelConfigJson('auto_complete') as any;
    assert.equal(config.backend, 'python');
    assert.equal(config.max_batch_size, 8);
    assert.deepEqual(config.input.map((i: any) => [i.name, i.data_type, i.dims]), [['INPUT0', 'TYPE_FP32', [4]], ['INPUT1', 'TYPE_FP32', [4]]]);
    assert.deepEqual(config.output.map((o: any) => o.name), ['OUTPUT0', 'OUTPUT1']);
    assert.ok(config.dynamic_batching);
    const r = await s.server.infer({ model: 'auto_complete', inputs: [fp32('INPUT0', [1, 2, 3, 4, 5, 6, 7, 8], [2, 4]), fp32('INPUT1', [1, 1, 1, 1, 2, 2, 2, 2], [2, 4])] });
    assert.deepEqual(fp32s(output(r.outputs, 'OUTPUT0')), [2, 3, 4, 5, 7, 8, 9, 10]);
  });
});

test('BLS: a sync call to add_sub, async calls awaited together, a streaming call, load/unload/is_model_ready', { skip }, async () => {
  const repo = await tempRepository([
    { from: join(PYTHON_EXAMPLES, 'add_sub') }, { from: join(PYTHON_EXAMPLES, 'square_int32') },
    { from: join(PYTHON_FIXTURES, 'bls_sync') }, { from: join(PYTHON_FIXTURES, 'bls_async') }, { from: join(PYTHON_FIXTURES, 'identity_fp32') },
  ]);
  try {
    await withServer([repo.dir], ['add_sub', 'square_int32', 'bls_sync', 'bls_async', 'identity_fp32'], async (s) => {
      const sync = await s.server.infer({ model: 'bls_sync', inputs: [text('MODEL_NAME', ['add_sub']), fp32('INPUT0', [1, 2, 3, 4]), fp32('INPUT1', [4, 3, 2, 1])] });
      assert.deepEqual(fp32s(output(sync.outputs, 'OUTPUT0')), [5, 5, 5, 5]);
      assert.deepEqual(fp32s(output(sync.outputs, 'OUTPUT1')), [-3, -1, 1, 3]);
      await assert.rejects(
        s.server.infer({ model: 'bls_sync', inputs: [text('MODEL_NAME', ['no_such_model']), fp32('INPUT0', [1, 2, 3, 4]), fp32('INPUT1', [4, 3, 2, 1])] }),
        /TritonModelException: .*no_such_model/,
      );

      const r = await s.server.infer({ model: 'bls_async', inputs: [fp32('INPUT0', [1, 2, 3, 4]), fp32('INPUT1', [1, 1, 1, 1]), int32('N', [3]), text('MANAGE', ['identity_fp32'])] });
      assert.deepEqual(fp32s(output(r.outputs, 'SUM')), [2, 3, 4, 5]);
      assert.deepEqual(fp32s(output(r.outputs, 'DIFF')), [0, -1, -2, -3]);
      assert.deepEqual(int32s(output(r.outputs, 'STREAM')), [3, 3, 3]);
      assert.deepEqual([...(output(r.outputs, 'READY').data as Uint8Array)], [1, 0, 1]);
      assert.ok(s.server.isModelReady('identity_fp32'));
    });
  } finally {
    await repo.remove();
  }
});
