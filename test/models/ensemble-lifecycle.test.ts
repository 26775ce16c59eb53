import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cp, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EXAMPLES } from '../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../helpers/server.js';
import { postJson, request } from '../helpers/http.js';
import { connect, unary } from '../helpers/grpc.js';
import { startGrpcFrontend } from '../../src/frontends/grpc/server.js';
import { createLogger } from '../../src/observability/logger.js';

// Triton's dependency graph ties an ensemble to the models its steps run on (core model_repository_manager.cc,
// DependencyGraph and LoadModelByDependency): when one of them stops serving, the ensemble is unloaded; when it
// serves again, the ensemble loads again, unless the ensemble itself was unloaded by name meanwhile
// (qa/L0_lifecycle lifecycle_test.py test_model_control, test_model_control_ensemble and
// test_multiple_model_repository_control_startup_models).

/** An ensemble of one step, SUM = A + B, on `step` (the example `simple`, or another such ensemble). */
const ensemble = (name: string, step: string) => `
name: "${name}"
platform: "ensemble"
max_batch_size: 8
input [ { name: "A" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "B" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "SUM" data_type: TYPE_INT32 dims: [ 16 ] } ]
ensemble_scheduling {
  step [ { model_name: "${step}" model_version: -1
    input_map { key: "${step === 'simple' ? 'INPUT0' : 'A'}" value: "A" } input_map { key: "${step === 'simple' ? 'INPUT1' : 'B'}" value: "B" }
    output_map { key: "${step === 'simple' ? 'OUTPUT0' : 'SUM'}" value: "SUM" } } ]
}
`;

async function withRepo(mode: 'explicit' | 'poll', body: (s: TestServer, dir: string) => Promise<void>): Promise<void> {
  const repo = await tempRepository([{ from: join(EXAMPLES, 'simple') }]);
  for (const [name, step] of [['chain', 'simple'], ['outer', 'chain']] as const) {
    await mkdir(join(repo.dir, name, '1'), { recursive: true });
    await writeFile(join(repo.dir, name, 'config.pbtxt'), ensemble(name, step));
  }
  const s = await startTestServer({ modelRepositories: [repo.dir], modelControlMode: mode, repositoryPollSecs: 0 });
  try {
    await body(s, repo.dir);
  } finally {
    await s.close();
    await repo.remove();
  }
}

const ready = async (s: TestServer, m: string) => (await request(`${s.url}/v2/models/${m}/ready`)).status === 200;
const load = async (s: TestServer, m: string) => assert.equal((await postJson(`${s.url}/v2/repository/models/${m}/load`, {})).status, 200, `load ${m}`);
const unload = async (s: TestServer, m: string, parameters?: object) =>
  assert.equal((await postJson(`${s.url}/v2/repository/models/${m}/unload`, parameters ? { parameters } : {})).status, 200, `unload ${m}`);
const indexOf = async (s: TestServer, m: string) => ((await postJson(`${s.url}/v2/repository/index`, {})).json() as any[]).filter((e) => e.name === m);
const infer = (s: TestServer, m: string) =>
  postJson(`${s.url}/v2/models/${m}/infer`, {
    inputs: [{ name: 'A', shape: [1, 16], datatype: 'INT32', data: new Array(16).fill(1) }, { name: 'B', shape: [1, 16], datatype: 'INT32', data: new Array(16).fill(2) }],
  });

async function assertAnswers(s: TestServer, m: string): Promise<void> {
  const r = await infer(s, m);
  assert.equal(r.status, 200, r.body.toString());
  assert.deepEqual(r.json().outputs[0].data, new Array(16).fill(3));
}

async function assertUnloaded(s: TestServer, m: string): Promise<void> {
  assert.ok(!(await ready(s, m)), `${m} is not ready`);
  assert.deepEqual(await indexOf(s, m), [{ name: m, version: '1', state: 'UNAVAILABLE', reason: 'unloaded' }]);
  const r = await infer(s, m);
  assert.notEqual(r.status, 200);
  assert.equal(r.json().error, `Request for unknown model: '${m}' has no available versions`);
}

