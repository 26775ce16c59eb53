import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EXAMPLES, FIXTURES } from '../../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../../helpers/server.js';
import { binaryBody, postJson, request, splitBinary } from '../../helpers/http.js';
import { createShmObject, int32Bytes } from '../../helpers/shm.js';
import { serializeBytes, utf8 } from '../../../src/tensor/bytes.js';

// Triton's system shared-memory extension over HTTP, against a real server with --allow-client-shm: regions are
// /dev/shm objects made here, inputs are read from them and outputs written into them.

let repo: { dir: string; remove(): Promise<void> };
let s: TestServer;
const objects: { remove(): void }[] = [];
const object = (bytes: number | Uint8Array) => {
  const o = createShmObject(bytes);
  objects.push(o);
  return o;
};

before(async () => {
  repo = await tempRepository([
    { from: join(EXAMPLES, 'simple') }, { from: join(EXAMPLES, 'simple_string') }, { from: join(EXAMPLES, 'digits') },
    { from: join(FIXTURES, 'slow', 'slow_fp32') },
  ]);
  s = await startTestServer({ modelRepositories: [repo.dir], allowClientShm: true });
});
after(async () => {
  await s.close();
  await repo.remove();
  objects.forEach((o) => o.remove());
});

const shmUrl = (path: string) => `${s.url}/v2/systemsharedmemory${path}`;
const register = (name: string, body: unknown) => postJson(shmUrl(`/region/${name}/register`), body);
const unregister = (name?: string) => request(shmUrl(name === undefined ? '/unregister' : `/region/${name}/unregister`), { method: 'POST' });
const status = async (name?: string) => request(shmUrl(name === undefined ? '/status' : `/region/${name}/status`));
const shm = (region: string, byteSize: number, offset?: number) => ({
  shared_memory_region: region, shared_memory_byte_size: byteSize, ...(offset === undefined ? {} : { shared_memory_offset: offset }),
});

const A = Array.from({ length: 16 }, (_, i) => i);
const B = Array.from({ length: 16 }, () => 1);

/** Inputs and outputs of `simple` in four regions of one object, as Triton's simple_http_shm_client lays them out. */
async function registerSimpleRegions(prefix: string) {
  const o = object(Buffer.concat([int32Bytes(A), int32Bytes(B), Buffer.alloc(128)]));
  for (const [i, part] of ['in0', 'in1', 'out0', 'out1'].entries()) {
    const r = await register(`${prefix}_${part}`, { key: o.key, offset: i * 64, byte_size: 64 });
    assert.equal(r.status, 200, r.body.toString());
    assert.equal(r.body.byteLength, 0);
  }
  return o;
}

const readInt32 = (path: string, at: number) => {
  const b = readFileSync(path);
  return Array.from({ length: 16 }, (_, i) => b.readInt32LE(at + 4 * i));
};

