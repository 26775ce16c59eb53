import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { startTestServer, tempRepository, type TestServer } from '../../helpers/server.js';
import { binaryBody, postJson, request, splitBinary } from '../../helpers/http.js';
import { startGrpcTestServer } from '../../helpers/grpc.js';
import { startHttpFrontend } from '../../../src/frontends/http/server.js';
import type { InferenceResponse } from '../../../src/index.js';
import { PYTHON_EXAMPLES, PYTHON_FIXTURES, fp32, fp32s, int32, int32s, output, pythonSkip } from './helpers.js';

// Borrowed outputs (InferenceRequest.borrowOutputs): a Python model's outputs as views of its stub's shared
// memory until the caller calls release(), instead of copies into fresh buffers. What must hold: a view stays
// intact while it is held (the stub never reuses its block), released blocks are reused, a view outlives a
// stub that dies, and the frontends that borrow (HTTP, gRPC, shared-memory outputs) answer each request with
// its own data under concurrency.

const skip = pythonSkip();

async function withServer(repos: string[], models: string[], fn: (s: TestServer) => Promise<void>, extra = {}): Promise<void> {
  const s = await startTestServer({ modelRepositories: repos, modelControlMode: 'explicit', loadModels: models, ...extra });
  try {
    await fn(s);
  } finally {
    await s.close();
  }
}

const addSub = (i: number) => [fp32('INPUT0', [i, i + 1, i + 2, i + 3]), fp32('INPUT1', [1, 1, 1, 1])];
const sum = (i: number) => [i + 1, i + 2, i + 3, i + 4];

test('borrowed outputs are views of the stub memory until release(): held ones stay intact, released blocks are reused', { skip }, async () => {
  await withServer([PYTHON_EXAMPLES], ['add_sub'], async (s) => {
    const copied = await s.server.infer({ model: 'add_sub', inputs: addSub(0) });
    assert.equal(copied.release, undefined, 'outputs not borrowed are the caller\'s to keep');

    const held: InferenceResponse[] = [];
    for (let i = 0; i < 20; i++) held.push(await s.server.infer({ model: 'add_sub', inputs: addSub(i), borrowOutputs: true }));
    const region = (output(held[0]!.outputs, 'OUTPUT0').data as Uint8Array).buffer;
    for (const r of held) {
      assert.equal(typeof r.release, 'function');
      assert.equal((output(r.outputs, 'OUTPUT0').data as Uint8Array).buffer, region, 'a view of the stub region, not a fresh buffer');
    }
    assert.equal(new Set(held.map((r) => (output(r.outputs, 'OUTPUT0').data as Uint8Array).byteOffset)).size, 20);

    // Many more borrowed and given back at once, some concurrently: the held views never change.
    const offsets = new Set<number>();
    for (let round = 0; round < 50; round++) {
      const rs = await Promise.all([100, 200].map((k) => s.server.infer({ model: 'add_sub', inputs: addSub(k + round), borrowOutputs: true })));
      rs.forEach((r, j) => {
        assert.deepEqual(fp32s(output(r.outputs, 'OUTPUT0')), sum([100, 200][j]! + round));
        offsets.add((output(r.outputs, 'OUTPUT0').data as Uint8Array).byteOffset);
        r.release!();
      });
    }
    held.forEach((r, i) => assert.deepEqual(fp32s(output(r.outputs, 'OUTPUT0')), sum(i), `held response ${i}`));
    assert.ok(offsets.size <= 8, `released blocks are reused: ${offsets.size} offsets for 100 responses`);
    for (const r of held) {
      r.release!();
      r.release!(); // twice does nothing
    }
    const after = await s.server.infer({ model: 'add_sub', inputs: addSub(7), borrowOutputs: true });
    assert.deepEqual(fp32s(output(after.outputs, 'OUTPUT1')), [6, 7, 8, 9]);
    after.release!();
  });
});

test('a borrowed output outlives a stub that dies; the next stub serves', { skip }, async () => {
  await withServer([PYTHON_FIXTURES], ['faulty'], async (s) => {
    const held = await s.server.infer({ model: 'faulty', inputs: [int32('IN', [7])], borrowOutputs: true });
    await assert.rejects(s.server.infer({ model: 'faulty', inputs: [int32('IN', [-3])] }), /its Python stub stopped/);
    const next = await s.server.infer({ model: 'faulty', inputs: [int32('IN', [5])], borrowOutputs: true });
    assert.deepEqual(int32s(output(next.outputs, 'OUT')), [10]);
    assert.deepEqual(int32s(output(held.outputs, 'OUT')), [14], 'the dead stub\'s region stays mapped while a view of it is held');
    held.release!();
    next.release!();
    const again = await s.server.infer({ model: 'faulty', inputs: [int32('IN', [6])] });
    assert.deepEqual(int32s(output(again.outputs, 'OUT')), [12]);
  });
});

test('a model with a response cache does not lend: the cache keeps what it stores', { skip }, async () => {
  const repo = await tempRepository([{ from: join(PYTHON_EXAMPLES, 'add_sub') }]);
  try {
    await appendFile(join(repo.dir, 'add_sub', 'config.pbtxt'), '\nresponse_cache { enable: true }\n');
    await withServer([repo.dir], ['add_sub'], async (s) => {
      const first = await s.server.infer({ model: 'add_sub', inputs: addSub(3), borrowOutputs: true });
      assert.equal(first.release, undefined);
      for (let i = 10; i < 30; i++) await s.server.infer({ model: 'add_sub', inputs: addSub(i), borrowOutputs: true });
      const hit = await s.server.infer({ model: 'add_sub', inputs: addSub(3), borrowOutputs: true });
      assert.deepEqual(fp32s(output(hit.outputs, 'OUTPUT0')), sum(3));
      assert.equal((s.server.statistics('add_sub') as any).model_stats[0].inference_stats.cache_hit.count, 1);
    }, { responseCache: { local: { size: String(1 << 20) } } });
  } finally {
    await repo.remove();
  }
});

