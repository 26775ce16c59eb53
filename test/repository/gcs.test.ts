import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXAMPLES } from '../helpers/paths.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { request } from '../helpers/http.js';
import { assertServesWithStoreDown, inferSimpleStatus, simpleModelFiles, startStallingProxy } from '../helpers/object-stores.js';
import { startGcsStandIn, type GcsStandIn } from '../helpers/gcs-stand-in.js';

// gs:// repositories through @google-cloud/storage pointed (STORAGE_EMULATOR_HOST) at a small local server that
// stands in for Google Cloud Storage: nothing real can run here. It serves only the JSON API calls the source
// makes; the SDK sends no credentials to a custom endpoint, so credentials are covered by the unit tests only.

let gcs: GcsStandIn;
const saved = { ...process.env };

before(async () => {
  gcs = await startGcsStandIn('bucket', 2);
  process.env.STORAGE_EMULATOR_HOST = gcs.endpoint;
  delete process.env.TRITON_CLOUD_CREDENTIAL_PATH;
});

after(async () => {
  await gcs.close();
  process.env = saved;
});

async function putSimple(prefix: string, name: string): Promise<void> {
  for (const [rel, body] of await simpleModelFiles(EXAMPLES, name)) gcs.objects.set(`${prefix}/${name}/${rel}`, body);
}

const infer = (server: TestServer, model: string, version?: number): Promise<number> => inferSimpleStatus(server.url, model, version);

test('gs://bucket/path: models load through listings of several pages; poll picks up a new version and a removed model', async () => {
  await putSimple('repo', 'simple_a');
  await putSimple('repo', 'simple_b');
  const cache = await mkdtemp(join(tmpdir(), 'nereid-gs-cache-'));
  const server = await startTestServer({ modelRepositories: ['gs://bucket/repo'], modelControlMode: 'poll', repositoryPollSecs: 3600, repositoryCacheDir: cache });
  try {
    assert.equal(await infer(server, 'simple_a', 1), 200);
    assert.equal(await infer(server, 'simple_b'), 200);
    gcs.objects.set('repo/simple_a/2/model.onnx', await readFile(join(EXAMPLES, 'simple', '1', 'model.onnx')));
    for (const k of [...gcs.objects.keys()]) if (k.startsWith('repo/simple_b/')) gcs.objects.delete(k);
    await server.server.pollRepository();
    assert.equal(await infer(server, 'simple_a', 2), 200, 'version 2 loaded');
    assert.equal((await request(`${server.url}/v2/models/simple_b/ready`)).status, 400, 'simple_b unloaded');
  } finally {
    await server.close();
    await rm(cache, { recursive: true, force: true });
  }
});

test('gs://: a store briefly answering 503 is retried; a missing bucket fails at once, naming the URL', async () => {
  await putSimple('flaky', 'simple_a');
  const cache = await mkdtemp(join(tmpdir(), 'nereid-gs-cache-'));
  try {
    gcs.failNext(3);
    const server = await startTestServer({ modelRepositories: ['gs://bucket/flaky'], repositoryCacheDir: cache });
    assert.equal(await infer(server, 'simple_a'), 200);
    await server.close();
    const before = gcs.requests.length;
    const missing = await startTestServer({ modelRepositories: ['gs://nobucket/x'], repositoryCacheDir: cache }).then(() => undefined, (e: Error) => e);
    assert.ok(missing);
    assert.match(missing.message, /failed to list gs:\/\/nobucket\/x: .*bucket does not exist/);
    assert.equal(gcs.requests.length - before, 1, 'a 404 is not retried');
  } finally {
    await rm(cache, { recursive: true, force: true });
  }
});

test('gs://: poll mode with the store down: the loaded models keep serving, and nothing is unloaded', async () => {
  await putSimple('down', 'simple_a');
  const cache = await mkdtemp(join(tmpdir(), 'nereid-gs-cache-'));
  // A relay that is then closed stands for the store going down without disturbing the other tests.
  const proxy = await startStallingProxy(Number(new URL(gcs.endpoint).port), Number.MAX_SAFE_INTEGER, () => undefined);
  process.env.STORAGE_EMULATOR_HOST = `http://127.0.0.1:${proxy.port}`;
  let server: TestServer;
  try {
    server = await startTestServer({ modelRepositories: ['gs://bucket/down'], modelControlMode: 'poll', repositoryPollSecs: 3600, repositoryCacheDir: cache });
  } finally {
    process.env.STORAGE_EMULATOR_HOST = gcs.endpoint;
  }
  try {
    await assertServesWithStoreDown(server, proxy, 'simple_a');
  } finally {
    await server.close();
    await rm(cache, { recursive: true, force: true });
  }
});
