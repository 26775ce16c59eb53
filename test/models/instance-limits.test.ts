import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { EXAMPLES } from '../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../helpers/server.js';
import { postJson, request } from '../helpers/http.js';
import { connect, failure, unary, type Client } from '../helpers/grpc.js';
import { parseExposition } from '../frontends/metrics/scrape.js';
import { startGrpcFrontend, type GrpcFrontend } from '../../src/frontends/grpc/server.js';
import { createLogger } from '../../src/observability/logger.js';

// What a client can make the server hold through the load API is bounded: instances per model version
// (--model-max-instances), instances of the whole server (--server-max-instances), and the temporary folder of a
// load with file overrides, which goes when the load fails.

let s: TestServer;
let g: GrpcFrontend;
let client: Client;
let repo: { dir: string; remove(): Promise<void> };

before(async () => {
  repo = await tempRepository([{ from: join(EXAMPLES, 'simple') }, { from: join(EXAMPLES, 'simple'), name: 'simple2' }]);
  s = await startTestServer({ modelRepositories: [repo.dir], modelControlMode: 'explicit', modelMaxInstances: 4, serverMaxInstances: 5, metrics: {} });
  g = await startGrpcFrontend(s.server, { port: 0, address: '127.0.0.1' }, createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' }));
  client = connect(g.port);
});

after(async () => {
  client.close();
  await s.close();
  await g.close();
  await repo.remove();
});

async function simpleConfig(count: number): Promise<string> {
  const { parseModelConfig, modelConfigToJson } = await import('../../src/config/index.js');
  const file = join(repo.dir, 'simple', 'config.pbtxt');
  const cfg: any = modelConfigToJson(parseModelConfig(await readFile(file, 'utf8'), file));
  cfg.instance_group = [{ kind: 'KIND_CPU', count }];
  return JSON.stringify(cfg);
}

async function refusals(limit: string): Promise<number> {
  return parseExposition(await s.server.metricsText()).find('nereid_limit_refusal_count', { limit }).reduce((n, x) => n + x.value, 0);
}

test('an instance_group count past --model-max-instances fails the load, naming the limit, and is counted (HTTP and gRPC)', async () => {
  const r = await postJson(`${s.url}/v2/repository/models/simple/load`, { parameters: { config: await simpleConfig(100000) } });
  assert.equal(r.status, 400, r.body.toString());
  assert.match(r.json().error, /100000 instances.*at most 4 \(--model-max-instances\)/);
  const e = await failure(unary(client, 'RepositoryModelLoad', { model_name: 'simple', parameters: { config: { string_param: await simpleConfig(5) } } }));
  assert.equal(e.code, grpc.status.INVALID_ARGUMENT, e.details);
  assert.match(e.details, /--model-max-instances/);
  assert.equal(await refusals('model-max-instances'), 2);
  assert.notEqual((await request(`${s.url}/v2/models/simple/ready`)).status, 200);
});

test('instances of all models together stop at --server-max-instances; an unload gives them back', async () => {
  assert.equal((await postJson(`${s.url}/v2/repository/models/simple/load`, { parameters: { config: await simpleConfig(3) } })).status, 200);
  const r = await postJson(`${s.url}/v2/repository/models/simple2/load`, { parameters: { config: (await simpleConfig(3)).replace('"simple"', '"simple2"') } });
  assert.equal(r.status, 400, r.body.toString());
  assert.match(r.json().error, /3 of the server's 5 are in use \(--server-max-instances\)/);
  assert.equal(await refusals('server-max-instances'), 1);
  assert.equal((await request(`${s.url}/v2/models/simple/ready`)).status, 200);
  assert.equal((await postJson(`${s.url}/v2/repository/models/simple/unload`, {})).status, 200);
  const again = await postJson(`${s.url}/v2/repository/models/simple2/load`, { parameters: { config: (await simpleConfig(3)).replace('"simple"', '"simple2"') } });
  assert.equal(again.status, 200, again.body.toString());
  assert.equal((await postJson(`${s.url}/v2/repository/models/simple2/unload`, {})).status, 200);
});

test('a file-override load that ONNX Runtime refuses leaves no temporary folder behind', async () => {
  const own = await mkdtemp(join(tmpdir(), 'nereid-test-tmp-'));
  const saved = process.env['TMPDIR'];
  process.env['TMPDIR'] = own; // where this server (in this process) puts override folders
  try {
    const cfg = JSON.stringify({ name: 'broken', backend: 'onnxruntime', max_batch_size: 0,
      input: [{ name: 'X', data_type: 'TYPE_INT32', dims: [4] }], output: [{ name: 'Y', data_type: 'TYPE_INT32', dims: [4] }] });
    for (let i = 0; i < 3; i++) {
      const r = await postJson(`${s.url}/v2/repository/models/broken/load`, { parameters: { config: cfg, 'file:1/model.onnx': Buffer.from('not an onnx model').toString('base64') } });
      assert.equal(r.status, 400, r.body.toString());
      assert.match(r.json().error, /onnx runtime error/);
      assert.ok(!r.json().error.includes(own), r.json().error);
    }
    assert.deepEqual(await readdir(own), []);
  } finally {
    if (saved === undefined) delete process.env['TMPDIR'];
    else process.env['TMPDIR'] = saved;
    await rm(own, { recursive: true, force: true });
  }
});
