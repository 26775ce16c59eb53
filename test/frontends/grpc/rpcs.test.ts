import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { EXAMPLES } from '../../helpers/paths.js';
import { tempRepository } from '../../helpers/server.js';
import { HealthClient, failure, startGrpcTestServer, unary, type GrpcTestServer } from '../../helpers/grpc.js';

// Every RPC other than inference, against a server in explicit model-control mode.

let repo: { dir: string; remove(): Promise<void> };
let s: GrpcTestServer;
before(async () => {
  repo = await tempRepository([{ from: join(EXAMPLES, 'simple') }, { from: join(EXAMPLES, 'simple_sequence') }]);
  s = await startGrpcTestServer({ modelRepositories: [repo.dir], modelControlMode: 'explicit', loadModels: ['simple'], strictReadiness: false });
});
after(async () => {
  await s.close();
  await repo.remove();
});

const code = async (p: Promise<unknown>): Promise<[grpc.status, string]> => {
  const e = await failure(p);
  return [e.code, e.details];
};

test('ServerLive, ServerReady, ServerMetadata, grpc.health.v1 Check', async () => {
  assert.deepEqual(await unary(s.client, 'ServerLive', {}), { live: true });
  assert.deepEqual(await unary(s.client, 'ServerReady', {}), { ready: true });
  const md = await unary(s.client, 'ServerMetadata', {});
  assert.equal(md.name, 'triton');
  assert.ok(md.extensions.includes('model_repository'));
  assert.ok(md.extensions.includes('sequence'));
  const health = new HealthClient(`127.0.0.1:${s.grpc.port}`, grpc.credentials.createInsecure()) as any;
  const res = await new Promise<any>((resolve, reject) => health.Check({ service: '' }, (e: Error | null, r: unknown) => (e ? reject(e) : resolve(r))));
  health.close();
  assert.equal(res.status, 'SERVING');
});

test('ModelReady: true, false for an unknown model (as Triton\'s ModelIsReady), INVALID_ARGUMENT for a bad version (false after an unload: below)', async () => {
  assert.deepEqual(await unary(s.client, 'ModelReady', { name: 'simple' }), { ready: true });
  assert.deepEqual(await unary(s.client, 'ModelReady', { name: 'simple', version: '1' }), { ready: true });
  assert.deepEqual(await unary(s.client, 'ModelReady', { name: 'nope' }), { ready: false });
  assert.equal((await code(unary(s.client, 'ModelReady', { name: 'simple', version: 'v1' })))[0], grpc.status.INVALID_ARGUMENT);
});

test('ModelMetadata matches the HTTP form', async () => {
  const md = await unary(s.client, 'ModelMetadata', { name: 'simple' });
  assert.deepEqual(md, {
    name: 'simple', versions: ['1'], platform: 'onnxruntime_onnx',
    inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: ['-1', '16'] }, { name: 'INPUT1', datatype: 'INT32', shape: ['-1', '16'] }],
    outputs: [{ name: 'OUTPUT0', datatype: 'INT32', shape: ['-1', '16'] }, { name: 'OUTPUT1', datatype: 'INT32', shape: ['-1', '16'] }],
  });
});

test('ModelConfig answers the protobuf message', async () => {
  const { config } = await unary(s.client, 'ModelConfig', { name: 'simple' });
  assert.equal(config.name, 'simple');
  assert.equal(config.max_batch_size, 8);
  assert.deepEqual(config.input.map((i: any) => [i.name, i.data_type, i.dims]), [['INPUT0', 'TYPE_INT32', ['16']], ['INPUT1', 'TYPE_INT32', ['16']]]);
  assert.equal(config.instance_group[0].kind, 'KIND_CPU');
  assert.equal(config.scheduling_choice, undefined);
});

test('ModelStatistics: all models, one model, unknown model', async () => {
  const all = await unary(s.client, 'ModelStatistics', {});
  assert.deepEqual(all.model_stats.map((m: any) => m.name), ['simple']);
  const one = await unary(s.client, 'ModelStatistics', { name: 'simple', version: '1' });
  assert.equal(one.model_stats[0].version, '1');
  assert.ok(one.model_stats[0].inference_stats.success);
  assert.equal((await code(unary(s.client, 'ModelStatistics', { name: 'simple_sequence' })))[0], grpc.status.INVALID_ARGUMENT);
});

