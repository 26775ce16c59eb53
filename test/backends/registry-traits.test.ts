import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { InferenceServer } from '../../src/server/inference-server.js';
import { startHttpFrontend, type HttpFrontend } from '../../src/frontends/http/server.js';
import { defaultBackends } from '../../src/backends/registry.js';
import { identityBackend } from '../../src/backends/identity/backend.js';
import { createLogger } from '../../src/observability/logger.js';
import { EXAMPLES } from '../helpers/paths.js';
import { tempRepository } from '../helpers/server.js';
import { request } from '../helpers/http.js';

// A backend's default CPU instance count is a trait of its registration, as Triton's backends opt into more
// than one instance (core's SetDefaultInstanceCount): a backend an application registers brings its own, and
// ONNX Runtime's two come from its line in the registry, not from a test of its name in the loader.

let repo: { dir: string; remove(): Promise<void> };
let server: InferenceServer;
let http: HttpFrontend;
let url: string;
const created: string[] = [];

const IO = 'input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]\noutput [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]\n';

async function model(name: string, text: string): Promise<void> {
  await mkdir(join(repo.dir, name, '1'), { recursive: true });
  await writeFile(join(repo.dir, name, 'config.pbtxt'), `name: "${name}"\nbackend: "counting"\nmax_batch_size: 4\n${IO}${text}`);
}

before(async () => {
  repo = await tempRepository([{ from: join(EXAMPLES, 'simple') }]);
  await model('no_group', '');
  await model('cpu_group', 'instance_group [ { kind: KIND_CPU } ]\n');
  await model('gpu_group', 'instance_group [ { kind: KIND_GPU } ]\n');
  await model('counted', 'instance_group [ { kind: KIND_CPU count: 1 } ]\n');
  const backends = defaultBackends();
  backends.register('counting', async () => ({
    name: 'counting',
    createInstance: (spec) => {
      created.push(spec.name);
      return identityBackend.createInstance(spec);
    },
  }), { defaultCpuInstanceCount: 3 });
  const logger = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
  server = await InferenceServer.create({ modelRepositories: [repo.dir] }, { logger, backends });
  http = await startHttpFrontend(server, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20 }, logger);
  url = `http://127.0.0.1:${http.port}`;
});

after(async () => {
  await server?.close(5);
  await http?.close();
  await repo?.remove();
});

async function groups(name: string): Promise<[string, number][]> {
  const r = await request(`${url}/v2/models/${name}/config`);
  assert.equal(r.status, 200, r.body.toString());
  return r.json().instance_group.map((g: { kind: string; count: number }) => [g.kind, g.count]);
}

test('a CPU group without a count gets the count its backend registered, and that many instances', async () => {
  assert.deepEqual(await groups('no_group'), [['KIND_CPU', 3]]);
  assert.deepEqual(await groups('cpu_group'), [['KIND_CPU', 3]]);
  assert.equal(created.filter((n) => n === 'no_group').length, 3);
  assert.equal(created.filter((n) => n === 'cpu_group').length, 3);
});

test('a count given, or a group not of kind CPU, keeps its own count', async () => {
  assert.deepEqual(await groups('counted'), [['KIND_CPU', 1]]);
  assert.deepEqual(await groups('gpu_group'), [['KIND_GPU', 1]]);
  assert.equal(created.filter((n) => n === 'gpu_group').length, 1);
});

test('ONNX Runtime keeps its two CPU instances, from its registration', async () => {
  assert.deepEqual(await groups('simple'), [['KIND_CPU', 2]]);
});