test('inputs read from regions, outputs written into them; the response carries only name, datatype and shape', async () => {
  const o = await registerSimpleRegions('t1');
  const st = (await status()).json() as { name: string; key: string; offset: number; byte_size: number }[];
  assert.deepEqual(st.filter((r) => r.name.startsWith('t1_')).map((r) => [r.name, r.key, r.offset, r.byte_size]), [
    ['t1_in0', o.key, 0, 64], ['t1_in1', o.key, 64, 64], ['t1_out0', o.key, 128, 64], ['t1_out1', o.key, 192, 64],
  ]);
  assert.deepEqual((await status('t1_in1')).json(), [{ name: 't1_in1', key: o.key, offset: 64, byte_size: 64 }]);

  const r = await postJson(`${s.url}/v2/models/simple/infer`, {
    inputs: [
      { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', parameters: shm('t1_in0', 64) },
      { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', parameters: shm('t1_in1', 64) },
    ],
    outputs: [{ name: 'OUTPUT0', parameters: shm('t1_out0', 64) }, { name: 'OUTPUT1', parameters: shm('t1_out1', 64) }],
  });
  assert.equal(r.status, 200, r.body.toString());
  assert.equal(r.headers.get('content-type'), 'application/json');
  assert.deepEqual(r.json().outputs, [
    { name: 'OUTPUT0', datatype: 'INT32', shape: [1, 16] },
    { name: 'OUTPUT1', datatype: 'INT32', shape: [1, 16] },
  ]);
  assert.deepEqual(readInt32(o.path, 128), A.map((a, i) => a + B[i]!));
  assert.deepEqual(readInt32(o.path, 192), A.map((a, i) => a - B[i]!));

  // The client changes its input in place and asks again: the server reads the region anew.
  const bytes = readFileSync(o.path);
  int32Bytes(A.map((a) => a * 10)).copy(bytes, 0);
  writeFileSync(o.path, bytes);
  const again = await postJson(`${s.url}/v2/models/simple/infer`, {
    inputs: [
      { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', parameters: shm('t1_in0', 64) },
      { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', parameters: shm('t1_in1', 64) },
    ],
    outputs: [{ name: 'OUTPUT0', parameters: shm('t1_out0', 64) }],
  });
  assert.equal(again.status, 200, again.body.toString());
  assert.deepEqual(readInt32(o.path, 128), A.map((a, i) => a * 10 + B[i]!));
  assert.equal((await unregister()).status, 200);
});

test('shared memory mixes with JSON and binary tensors; offsets inside a region are relative to it', async () => {
  const o = object(4096 + 256);
  const buf = readFileSync(o.path);
  int32Bytes(A).copy(buf, 4096 + 32);
  writeFileSync(o.path, buf);
  assert.equal((await register('mix', { key: o.key, offset: 4096, byte_size: 256 })).status, 200);
  const { body, headers } = binaryBody({
    inputs: [
      { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', parameters: shm('mix', 64, 32) },
      { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', parameters: { binary_data_size: 64 } },
    ],
    outputs: [{ name: 'OUTPUT0', parameters: shm('mix', 64, 128) }, { name: 'OUTPUT1', parameters: { binary_data: true } }],
  }, [int32Bytes(B)]);
  const r = await request(`${s.url}/v2/models/simple/infer`, { body, headers });
  assert.equal(r.status, 200, r.body.toString());
  const { header, blobs } = splitBinary(r);
  assert.deepEqual(header.outputs[0], { name: 'OUTPUT0', datatype: 'INT32', shape: [1, 16] });
  const out1 = blobs.get('OUTPUT1')!;
  assert.deepEqual(Array.from({ length: 16 }, (_, i) => out1.readInt32LE(4 * i)), A.map((a, i) => a - B[i]!));
  assert.deepEqual(readInt32(o.path, 4096 + 128), A.map((a, i) => a + B[i]!));
  assert.equal((await unregister('mix')).status, 200);
});

test('BYTES tensors travel in shared memory in their serialized form (4-byte length, then the bytes)', async () => {
  const x = Array.from({ length: 16 }, (_, i) => String(i * 3));
  const y = Array.from({ length: 16 }, (_, i) => String(i));
  const input = Buffer.concat([serializeBytes(x.map(utf8)), serializeBytes(y.map(utf8))]);
  const o = object(Buffer.concat([input, Buffer.alloc(512)]));
  const x0 = serializeBytes(x.map(utf8)).byteLength;
  assert.equal((await register('str', { key: o.key, byte_size: input.byteLength + 512 })).status, 200);
  const r = await postJson(`${s.url}/v2/models/simple_string/infer`, {
    inputs: [
      { name: 'INPUT0', shape: [1, 16], datatype: 'BYTES', parameters: shm('str', x0) },
      { name: 'INPUT1', shape: [1, 16], datatype: 'BYTES', parameters: shm('str', input.byteLength - x0, x0) },
    ],
    outputs: [{ name: 'OUTPUT0', parameters: shm('str', 256, input.byteLength) }, { name: 'OUTPUT1' }],
  });
  assert.equal(r.status, 200, r.body.toString());
  const [out0, out1] = r.json().outputs;
  assert.deepEqual(out0, { name: 'OUTPUT0', datatype: 'BYTES', shape: [1, 16] });
  assert.deepEqual(out1.data, x.map((v, i) => String(Number(v) - Number(y[i]))));
  const expected = serializeBytes(x.map((v, i) => utf8(String(Number(v) + Number(y[i])))));
  assert.deepEqual(readFileSync(o.path).subarray(input.byteLength, input.byteLength + expected.byteLength), expected);

  const bad = await postJson(`${s.url}/v2/models/simple_string/infer`, {
    inputs: [
      { name: 'INPUT0', shape: [1, 16], datatype: 'BYTES', parameters: shm('str', x0 - 1) },
      { name: 'INPUT1', shape: [1, 16], datatype: 'BYTES', parameters: shm('str', input.byteLength - x0, x0) },
    ],
  });
  assert.equal(bad.status, 400, bad.body.toString());
  assert.match(bad.json().error, /INPUT0/);
  assert.equal((await unregister('str')).status, 200);
});

test('register errors: duplicate, missing fields, a missing object, a range past the object', async () => {
  const o = object(64);
  assert.equal((await register('dup', { key: o.key, byte_size: 64 })).status, 200);
  const dup = await register('dup', { key: o.key, byte_size: 64 });
  assert.equal(dup.status, 400);
  assert.deepEqual(dup.json(), { error: "shared memory region 'dup' already in manager" });
  for (const body of [{ byte_size: 8 }, { key: o.key }, { key: 7, byte_size: 8 }, { key: o.key, byte_size: -1 }]) {
    const r = await register('bad', body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.ok(r.json().error, JSON.stringify(body));
  }
  const bodyless = await request(shmUrl('/region/bad/register'), { method: 'POST', body: 'not json' });
  assert.equal(bodyless.status, 400);
  const missing = await register('gone', { key: '/nereid_test_no_such_object', byte_size: 8 });
  assert.equal(missing.status, 500);
  assert.deepEqual(missing.json(), { error: "Unable to open shared memory region: '/nereid_test_no_such_object'" });
  for (const [offset, byteSize] of [[0, 65], [1, 64], [64, 1]]) {
    const r = await register('big', { key: o.key, offset, byte_size: byteSize });
    assert.equal(r.status, 400);
    assert.deepEqual(r.json(), { error: "failed to register shared memory region 'big': invalid args" });
  }
  assert.equal((await status('big')).status, 404);
  assert.equal((await request(shmUrl('/region/dup/register'))).status, 405, 'register must be POST');
  assert.equal((await request(shmUrl('/status'), { method: 'POST' })).status, 405, 'status must be GET');
  assert.equal((await unregister('dup')).status, 200);
  assert.equal((await unregister('never_registered')).status, 200, 'unregistering an unknown name succeeds');
});

test('infer errors: unknown region, offsets and sizes outside the region, a region of the wrong size, output too small', async () => {
  const o = object(Buffer.concat([int32Bytes(A), int32Bytes(B), Buffer.alloc(64)]));
  assert.equal((await register('e', { key: o.key, byte_size: 192 })).status, 200);
  const infer = (in0: object, out0?: object) => postJson(`${s.url}/v2/models/simple/infer`, {
    inputs: [
      { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', parameters: in0 },
      { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', parameters: shm('e', 64, 64) },
    ],
    ...(out0 ? { outputs: [{ name: 'OUTPUT0', parameters: out0 }] } : {}),
  });
  const cases: [object, object | undefined, number, string][] = [
    [shm('nope', 64), undefined, 404, "Unable to find shared memory region: 'nope'"],
    [shm('e', 64, 192), undefined, 400, "Invalid offset for shared memory region: 'e'"],
    [shm('e', 64, 2 ** 64 - 32), undefined, 400, "Invalid offset for shared memory region: 'e'"],
    [shm('e', 64, 160), undefined, 400, "Invalid offset + byte size for shared memory region: 'e'"],
    [shm('e', 128), undefined, 400, "input byte size mismatch for input 'INPUT0' for model 'simple'. Expected 64, got 128"],
    [shm('e', 32), undefined, 400, "input byte size mismatch for input 'INPUT0' for model 'simple'. Expected 64, got 32"],
    [shm('e', 64), shm('e', 2 ** 64 - 32, 32), 400, 'Integer overflow detected: byte_size'],
    [shm('e', 64), shm('e', 64, 160), 400, "Invalid offset + byte size for shared memory region: 'e'"],
    [shm('e', 64), shm('nope', 64), 404, "Unable to find shared memory region: 'nope'"],
    [shm('e', 64), shm('e', 32, 128), 500, "shared memory size specified with the request for output 'OUTPUT0' (32 bytes) should be at least 64 bytes to hold the results"],
    [shm('e', 64), { ...shm('e', 64, 128), classification: 2 }, 400, "Output can't set both 'shared_memory_region' and 'classification'"],
    [shm('e', 64), { ...shm('e', 64, 128), binary_data: true }, 400, "Output can't set both 'shared_memory_region' and 'binary_data'"],
    [{ shared_memory_region: 7, shared_memory_byte_size: 64 }, undefined, 400, "Unable to parse 'shared_memory_region'"],
    [{ ...shm('e', 64), shared_memory_offset: -1 }, undefined, 400, "Unable to parse 'shared_memory_offset'"],
  ];
  for (const [in0, out0, code, message] of cases) {
    const r = await infer(in0, out0);
    assert.equal(r.status, code, `${JSON.stringify([in0, out0])}: ${r.body.toString()}`);
    assert.ok((r.json().error as string).startsWith(message), `${JSON.stringify([in0, out0])}: ${r.json().error}`);
  }
  const both = await postJson(`${s.url}/v2/models/simple/infer`, {
    inputs: [
      { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: A, parameters: shm('e', 64) },
      { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', parameters: shm('e', 64, 64) },
    ],
  });
  assert.equal(both.status, 400, 'data and shared_memory_region together');
  // Failed requests gave their regions back: unregister takes effect at once.
  assert.equal((await unregister('e')).status, 200);
  assert.equal((await status('e')).status, 404);
  // The server keeps serving.
  assert.equal((await postJson(`${s.url}/v2/models/simple/infer`, { inputs: [
    { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: A }, { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: B },
  ] })).status, 200);
});

test('unregister while requests use a region: it stays listed and usable until the last one finishes', async () => {
  const values = Array.from({ length: 16 }, (_, i) => i / 2);
  const o = object(Buffer.concat([Buffer.from(new Float32Array(values).buffer), Buffer.alloc(64 * 3)]));
  assert.equal((await register('busy', { key: o.key, byte_size: 256 })).status, 200);
  const req = (out: number) => ({
    model: 'slow_fp32',
    inputs: [],
    sharedMemoryInputs: [{ name: 'INPUT0', datatype: 'FP32' as const, shape: [1, 16], sharedMemory: { region: 'busy', offset: 0, byteSize: 64 } }],
    outputs: [{ name: 'OUTPUT0', sharedMemory: { region: 'busy', offset: 64 * out, byteSize: 64 } }],
  });
  // The in-process API takes the region as the call is made, so both requests hold it before the unregister.
  const first = s.server.infer(req(1));
  const second = s.server.infer(req(2));
  assert.equal((await unregister()).status, 200);
  assert.deepEqual((await status()).json().map((r: { name: string }) => r.name), ['busy']);
  // A request over HTTP may still use it meanwhile, as in Triton.
  const third = postJson(`${s.url}/v2/models/slow_fp32/infer`, {
    inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'FP32', parameters: shm('busy', 64) }],
    outputs: [{ name: 'OUTPUT0', parameters: shm('busy', 64, 192) }],
  });
  await first;
  assert.equal((await status('busy')).status, 200, 'still held by the others');
  await second;
  assert.equal((await third).status, 200);
  assert.equal((await status('busy')).status, 404, 'released by the last request');
  assert.deepEqual((await status()).json(), []);
  const f32 = (at: number) => {
    const b = readFileSync(o.path);
    return Array.from({ length: 16 }, (_, i) => b.readFloatLE(at + 4 * i));
  };
  for (const at of [64, 128, 192]) assert.deepEqual(f32(at), values);
});

test('unregister all removes every system region; CUDA answers as a server without GPUs', async () => {
  const o = object(64);
  for (const n of ['u1', 'u2', 'u3']) assert.equal((await register(n, { key: o.key, byte_size: 64 })).status, 200);
  assert.equal((await status()).json().length, 3);
  assert.equal((await unregister()).status, 200);
  assert.deepEqual((await status()).json(), []);

  const cuda = (path: string, init: Parameters<typeof request>[1] = {}) => request(`${s.url}/v2/cudasharedmemory${path}`, init);
  const reg = await postJson(`${s.url}/v2/cudasharedmemory/region/c0/register`, { raw_handle: { b64: Buffer.alloc(64).toString('base64') }, device_id: 0, byte_size: 64 });
  assert.equal(reg.status, 400);
  assert.deepEqual(reg.json(), { error: "failed to register CUDA shared memory region: 'c0', GPUs not supported" });
  const st = await cuda('/status');
  assert.equal(st.status, 200);
  assert.deepEqual(st.json(), []);
  assert.equal((await cuda('/region/c0/status')).status, 404);
  assert.equal((await cuda('/unregister', { method: 'POST' })).status, 200);
  assert.equal((await cuda('/region/c0/unregister', { method: 'POST' })).status, 200);
});

test('server metadata lists system_shared_memory and cuda_shared_memory', async () => {
  const ext = (await request(`${s.url}/v2`)).json().extensions as string[];
  assert.ok(ext.includes('system_shared_memory') && ext.includes('cuda_shared_memory'));
});
