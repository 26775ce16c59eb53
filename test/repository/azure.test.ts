import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BlobServiceClient, StorageSharedKeyCredential, type ContainerClient } from '@azure/storage-blob';
import { EXAMPLES } from '../helpers/paths.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { request } from '../helpers/http.js';
import { AZURITE_ACCOUNT, AZURITE_KEY, filesUnder, freePort, startAzurite, startStallingProxy, assertServesWithStoreDown, type StoreProcess, inferSimpleStatus, simpleModelFiles } from '../helpers/object-stores.js';

// as:// repositories against Azurite, Microsoft's storage emulator, in a child process on a loopback port.
// AZURE_STORAGE_BLOB_ENDPOINT points the SDK at it instead of https://<account>.blob.core.windows.net.

let dataDir: string;
let store: StoreProcess;
let storePort: number;
let container: ContainerClient;
const saved = { ...process.env };

before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'nereid-azurite-'));
  const port = await freePort();
  storePort = port;
  store = await startAzurite(dataDir, port);
  const endpoint = `http://127.0.0.1:${port}/${AZURITE_ACCOUNT}`;
  container = new BlobServiceClient(endpoint, new StorageSharedKeyCredential(AZURITE_ACCOUNT, AZURITE_KEY)).getContainerClient('models');
  await container.create();
  setEnv({ AZURE_STORAGE_BLOB_ENDPOINT: endpoint, AZURE_STORAGE_ACCOUNT: AZURITE_ACCOUNT, AZURE_STORAGE_KEY: AZURITE_KEY });
});

after(async () => {
  await store.kill();
  await rm(dataDir, { recursive: true, force: true });
  process.env = saved;
});

function setEnv(vars: Record<string, string>): void {
  const endpoint = process.env.AZURE_STORAGE_BLOB_ENDPOINT;
  for (const k of Object.keys(process.env)) if (/^(AZURE_|TRITON_CLOUD)/.test(k)) delete process.env[k];
  Object.assign(process.env, endpoint ? { AZURE_STORAGE_BLOB_ENDPOINT: endpoint } : {}, vars);
}

const url = (prefix: string, c = 'models'): string => `as://${AZURITE_ACCOUNT}/${c}/${prefix}`;

async function put(key: string, body: Buffer | string): Promise<void> {
  await container.getBlockBlobClient(key).uploadData(typeof body === 'string' ? Buffer.from(body) : body);
}

async function putSimple(prefix: string, name: string): Promise<void> {
  for (const [rel, body] of await simpleModelFiles(EXAMPLES, name)) await put(`${prefix}/${name}/${rel}`, body);
}

const infer = (server: TestServer, model: string, version?: number): Promise<number> => inferSimpleStatus(server.url, model, version);

test('as://account/container/path: models load with the account key from the environment; poll picks up a new version and a removed model', async () => {
  await putSimple('poll', 'simple_a');
  await putSimple('poll', 'simple_b');
  const cache = await mkdtemp(join(tmpdir(), 'nereid-as-cache-'));
  const server = await startTestServer({ modelRepositories: [url('poll')], modelControlMode: 'poll', repositoryPollSecs: 3600, repositoryCacheDir: cache });
  try {
    assert.equal(await infer(server, 'simple_a', 1), 200);
    assert.equal(await infer(server, 'simple_b'), 200);
    await put('poll/simple_a/2/model.onnx', await readFile(join(EXAMPLES, 'simple', '1', 'model.onnx')));
    for await (const b of container.listBlobsFlat({ prefix: 'poll/simple_b/' })) await container.deleteBlob(b.name);
    await server.server.pollRepository();
    assert.equal(await infer(server, 'simple_a', 2), 200, 'version 2 loaded');
    assert.equal((await request(`${server.url}/v2/models/simple_b/ready`)).status, 400, 'simple_b unloaded');
  } finally {
    await server.close();
    await rm(cache, { recursive: true, force: true });
  }
});

test('as://: credentials from TRITON_CLOUD_CREDENTIAL_PATH (account_str, account_key), the environment not read', async () => {
  await putSimple('creds', 'simple_a');
  const dir = await mkdtemp(join(tmpdir(), 'nereid-as-creds-'));
  const file = join(dir, 'creds.json');
  await writeFile(file, JSON.stringify({ as: { [`as://${AZURITE_ACCOUNT}/models`]: { account_str: AZURITE_ACCOUNT, account_key: AZURITE_KEY } } }));
  setEnv({ AZURE_STORAGE_ACCOUNT: AZURITE_ACCOUNT, AZURE_STORAGE_KEY: Buffer.from('wrong').toString('base64'), TRITON_CLOUD_CREDENTIAL_PATH: file });
  const cache = await mkdtemp(join(tmpdir(), 'nereid-as-cache-'));
  try {
    const server = await startTestServer({ modelRepositories: [url('creds')], repositoryCacheDir: cache });
    assert.equal(await infer(server, 'simple_a'), 200);
    await server.close();
  } finally {
    setEnv({ AZURE_STORAGE_ACCOUNT: AZURITE_ACCOUNT, AZURE_STORAGE_KEY: AZURITE_KEY });
    await rm(dir, { recursive: true, force: true });
    await rm(cache, { recursive: true, force: true });
  }
});

