import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { EXAMPLES } from '../../helpers/paths.js';
import { tempRepository } from '../../helpers/server.js';
import { failure, int32Bytes, int32s, startGrpcTestServer, unary, type GrpcTestServer } from '../../helpers/grpc.js';
import { createShmObject } from '../../helpers/shm.js';
import { SHM_DISABLED } from '../../../src/sharedmemory/registry.js';

// System shared memory over gRPC, as Triton's simple_grpc_shm_client uses it: regions registered with
// SystemSharedMemoryRegister over /dev/shm objects made here, ModelInfer naming them in the tensors'
// shared_memory_region / shared_memory_byte_size / shared_memory_offset parameters.

let repo: { dir: string; remove(): Promise<void> };
let s: GrpcTestServer;
const objects: { remove(): void }[] = [];
const object = (bytes: number | Uint8Array) => {
  const o = createShmObject(bytes);
  objects.push(o);
  return o;
};

before(async () => {
  repo = await tempRepository([{ from: join(EXAMPLES, 'simple') }]);
  s = await startGrpcTestServer({ modelRepositories: [repo.dir], allowClientShm: true });
});
after(async () => {
  await s.close();
  await repo.remove();
  objects.forEach((o) => o.remove());
});

const A = Array.from({ length: 16 }, (_, i) => i);
const B = Array.from({ length: 16 }, (_, i) => 2 * i - 5);

/** The tensor parameters that place a tensor in a region (int64 values as strings, as proto-loader takes them). */
const shm = (region: string, byteSize: number | string, offset?: number | string) => ({
  shared_memory_region: { string_param: region },
  shared_memory_byte_size: { int64_param: String(byteSize) },
  ...(offset === undefined ? {} : { shared_memory_offset: { int64_param: String(offset) } }),
});

const register = (name: string, key: string, byteSize: number, offset = 0) =>
  unary(s.client, 'SystemSharedMemoryRegister', { name, key, offset, byte_size: byteSize });

const inferSimple = (in0: object, in1: object, outputs: object[]) => unary(s.client, 'ModelInfer', {
  model_name: 'simple',
  inputs: [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: in0 },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: in1 },
  ],
  outputs,
});

const readInt32 = (path: string, at: number) => {
  const b = readFileSync(path);
  return Array.from({ length: 16 }, (_, i) => b.readInt32LE(at + 4 * i));
};

test('inputs read from a registered region, outputs written into it; their raw_output_contents entries are empty', async () => {
  // One object, four 64-byte regions in it, as simple_grpc_shm_client lays them out.
  const o = object(Buffer.concat([int32Bytes(A), int32Bytes(B), Buffer.alloc(128)]));
  for (const [i, part] of ['in0', 'in1', 'out0', 'out1'].entries()) await register(`g_${part}`, o.key, 64, 64 * i);
  const st = await unary(s.client, 'SystemSharedMemoryStatus', { name: 'g_out0' });
  assert.deepEqual(st.regions, { g_out0: { name: 'g_out0', key: o.key, offset: '128', byte_size: '64' } });

  const res = await inferSimple(shm('g_in0', 64), shm('g_in1', 64), [
    { name: 'OUTPUT0', parameters: shm('g_out0', 64) },
    { name: 'OUTPUT1', parameters: shm('g_out1', 64) },
  ]);
  assert.deepEqual(res.outputs.map((t: any) => [t.name, t.datatype, t.shape]), [['OUTPUT0', 'INT32', ['1', '16']], ['OUTPUT1', 'INT32', ['1', '16']]]);
  assert.deepEqual(res.raw_output_contents.map((b: Buffer) => b.byteLength), [0, 0]);
  assert.deepEqual(readInt32(o.path, 128), A.map((a, i) => a + B[i]!));
  assert.deepEqual(readInt32(o.path, 192), A.map((a, i) => a - B[i]!));

  // Shared memory mixes with raw contents: INPUT1 raw, OUTPUT1 returned in the response.
  const mixed = await unary(s.client, 'ModelInfer', {
    model_name: 'simple',
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: shm('g_in0', 64) },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
    ],
    raw_input_contents: [int32Bytes(A)],
    outputs: [{ name: 'OUTPUT0', parameters: shm('g_out0', 64) }, { name: 'OUTPUT1' }],
  });
  assert.equal(mixed.raw_output_contents[0].byteLength, 0);
  assert.deepEqual(int32s(mixed.raw_output_contents[1]), A.map(() => 0));
  assert.deepEqual(readInt32(o.path, 128), A.map((a) => 2 * a));

  await unary(s.client, 'SystemSharedMemoryUnregister', {});
  assert.deepEqual((await unary(s.client, 'SystemSharedMemoryStatus', {})).regions, {});
});

test('offsets inside a region are relative to it; a region may start inside its object', async () => {
  const o = object(4096 + 256);
  const bytes = readFileSync(o.path);
  int32Bytes(A).copy(bytes, 4096 + 32);
  int32Bytes(B).copy(bytes, 4096 + 96);
  writeFileSync(o.path, bytes);
  await register('inner', o.key, 256, 4096);
  await inferSimple(shm('inner', 64, 32), shm('inner', 64, 96), [{ name: 'OUTPUT0', parameters: shm('inner', 64, 160) }]);
  assert.deepEqual(readInt32(o.path, 4096 + 160), A.map((a, i) => a + B[i]!));
  await unary(s.client, 'SystemSharedMemoryUnregister', { name: 'inner' });
});

