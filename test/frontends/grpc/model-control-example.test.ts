import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { EXAMPLES } from '../../helpers/paths.js';
import { tempRepository } from '../../helpers/server.js';
import { failure, startGrpcTestServer, unary, type GrpcTestServer } from '../../helpers/grpc.js';

// Triton's client example simple_grpc_model_control.py, request by request, with the checks it makes: a server in
// explicit mode over a repository of eight models, of which the example loads, reconfigures and unloads `simple`.

const EIGHT = ['simple', 'simple_identity', 'simple_int8', 'simple_string', 'simple_sequence', 'simple_dyna_sequence', 'repeat_int32', 'custom_identity_int32'];

let s: GrpcTestServer;
let repo: { dir: string; remove(): Promise<void> };
before(async () => {
  repo = await tempRepository(EIGHT.map((m) => ({ from: join(EXAMPLES, m) })));
  s = await startGrpcTestServer({ modelRepositories: [repo.dir], modelControlMode: 'explicit' });
});
after(async () => {
  await s.close();
  await repo.remove();
});

const load = (model_name: string, parameters: Record<string, unknown> = {}) => unary(s.client, 'RepositoryModelLoad', { model_name, parameters });
const ready = async (name: string) => (await unary(s.client, 'ModelReady', { name })).ready as boolean;

test('simple_grpc_model_control.py: every step answers as the example expects, so it prints PASS', async () => {
  const index = await unary(s.client, 'RepositoryIndex', {});
  assert.equal(index.models.length, 8, JSON.stringify(index));

  await load('simple');
  assert.ok(await ready('simple'));

  const bad = await failure(load('simple', { config: { string_param: '"parameters": {"config": {{"max_batch_size": "16"}}}' } }));
  assert.equal(bad.code, grpc.status.INVALID_ARGUMENT);
  assert.match(bad.details, /^failed to load 'simple', failed to poll from model repository: Invalid config override: /);

  await load('simple', { config: { string_param: '{"max_batch_size":"16"}' } });
  const config = await unary(s.client, 'ModelConfig', { name: 'simple' });
  assert.equal(config.config.max_batch_size, 16);

  await unary(s.client, 'RepositoryModelUnload', { model_name: 'simple' });
  assert.ok(!(await ready('simple')));

  // A path component longer than NAME_MAX: Triton answers INTERNAL and keeps serving.
  const long = await failure(load('simple', { config: { string_param: '{}' }, [`file:${'A'.repeat(256)}`]: { bytes_param: Buffer.from('a') } }));
  assert.equal(long.code, grpc.status.INTERNAL, long.details);
  assert.equal(long.details, "failed to load 'simple', failed to poll from model repository");
  assert.equal((await unary(s.client, 'ServerLive', {})).live, true);

  const wrong = await failure(load('wrong_model_name'));
  assert.match(wrong.details, /failed to load/);
});

// Triton's ModelIsReady (core server.cc) answers ready=false with an OK status for any name it cannot serve, and
// L0_lifecycle's explicit-mode tests assert is_model_ready() is False for models in the repository not yet loaded.
test('ModelReady: a model in the repository but not loaded, and a name in no repository, answer ready: false', async () => {
  assert.deepEqual(await unary(s.client, 'ModelReady', { name: 'simple_int8' }), { ready: false });
  assert.deepEqual(await unary(s.client, 'ModelReady', { name: 'simple_int8', version: '1' }), { ready: false });
  assert.deepEqual(await unary(s.client, 'ModelReady', { name: 'not_in_any_repository' }), { ready: false });
});