test('as://: a wrong key and a missing container fail at once, naming the URL and why, never the key', async () => {
  await putSimple('wrong', 'simple_a');
  const wrongKey = Buffer.from('this-key-is-wrong-and-secret').toString('base64');
  const cache = await mkdtemp(join(tmpdir(), 'nereid-as-cache-'));
  try {
    setEnv({ AZURE_STORAGE_ACCOUNT: AZURITE_ACCOUNT, AZURE_STORAGE_KEY: wrongKey });
    const denied = await startTestServer({ modelRepositories: [url('wrong')], repositoryCacheDir: cache }).then(() => undefined, (e: Error) => e);
    assert.ok(denied);
    assert.match(denied.message, new RegExp(`failed to list as://${AZURITE_ACCOUNT}/models/wrong: HTTP 403`));
    assert.ok(!denied.message.includes(wrongKey), denied.message);
    setEnv({ AZURE_STORAGE_ACCOUNT: AZURITE_ACCOUNT, AZURE_STORAGE_KEY: AZURITE_KEY });
    const missing = await startTestServer({ modelRepositories: [url('x', 'nocontainer')], repositoryCacheDir: cache }).then(() => undefined, (e: Error) => e);
    assert.ok(missing);
    assert.match(missing.message, new RegExp(`failed to list as://${AZURITE_ACCOUNT}/nocontainer/x: HTTP 404`));
  } finally {
    setEnv({ AZURE_STORAGE_ACCOUNT: AZURITE_ACCOUNT, AZURE_STORAGE_KEY: AZURITE_KEY });
    await rm(cache, { recursive: true, force: true });
  }
});

/** Runs `body` with the SDK pointed at a relay on `port` in front of Azurite, then points it back. */
async function throughRelay<T>(port: number, body: () => Promise<T>): Promise<T> {
  const direct = process.env.AZURE_STORAGE_BLOB_ENDPOINT;
  process.env.AZURE_STORAGE_BLOB_ENDPOINT = `http://127.0.0.1:${port}/${AZURITE_ACCOUNT}`;
  try {
    return await body();
  } finally {
    process.env.AZURE_STORAGE_BLOB_ENDPOINT = direct;
  }
}

test('as://: the connection dropped mid-download: the download is retried and the model loads whole', async () => {
  const big = Buffer.alloc(24 * 1024 * 1024);
  for (let i = 0; i < big.length; i += 4096) big.writeUInt32LE(i, i);
  await putSimple('dropped', 'simple_a');
  await put('dropped/simple_a/1/weights.bin', big);
  let dropped = false;
  const proxy = await startStallingProxy(storePort, 4 * 1024 * 1024, () => {
    dropped = true;
    return 'drop';
  });
  const cache = await mkdtemp(join(tmpdir(), 'nereid-as-cache-'));
  try {
    const server = await throughRelay(proxy.port, () => startTestServer({ modelRepositories: [url('dropped')], repositoryCacheDir: cache }));
    assert.ok(dropped, 'a connection was dropped mid-download');
    assert.equal(await infer(server, 'simple_a'), 200);
    await server.close();
    const files = await filesUnder(cache);
    const weights = files.find(([k]) => k.endsWith('simple_a/1/weights.bin'));
    assert.ok(weights, 'the big file is in the cache');
    assert.ok((await readFile(weights[1])).equals(big), 'whole and intact');
    assert.ok(!files.some(([k]) => k.endsWith('.partial')), 'no partial file left');
  } finally {
    await proxy.close();
    await rm(cache, { recursive: true, force: true });
  }
});

test('as://: poll mode with the store down: the loaded models keep serving, and nothing is unloaded', async () => {
  await putSimple('down', 'simple_a');
  const cache = await mkdtemp(join(tmpdir(), 'nereid-as-cache-'));
  // A relay that is then closed stands for the store going down without disturbing the other tests.
  const proxy = await startStallingProxy(storePort, Number.MAX_SAFE_INTEGER, () => undefined);
  const server = await throughRelay(proxy.port, () => startTestServer({ modelRepositories: [url('down')], modelControlMode: 'poll', repositoryPollSecs: 3600, repositoryCacheDir: cache }));
  try {
    await assertServesWithStoreDown(server, proxy, 'simple_a');
  } finally {
    await server.close();
    await rm(cache, { recursive: true, force: true });
  }
});
