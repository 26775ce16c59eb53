import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EXAMPLES } from '../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../helpers/server.js';
import { postJson, request } from '../helpers/http.js';
import { connect, unary, type Client } from '../helpers/grpc.js';
import { startGrpcFrontend, type GrpcFrontend } from '../../src/frontends/grpc/server.js';
import { createLogger } from '../../src/observability/logger.js';

// unload_dependents as Triton's dependency graph has it: unloading an ensemble with it also unloads the models
// the ensemble ran on, each that was not loaded by name and that no other loaded ensemble runs on.

const ensemble = (name: string) => `
name: "${name}"
platform: "ensemble"
max_batch_size: 8
input [ { name: "A" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "B" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "SUM" data_type: TYPE_INT32 dims: [ 16 ] } ]
ensemble_scheduling {
  step [ { model_name: "simple" model_version: -1
    input_map { key: "INPUT0" value: "A" } input_map { key: "INPUT1" value: "B" } output_map { key: "OUTPUT0" value: "SUM" } } ]
}
`;

let repo: { dir: string; remove(): Promise<void> };
let s: TestServer;
let frontend: GrpcFrontend;
let client: Client;
before(async () => {
  repo = await tempRepository([{ from: join(EXAMPLES, 'simple') }]);
  for (const name of ['chain', 'chain2']) {
    await mkdir(join(repo.dir, name, '1'), { recursive: true });
    await writeFile(join(repo.dir, name, 'config.pbtxt'), ensemble(name));
  }
  s = await startTestServer({ modelRepositories: [repo.dir], modelControlMode: 'explicit' });
  frontend = await startGrpcFrontend(s.server, { port: 0, address: '127.0.0.1' }, createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' }));
  client = connect(frontend.port);
});
after(async () => {
  client.close();
  await s.close();
  await frontend.close();
  await repo.remove();
});

const ready = async (m: string) => (await request(`${s.url}/v2/models/${m}/ready`)).status === 200;
const load = async (m: string) => assert.equal((await postJson(`${s.url}/v2/repository/models/${m}/load`, {})).status, 200, m);

/** Unloads over HTTP or gRPC, with or without unload_dependents. */
async function unload(via: 'http' | 'grpc', m: string, dependents?: boolean): Promise<void> {
  if (via === 'http') {
    const body = dependents === undefined ? {} : { parameters: { unload_dependents: dependents } };
    assert.equal((await postJson(`${s.url}/v2/repository/models/${m}/unload`, body)).status, 200);
  } else {
    const parameters = dependents === undefined ? {} : { unload_dependents: { bool_param: dependents } };
    await unary(client, 'RepositoryModelUnload', { model_name: m, parameters });
  }
}

for (const via of ['http', 'grpc'] as const) {
  test(`${via}: unload_dependents unloads the composing model the ensemble loaded`, async () => {
    await load('chain');
    assert.ok(await ready('simple'));
    await unload(via, 'chain', true);
    assert.ok(!(await ready('chain')));
    assert.ok(!(await ready('simple')));
  });

  test(`${via}: without unload_dependents, or false, the composing model stays`, async () => {
    for (const flag of [undefined, false]) {
      await load('chain');
      await unload(via, 'chain', flag);
      assert.ok(!(await ready('chain')));
      assert.ok(await ready('simple'), String(flag));
      await unload(via, 'simple');
    }
  });

  test(`${via}: a composing model loaded by name, or still run on by another ensemble, stays`, async () => {
    await load('simple');
    await load('chain');
    await unload(via, 'chain', true);
    assert.ok(await ready('simple'));
    await unload(via, 'simple');

    await load('chain');
    await load('chain2');
    await unload(via, 'chain', true);
    assert.ok(await ready('simple'));
    assert.ok(await ready('chain2'));
    await unload(via, 'chain2', true);
    assert.ok(!(await ready('simple')));
  });
}