test('errors: unknown region, region too small, offset past the end; the server keeps serving', async () => {
  const o = object(Buffer.concat([int32Bytes(A), int32Bytes(B), Buffer.alloc(64)]));
  await register('e', o.key, 192);
  const cases: [object, object | undefined, grpc.status, string][] = [
    [shm('nope', 64), undefined, grpc.status.NOT_FOUND, "Unable to find shared memory region: 'nope'"],
    [shm('e', 64, 192), undefined, grpc.status.INVALID_ARGUMENT, "Invalid offset for shared memory region: 'e'"],
    [shm('e', 64, 1000), undefined, grpc.status.INVALID_ARGUMENT, "Invalid offset for shared memory region: 'e'"],
    [shm('e', 64, 160), undefined, grpc.status.INVALID_ARGUMENT, "Invalid offset + byte size for shared memory region: 'e'"],
    [shm('e', 32), undefined, grpc.status.INVALID_ARGUMENT, "input byte size mismatch for input 'INPUT0' for model 'simple'. Expected 64, got 32"],
    [shm('e', 64), shm('nope', 64), grpc.status.NOT_FOUND, "Unable to find shared memory region: 'nope'"],
    [shm('e', 64), shm('e', 64, 192), grpc.status.INVALID_ARGUMENT, "Invalid offset for shared memory region: 'e'"],
    [shm('e', 64), shm('e', 64, 160), grpc.status.INVALID_ARGUMENT, "Invalid offset + byte size for shared memory region: 'e'"],
    [shm('e', 64), shm('e', 32, 128), grpc.status.INTERNAL,
      "shared memory size specified with the request for output 'OUTPUT0' (32 bytes) should be at least 64 bytes to hold the results"],
  ];
  for (const [in0, out0, code, message] of cases) {
    const err = await failure(inferSimple(in0, shm('e', 64, 64), out0 ? [{ name: 'OUTPUT0', parameters: out0 }] : []));
    assert.equal(err.code, code, `${JSON.stringify([in0, out0])}: ${err.details}`);
    assert.equal(err.details, message, JSON.stringify([in0, out0]));
  }
  // A region larger than its object cannot be registered at all.
  const big = await failure(register('too_big', o.key, 193));
  assert.equal(big.code, grpc.status.INVALID_ARGUMENT);
  assert.equal(big.details, "failed to register shared memory region 'too_big': invalid args");

  // Failed requests gave the region back: unregister takes effect at once, and inference goes on.
  await unary(s.client, 'SystemSharedMemoryUnregister', { name: 'e' });
  assert.equal((await failure(unary(s.client, 'SystemSharedMemoryStatus', { name: 'e' }))).code, grpc.status.NOT_FOUND);
  const ok = await unary(s.client, 'ModelInfer', {
    model_name: 'simple',
    inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }],
    raw_input_contents: [int32Bytes(A), int32Bytes(B)],
  });
  assert.deepEqual(int32s(ok.raw_output_contents[0]), A.map((a, i) => a + B[i]!));
});

test('with client shared memory disabled (the default), a request naming a region gets Triton\'s answer', async () => {
  const off = await startGrpcTestServer({ modelRepositories: [repo.dir] });
  try {
    const o = object(Buffer.concat([int32Bytes(A), int32Bytes(B)]));
    const reg = await failure(unary(off.client, 'SystemSharedMemoryRegister', { name: 'r', key: o.key, byte_size: 128 }));
    assert.equal(reg.code, grpc.status.UNIMPLEMENTED);
    assert.equal(reg.details, SHM_DISABLED);
    for (const outputs of [[], [{ name: 'OUTPUT0', parameters: shm('r', 64) }]]) {
      const err = await failure(unary(off.client, 'ModelInfer', {
        model_name: 'simple',
        inputs: [
          { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: outputs.length ? {} : shm('r', 64) },
          { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
        ],
        raw_input_contents: outputs.length ? [int32Bytes(A), int32Bytes(B)] : [int32Bytes(B)],
        outputs,
      }));
      assert.equal(err.code, grpc.status.UNIMPLEMENTED);
      assert.equal(err.details, SHM_DISABLED);
    }
  } finally {
    await off.close();
  }
});

test('CUDA shared memory answers as a Triton built without GPUs: register fails clearly, status is empty, unregister succeeds', async () => {
  const reg = await failure(unary(s.client, 'CudaSharedMemoryRegister', { name: 'gpu0', raw_handle: Buffer.alloc(64), device_id: 0, byte_size: 64 }));
  assert.equal(reg.code, grpc.status.INVALID_ARGUMENT);
  assert.equal(reg.details, "failed to register CUDA shared memory region: 'gpu0', GPUs not supported");
  assert.deepEqual((await unary(s.client, 'CudaSharedMemoryStatus', {})).regions, {});
  assert.equal((await failure(unary(s.client, 'CudaSharedMemoryStatus', { name: 'gpu0' }))).code, grpc.status.NOT_FOUND);
  // Triton's shm examples unregister everything, CUDA included, before and after they run.
  assert.deepEqual(await unary(s.client, 'CudaSharedMemoryUnregister', {}), {});
  assert.deepEqual(await unary(s.client, 'CudaSharedMemoryUnregister', { name: 'gpu0' }), {});
});

test('an input in a region must not carry contents as well', async () => {
  const o = object(Buffer.concat([int32Bytes(A), int32Bytes(B)]));
  await register('c', o.key, 128);
  const err = await failure(unary(s.client, 'ModelInfer', {
    model_name: 'simple',
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: shm('c', 64), contents: { int_contents: A } },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: shm('c', 64, 64) },
    ],
  }));
  assert.equal(err.code, grpc.status.INVALID_ARGUMENT);
  assert.equal(err.details, "unexpected 'content' provided when using shared memory for input tensor 'INPUT0' for model 'simple'");
  await unary(s.client, 'SystemSharedMemoryUnregister', { name: 'c' });
});