test('HTTP binary and JSON outputs and gRPC answers from borrowed outputs: concurrent requests each get their own', { skip }, async () => {
  const s = await startGrpcTestServer({ modelRepositories: [PYTHON_EXAMPLES], modelControlMode: 'explicit', loadModels: ['add_sub'] });
  const http = await startHttpFrontend(s.server, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20 }, s.logger);
  const url = `http://127.0.0.1:${http.port}/v2/models/add_sub/infer`;
  try {
    const httpCall = async (i: number, binary: boolean) => {
      const ins = addSub(i);
      const { body, headers } = binaryBody({
        inputs: ins.map((t) => ({ name: t.name, shape: t.shape, datatype: 'FP32', parameters: { binary_data_size: 16 } })),
        outputs: [{ name: 'OUTPUT0', parameters: { binary_data: binary } }],
      }, ins.map((t) => t.data as Uint8Array));
      const r = await request(url, { method: 'POST', body, headers });
      assert.equal(r.status, 200, r.body.toString());
      if (!binary) return JSON.parse(r.body.toString()).outputs[0].data as number[];
      const { blobs } = splitBinary(r);
      return [...new Float32Array(new Uint8Array(blobs.get('OUTPUT0')!).buffer)];
    };
    const grpcCall = (i: number) => new Promise<number[]>((resolve, reject) => {
      const ins = addSub(i);
      s.client.ModelInfer({
        model_name: 'add_sub', inputs: ins.map((t) => ({ name: t.name, datatype: 'FP32', shape: t.shape })),
        raw_input_contents: ins.map((t) => Buffer.from(t.data as Uint8Array)),
      }, (e: grpc.ServiceError | null, r: any) => {
        if (e) return reject(e);
        const raw = r.raw_output_contents[r.outputs.findIndex((o: any) => o.name === 'OUTPUT0')];
        resolve([...new Float32Array(new Uint8Array(raw).buffer)]);
      });
    });
    const ids = Array.from({ length: 48 }, (_, i) => i * 10);
    const got = await Promise.all(ids.map((i) => (i % 30 === 0 ? grpcCall(i) : httpCall(i, i % 20 !== 0))));
    got.forEach((values, k) => assert.deepEqual(values, sum(ids[k]!), `request ${ids[k]}`));
  } finally {
    await http.close();
    await s.close();
  }
});

test('a large JSON answer encoded off the event loop from borrowed outputs', { skip }, async () => {
  await withServer([PYTHON_FIXTURES], ['scale_fp32'], async (s) => {
    // 160 KB of output data: above OFF_THREAD_JSON_BYTES, so the JSON is written in the worker thread, which
    // gets a copy of the response without its release().
    const n = 40_000;
    const values = Array.from({ length: n }, (_, i) => i % 977);
    const replies = await Promise.all([0, 1, 2].map((k) => postJson(`${s.url}/v2/models/scale_fp32/infer`, {
      inputs: [{ name: 'INPUT0', shape: [n], datatype: 'FP32', data: values.map((v) => v + k) }],
    })));
    replies.forEach((r, k) => {
      assert.equal(r.status, 200, r.body.toString().slice(0, 300));
      const data = r.json().outputs[0].data as number[];
      assert.equal(data.length, n);
      assert.equal(data[n - 1], 2 * (((n - 1) % 977) + k));
      assert.equal(data[5], 2 * (5 + k));
    });
    const borrowed = await s.server.infer({ model: 'scale_fp32', inputs: [fp32('INPUT0', [1, 2])], borrowOutputs: true });
    assert.equal(typeof borrowed.release, 'function', 'the output lies in the stub region and is lent');
    borrowed.release!();
  });
});

test('a router in front of Python models passes borrowed outputs and their release through', { skip }, async () => {
  const repo = await tempRepository([{ from: join(PYTHON_EXAMPLES, 'add_sub') }]);
  try {
    await mkdir(join(repo.dir, 'add_sub_router', '1'), { recursive: true });
    await writeFile(join(repo.dir, 'add_sub_router', 'config.pbtxt'),
      'name: "add_sub_router"\nbackend: "router"\nparameters { key: "nereid_routes" value { string_value: "add_sub:1" } }\n');
    await withServer([repo.dir], ['add_sub', 'add_sub_router'], async (s) => {
      const held = await s.server.infer({ model: 'add_sub_router', inputs: addSub(1), borrowOutputs: true });
      assert.equal(typeof held.release, 'function');
      for (let i = 10; i < 20; i++) {
        const r = await s.server.infer({ model: 'add_sub_router', inputs: addSub(i), borrowOutputs: true });
        assert.deepEqual(fp32s(output(r.outputs, 'OUTPUT0')), sum(i));
        r.release!();
      }
      assert.deepEqual(fp32s(output(held.outputs, 'OUTPUT0')), sum(1));
      held.release!();
      const copied = await s.server.infer({ model: 'add_sub_router', inputs: addSub(2) });
      assert.equal(copied.release, undefined);
    });
  } finally {
    await repo.remove();
  }
});