test('RepositoryIndex, RepositoryModelLoad (with a config override), RepositoryModelUnload', async () => {
  const index = await unary(s.client, 'RepositoryIndex', {});
  assert.deepEqual(index.models.map((m: any) => [m.name, m.state]), [['simple', 'READY'], ['simple_sequence', '']]);
  assert.equal((await code(unary(s.client, 'RepositoryIndex', { repository_name: 'other' })))[0], grpc.status.UNIMPLEMENTED);

  await unary(s.client, 'RepositoryModelLoad', { model_name: 'simple_sequence' });
  assert.deepEqual(await unary(s.client, 'ModelReady', { name: 'simple_sequence' }), { ready: true });

  // The config override is the JSON form, as Triton's clients send it.
  const config = JSON.stringify({ ...s.server.modelConfigJson('simple'), max_batch_size: 4 });
  await unary(s.client, 'RepositoryModelLoad', { model_name: 'simple', parameters: { config: { string_param: config } } });
  assert.equal((await unary(s.client, 'ModelConfig', { name: 'simple' })).config.max_batch_size, 4);

  const onnx = await readFile(join(repo.dir, 'simple', '1', 'model.onnx'));
  await unary(s.client, 'RepositoryModelLoad', {
    model_name: 'simple_copy',
    parameters: { config: { string_param: config.replace('"name":"simple"', '"name":"simple_copy"') }, 'file:1/model.onnx': { bytes_param: onnx } },
  });
  assert.deepEqual(await unary(s.client, 'ModelReady', { name: 'simple_copy' }), { ready: true });

  assert.deepEqual(await code(unary(s.client, 'RepositoryModelLoad', { model_name: 'simple', parameters: { config: { bytes_param: Buffer.from('{}') } } })),
    [grpc.status.INVALID_ARGUMENT, "invalid value type for load parameter 'config', expected string_param."]);
  assert.equal((await code(unary(s.client, 'RepositoryModelLoad', { model_name: 'simple', parameters: { other: { string_param: 'x' } } })))[0], grpc.status.INVALID_ARGUMENT);

  await unary(s.client, 'RepositoryModelUnload', { model_name: 'simple_sequence', parameters: { unload_dependents: { bool_param: true } } });
  assert.deepEqual(await unary(s.client, 'ModelReady', { name: 'simple_sequence' }), { ready: false });
  // An unloaded model has no available version: NOT_FOUND, as in Triton (not UNAVAILABLE, which clients retry).
  assert.deepEqual(await code(unary(s.client, 'ModelMetadata', { name: 'simple_sequence' })),
    [grpc.status.NOT_FOUND, "Request for unknown model: 'simple_sequence' has no available versions"]);
});

test('shared memory: status answers, register and unregister as the server allows', async () => {
  const status = await unary(s.client, 'SystemSharedMemoryStatus', {});
  assert.deepEqual(status.regions, {});
  assert.equal((await code(unary(s.client, 'SystemSharedMemoryStatus', { name: 'r' })))[0], grpc.status.NOT_FOUND);
  assert.deepEqual((await unary(s.client, 'CudaSharedMemoryStatus', {})).regions, {});
  // Client shared memory is off by default (--allow-client-shm=false), as in Triton.
  for (const [rpc, req] of [['SystemSharedMemoryRegister', { name: 'r', key: '/r', byte_size: 64 }], ['SystemSharedMemoryUnregister', {}], ['CudaSharedMemoryRegister', { name: 'c', byte_size: 64 }]] as const) {
    const [c, details] = await code(unary(s.client, rpc, req));
    assert.equal(c, grpc.status.UNIMPLEMENTED, rpc);
    assert.match(details, /Client shared memory is disabled/);
  }
});

test('TraceSetting answers with the setting in force, each value a list', async () => {
  const r = await unary(s.client, 'TraceSetting', { settings: {} });
  assert.deepEqual(r.settings.trace_level.value, ['OFF']);
  assert.deepEqual(r.settings.trace_rate.value, ['1000']);
  assert.deepEqual(r.settings.trace_mode.value, ['triton']);
  assert.deepEqual(await code(unary(s.client, 'TraceSetting', { settings: { trace_rate: { value: ['1', '2'] } } })), [grpc.status.INVALID_ARGUMENT, "expect only 1 value for 'trace_rate'"]);
});

test('LogSettings reads and updates the log settings; wrong types are INVALID_ARGUMENT', async () => {
  const current = await unary(s.client, 'LogSettings', {});
  assert.equal(current.settings.log_info.bool_param, false);
  assert.equal(current.settings.log_format.string_param, 'default');
  const updated = await unary(s.client, 'LogSettings', { settings: { log_verbose_level: { uint32_param: 2 }, log_format: { string_param: 'ISO8601' } } });
  assert.equal(updated.settings.log_verbose_level.uint32_param, 2);
  assert.equal(s.logger.settings().log_format, 'ISO8601');
  assert.equal((await code(unary(s.client, 'LogSettings', { settings: { log_info: { string_param: 'yes' } } })))[0], grpc.status.INVALID_ARGUMENT);
  assert.equal((await code(unary(s.client, 'LogSettings', { settings: { log_format: { string_param: 'json' } } })))[0], grpc.status.INVALID_ARGUMENT);
  assert.equal((await code(unary(s.client, 'LogSettings', { settings: { log_file: { string_param: '/tmp/x' } } })))[0], grpc.status.UNIMPLEMENTED);
  await unary(s.client, 'LogSettings', { settings: { log_verbose_level: { uint32_param: 0 }, log_format: { string_param: 'default' } } });
});

test('--grpc-restricted-protocol: a restricted category needs its header', async () => {
  const r = await startGrpcTestServer({ modelRepositories: [repo.dir], modelControlMode: 'explicit' }, { restricted: [{ categories: ['health', 'model-repository'], key: 'admin-key', value: 'secret' }] });
  try {
    assert.deepEqual(await code(unary(r.client, 'ServerLive', {})), [grpc.status.UNAVAILABLE, "This protocol is restricted, expecting header 'admin-key'"]);
    const md = new grpc.Metadata();
    md.set('triton-grpc-protocol-admin-key', 'secret');
    assert.deepEqual(await unary(r.client, 'ServerLive', {}, { metadata: md }), { live: true });
    assert.equal((await unary(r.client, 'ServerMetadata', {})).name, 'triton');
  } finally {
    await r.close();
  }
});