test('explicit: unloading a composing model unloads the ensembles on it; loading it again brings them back', () => withRepo('explicit', async (s) => {
  await load(s, 'outer');
  for (const m of ['simple', 'chain', 'outer']) assert.ok(await ready(s, m), m);
  await unload(s, 'simple');
  // The ensemble on it goes, and the ensemble on that ensemble too.
  for (const m of ['simple', 'chain', 'outer']) await assertUnloaded(s, m);
  await load(s, 'simple');
  for (const m of ['chain', 'outer']) await assertAnswers(s, m);
  // An ensemble unloaded by name while its composing model is gone stays unloaded when that model comes back;
  // the ensemble on it waits for it, and comes back when it is loaded by name.
  await unload(s, 'simple');
  await unload(s, 'chain');
  await load(s, 'simple');
  for (const m of ['chain', 'outer']) await assertUnloaded(s, m);
  await load(s, 'chain');
  for (const m of ['chain', 'outer']) await assertAnswers(s, m);
}));

test('explicit: unload_dependents on a composing model unloads the ensemble on it as well', () => withRepo('explicit', async (s) => {
  await load(s, 'chain');
  await unload(s, 'simple', { unload_dependents: true });
  await assertUnloaded(s, 'chain');
  await load(s, 'simple');
  await assertAnswers(s, 'chain');
}));

test('explicit: unloading a model that was never loaded, or does not exist, succeeds (HTTP and gRPC)', () => withRepo('explicit', async (s) => {
  const logger = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
  const frontend = await startGrpcFrontend(s.server, { port: 0, address: '127.0.0.1' }, logger);
  const client = connect(frontend.port);
  try {
    for (const m of ['chain', 'no_such_model']) {
      await unload(s, m);
      await unary(client, 'RepositoryModelUnload', { model_name: m });
    }
    await load(s, 'chain');
    await unload(s, 'chain');
    await unload(s, 'chain'); // again, once unloaded
  } finally {
    client.close();
    await frontend.close();
  }
}));

test('poll: a composing model removed from the repository unloads the ensembles on it; put back, they load again', () => withRepo('poll', async (s, dir) => {
  for (const m of ['simple', 'chain', 'outer']) assert.ok(await ready(s, m), m);
  await rm(join(dir, 'simple'), { recursive: true });
  await s.server.pollRepository();
  for (const m of ['chain', 'outer']) await assertUnloaded(s, m);
  // A poll that changes nothing leaves them as they are.
  await s.server.pollRepository();
  for (const m of ['chain', 'outer']) await assertUnloaded(s, m);
  await cp(join(EXAMPLES, 'simple'), join(dir, 'simple'), { recursive: true });
  await s.server.pollRepository();
  for (const m of ['chain', 'outer']) await assertAnswers(s, m);
}));

test('explicit: an ensemble loaded from file overrides whose composing model is unloaded goes for good, and the unload ends', () => withRepo('explicit', async (s) => {
  // Its files are gone with it (removed when it is unloaded), so it has no folder to load again from.
  const config = JSON.stringify({
    name: 'from_files', platform: 'ensemble', max_batch_size: 8,
    input: [{ name: 'A', data_type: 'TYPE_INT32', dims: [16] }, { name: 'B', data_type: 'TYPE_INT32', dims: [16] }],
    output: [{ name: 'SUM', data_type: 'TYPE_INT32', dims: [16] }],
    ensemble_scheduling: { step: [{ model_name: 'simple', model_version: -1, input_map: { INPUT0: 'A', INPUT1: 'B' }, output_map: { OUTPUT0: 'SUM' } }] },
  });
  const files = { 'file:1/notes.txt': Buffer.from('notes').toString('base64') };
  const loaded = await postJson(`${s.url}/v2/repository/models/from_files/load`, { parameters: { config, ...files } });
  assert.equal(loaded.status, 200, loaded.body.toString());
  await assertAnswers(s, 'from_files');
  // The ensemble is unloaded while the unload of its composing model runs: that must not wait on itself.
  const hung = new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 20_000).unref());
  const status = await Promise.race([postJson(`${s.url}/v2/repository/models/simple/unload`, {}).then((r) => r.status), hung]);
  assert.equal(status, 200);
  await assertUnloaded(s, 'from_files');
  await load(s, 'simple');
  await assertUnloaded(s, 'from_files');
}));
