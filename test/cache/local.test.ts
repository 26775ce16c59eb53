import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LocalResponseCache } from '../../src/cache/local.js';
import { responseCacheKey } from '../../src/cache/cache.js';
import { InferenceServer } from '../../src/server/inference-server.js';
import type { Tensor } from '../../src/tensor/tensor.js';
import { EXAMPLES, FIXTURES } from '../helpers/paths.js';
import { startTestServer, tempRepository } from '../helpers/server.js';
import { postJson, request } from '../helpers/http.js';
import { parseServeFlags } from '../../src/cli/flags.js';

const out = (n: number, fill: number): Tensor[] => [{ name: 'Y', datatype: 'UINT8', shape: [n], data: new Uint8Array(n).fill(fill) }];

test('local cache: LRU within its byte budget, entries that do not fit are never stored, copies not aliases', () => {
  const c = new LocalResponseCache(1000);
  c.insert('a', out(300, 1));
  c.insert('b', out(300, 2));
  assert.ok(c.get('a')); // a is now the most recently used
  c.insert('c', out(300, 3)); // evicts b, the least recently used
  assert.equal(c.get('b'), undefined);
  assert.ok(c.get('a') && c.get('c'));
  assert.ok(c.bytesUsed <= 1000);
  c.insert('huge', out(5000, 4));
  assert.equal(c.get('huge'), undefined);
  const src = out(10, 7);
  c.insert('copy', src);
  (src[0]!.data as Uint8Array).fill(0);
  assert.equal((c.get('copy')![0]!.data as Uint8Array)[0], 7);
});

test('keys: same model, version, inputs and outputs match; any difference does not', () => {
  const t = (v: number): Tensor => ({ name: 'X', datatype: 'INT32', shape: [1, 1], data: new Uint8Array(new Int32Array([v]).buffer) });
  const k = (v: number, outs = ['Y'], version = 1) => responseCacheKey('m', version, { model: 'm', inputs: [t(v)] }, outs);
  assert.equal(k(1), k(1));
  assert.notEqual(k(1), k(2));
  assert.notEqual(k(1), k(1, ['Y', 'Z']));
  assert.notEqual(k(1), k(1, ['Y'], 2));
  const two = (a: number, b: number) => responseCacheKey('m', 1, { model: 'm', inputs: [{ ...t(a), name: 'A' }, { ...t(b), name: 'B' }] }, ['Y']);
  assert.notEqual(two(1, 1), two(1, 2), 'the last input is part of the key');
  assert.notEqual(two(1, 1), two(2, 1), 'the first input is part of the key');
});

test('through the server: two requests that differ only in their last input each get their own answer', async () => {
  const s = await startTestServer({ modelRepositories: [join(FIXTURES, 'cache')], responseCache: { local: { size: String(1 << 20) } } });
  try {
    const add = async (b: number[]) => {
      const r = await postJson(`${s.url}/v2/models/cached_add/infer`, { inputs: [
        { name: 'INPUT0', shape: [1, 4], datatype: 'INT32', data: [1, 2, 3, 4] },
        { name: 'INPUT1', shape: [1, 4], datatype: 'INT32', data: b }] });
      assert.equal(r.status, 200, r.body.toString());
      return r.json().outputs[0].data as number[];
    };
    assert.deepEqual(await add([0, 0, 0, 0]), [1, 2, 3, 4]);
    assert.deepEqual(await add([10, 10, 10, 10]), [11, 12, 13, 14]);
    assert.deepEqual(await add([0, 0, 0, 0]), [1, 2, 3, 4]);
    const st = (await request(`${s.url}/v2/models/cached_add/stats`)).json().model_stats[0].inference_stats;
    assert.deepEqual([st.cache_hit.count, st.cache_miss.count], [1, 2]);
  } finally {
    await s.close();
  }
});

test('through the server: a repeated request is a hit, counted as Triton counts it', async () => {
  const repo = await tempRepository([{ from: join(EXAMPLES, 'digits') }]);
  await appendFile(join(repo.dir, 'digits', 'config.pbtxt'), '\nresponse_cache { enable: true }\n');
  const s = await startTestServer({ modelRepositories: [repo.dir], responseCache: { local: { size: String(1 << 20) } } });
  try {
    const body = (v: number) => ({ inputs: [{ name: 'INPUT', shape: [1, 64], datatype: 'FP32', data: new Array(64).fill(v) }] });
    const first = await postJson(`${s.url}/v2/models/digits/versions/2/infer`, body(1));
    const second = await postJson(`${s.url}/v2/models/digits/versions/2/infer`, body(1));
    assert.equal(first.status, 200);
    assert.deepEqual(second.json().outputs, first.json().outputs);
    assert.equal((await postJson(`${s.url}/v2/models/digits/versions/2/infer`, body(2))).status, 200);
    const st = (await request(`${s.url}/v2/models/digits/versions/2/stats`)).json().model_stats[0];
    assert.equal(st.inference_stats.cache_hit.count, 1);
    assert.equal(st.inference_stats.cache_miss.count, 2);
    assert.equal(st.inference_stats.success.count, 3);
    assert.equal(st.inference_count, 2, 'a hit is not an inference');
    assert.equal(st.execution_count, 2);
  } finally {
    await s.close();
    await repo.remove();
  }
});

test('--cache-config reaches the options; a cache Nereid does not have stops the start with a clear error', async () => {
  assert.deepEqual(parseServeFlags(['--model-repository=/m', '--cache-config=local,size=1048576']).server.responseCache, { local: { size: '1048576' } });
  assert.deepEqual(parseServeFlags(['--model-repository=/m', '--response-cache-byte-size=4096']).server.responseCache, { local: { size: '4096' } });
  await assert.rejects(InferenceServer.create({ modelRepositories: [EXAMPLES], responseCache: { memcached: { host: 'localhost' } } }), /'memcached' is not available/);
  await assert.rejects(InferenceServer.create({ modelRepositories: [EXAMPLES], responseCache: { local: { size: '4096' }, redis: { host: 'h', port: '1' } } }), /one response cache at a time/);
});
