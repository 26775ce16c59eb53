import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteObjectsCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { EXAMPLES } from '../helpers/paths.js';
import { until } from '../helpers/until.js';
import { startTestServer, tempRepository, type TestServer } from '../helpers/server.js';
import { postJson, request } from '../helpers/http.js';
import { filesUnder, freePort, S3_KEY, startS3rver, startStallingProxy, assertServesWithStoreDown, type StoreProcess, inferSimpleStatus, simpleModelFiles } from '../helpers/object-stores.js';

// s3:// repositories against s3rver, a real S3-compatible server, in a child process on a loopback port.

const BUCKET = 'models';
let dataDir: string;
let port: number;
let store: StoreProcess;
let s3: S3Client;
const saved = { ...process.env };

before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'nereid-s3rver-'));
  port = await freePort();
  store = await startS3rver(dataDir, port, [BUCKET]);
  s3 = new S3Client({ region: 'us-east-1', endpoint: `http://127.0.0.1:${port}`, forcePathStyle: true, credentials: S3_KEY });
  setEnv({ AWS_ACCESS_KEY_ID: S3_KEY.accessKeyId, AWS_SECRET_ACCESS_KEY: S3_KEY.secretAccessKey });
});

after(async () => {
  s3.destroy();
  await store.kill();
  await rm(dataDir, { recursive: true, force: true });
  process.env = saved;
});

/** The AWS variables of a test, everything else of the kind cleared; instance metadata is never asked. */
function setEnv(vars: Record<string, string>): void {
  for (const k of Object.keys(process.env)) if (/^(AWS_|TRITON_CLOUD)/.test(k)) delete process.env[k];
  Object.assign(process.env, { AWS_EC2_METADATA_DISABLED: 'true' }, vars);
}

function url(prefix: string, p = port): string {
  return `s3://127.0.0.1:${p}/${BUCKET}/${prefix}`;
}

async function put(key: string, body: Buffer | string): Promise<void> {
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
}

/** Uploads the example model `simple` as `name` under `prefix`, with extra files if given. */
async function putSimple(prefix: string, name: string, extra: Record<string, Buffer> = {}): Promise<void> {
  for (const [rel, body] of await simpleModelFiles(EXAMPLES, name)) await put(`${prefix}/${name}/${rel}`, body);
  for (const [rel, body] of Object.entries(extra)) await put(`${prefix}/${name}/${rel}`, body);
}

async function removeUnder(prefix: string): Promise<void> {
  const r = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }));
  const keys = (r.Contents ?? []).map((o) => ({ Key: o.Key! }));
  if (keys.length > 0) await s3.send(new DeleteObjectsCommand({ Bucket: BUCKET, Delete: { Objects: keys } }));
}

const infer = (server: TestServer, model: string, version?: number): Promise<number> => inferSimpleStatus(server.url, model, version);

async function cacheDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'nereid-s3-cache-'));
}

test('s3://host:port/bucket/path serves its models beside a local folder; the files come from the bucket', async () => {
  await putSimple('load', 'simple_a');
  await putSimple('load', 'simple_b');
  const local = await tempRepository([{ from: join(EXAMPLES, 'simple'), name: 'simple' }]);
  const cache = await cacheDir();
  const server = await startTestServer({ modelRepositories: [url('load'), local.dir], repositoryCacheDir: cache });
  try {
    for (const m of ['simple_a', 'simple_b', 'simple']) assert.equal(await infer(server, m), 200, m);
    const index = (await postJson(`${server.url}/v2/repository/index`, {})).json() as { name: string; state: string }[];
    assert.deepEqual(index.map((e) => `${e.name}:${e.state}`).sort(), ['simple:READY', 'simple_a:READY', 'simple_b:READY']);
  } finally {
    await server.close();
    await local.remove();
    await rm(cache, { recursive: true, force: true });
  }
});

test('poll mode picks up a new version and a removed model from the bucket', async () => {
  await putSimple('poll', 'simple_a');
  await putSimple('poll', 'simple_b');
  const cache = await cacheDir();
  const server = await startTestServer({ modelRepositories: [url('poll')], modelControlMode: 'poll', repositoryPollSecs: 3600, repositoryCacheDir: cache });
  try {
    assert.equal(await infer(server, 'simple_a', 1), 200);
    assert.equal(await infer(server, 'simple_a', 2), 404, 'no version 2 yet');
    await put('poll/simple_a/2/model.onnx', await readFile(join(EXAMPLES, 'simple', '1', 'model.onnx')));
    await removeUnder('poll/simple_b/');
    await server.server.pollRepository();
    assert.equal(await infer(server, 'simple_a', 2), 200, 'version 2 loaded from the bucket');
    assert.equal((await request(`${server.url}/v2/models/simple_b/ready`)).status, 400, 'simple_b unloaded');
    const cached = (await filesUnder(cache)).map(([k]) => k);
    assert.ok(cached.some((k) => k.includes('simple_a')), 'simple_a stays in the cache');
    assert.deepEqual(cached.filter((k) => k.includes('simple_b')), [], 'the removed model left the cache: folder and manifest');
  } finally {
    await server.close();
    await rm(cache, { recursive: true, force: true });
  }
});

test('explicit mode: a model loads from the bucket on request, with a config override; a model the bucket lacks fails', async () => {
  await putSimple('explicit', 'simple_a');
  const cache = await cacheDir();
  const server = await startTestServer({ modelRepositories: [url('explicit')], modelControlMode: 'explicit', repositoryCacheDir: cache });
  try {
    assert.equal((await request(`${server.url}/v2/models/simple_a/ready`)).status, 400);
    const config = JSON.stringify({ max_batch_size: 2 });
    const load = await postJson(`${server.url}/v2/repository/models/simple_a/load`, { parameters: { config } });
    assert.equal(load.status, 200, load.body.toString());
    const got = (await request(`${server.url}/v2/models/simple_a/config`)).json() as { max_batch_size: number };
    assert.equal(got.max_batch_size, 2);
    assert.equal(await infer(server, 'simple_a'), 200);
    const missing = await postJson(`${server.url}/v2/repository/models/nothere/load`, {});
    assert.equal(missing.status, 400);
  } finally {
    await server.close();
    await rm(cache, { recursive: true, force: true });
  }
});

test('explicit mode: file overrides load a model from the request, not the bucket, as for a local repository', async () => {
  await putSimple('files', 'simple_a');
  const cache = await cacheDir();
  const server = await startTestServer({ modelRepositories: [url('files')], modelControlMode: 'explicit', repositoryCacheDir: cache });
  try {
    const config = JSON.stringify({ name: 'simple_a', backend: 'onnxruntime', max_batch_size: 3 });
    const model = (await readFile(join(EXAMPLES, 'simple', '1', 'model.onnx'))).toString('base64');
    const load = await postJson(`${server.url}/v2/repository/models/simple_a/load`, { parameters: { config, 'file:7/model.onnx': model } });
    assert.equal(load.status, 200, load.body.toString());
    const got = (await request(`${server.url}/v2/models/simple_a/config`)).json() as { max_batch_size: number };
    assert.equal(got.max_batch_size, 3, 'the config of the request');
    assert.equal(await infer(server, 'simple_a', 7), 200, 'version 7 from the request');
    assert.equal(await infer(server, 'simple_a', 1), 404, 'the bucket\'s version 1 is not loaded');
    assert.deepEqual(await filesUnder(cache), [], 'nothing was downloaded');
  } finally {
    await server.close();
    await rm(cache, { recursive: true, force: true });
  }
});

test('TRITON_CLOUD_CREDENTIAL_PATH: the longest matching prefix gives the credentials, the environment is not read', async () => {
  await putSimple('creds', 'simple_a');
  const dir = await mkdtemp(join(tmpdir(), 'nereid-s3-creds-'));
  const file = join(dir, 'creds.json');
  await writeFile(file, JSON.stringify({
    s3: {
      '': { key_id: 'WRONG', secret_key: 'wrong-secret-everywhere' },
      [`s3://127.0.0.1:${port}/${BUCKET}`]: { key_id: S3_KEY.accessKeyId, secret_key: S3_KEY.secretAccessKey, region: 'us-east-1' },
    },
  }));
  setEnv({ AWS_ACCESS_KEY_ID: 'WRONG', AWS_SECRET_ACCESS_KEY: 'wrong-secret-in-env', TRITON_CLOUD_CREDENTIAL_PATH: file });
  const cache = await cacheDir();
  try {
    const server = await startTestServer({ modelRepositories: [url('creds')], repositoryCacheDir: cache });
    assert.equal(await infer(server, 'simple_a'), 200);
    await server.close();
  } finally {
    setEnv({ AWS_ACCESS_KEY_ID: S3_KEY.accessKeyId, AWS_SECRET_ACCESS_KEY: S3_KEY.secretAccessKey });
    await rm(dir, { recursive: true, force: true });
    await rm(cache, { recursive: true, force: true });
  }
});

test('wrong credentials fail the start at once, naming the URL and the store\'s refusal, never the secret', async () => {
  await putSimple('wrong', 'simple_a');
  const secret = 'this-secret-must-not-show';
  setEnv({ AWS_ACCESS_KEY_ID: 'NOBODY', AWS_SECRET_ACCESS_KEY: secret });
  const cache = await cacheDir();
  // Counts what the server asks the store, through a relay that never stalls.
  const proxy = await startStallingProxy(port, Number.MAX_SAFE_INTEGER, () => undefined);
  try {
    const err = await startTestServer({ modelRepositories: [url('wrong', proxy.port)], repositoryCacheDir: cache }).then(() => undefined, (e: Error) => e);
    assert.ok(err, 'the start fails');
    assert.match(err.message, new RegExp(`s3://127.0.0.1:${proxy.port}/${BUCKET}/wrong`));
    assert.match(err.message, /403|InvalidAccessKeyId|AccessDenied/);
    assert.doesNotMatch(err.message, new RegExp(secret));
    // A refusal is not retried: the store was asked once.
    assert.equal(proxy.requests.length, 1, proxy.requests.join('\n'));
  } finally {
    await proxy.close();
    setEnv({ AWS_ACCESS_KEY_ID: S3_KEY.accessKeyId, AWS_SECRET_ACCESS_KEY: S3_KEY.secretAccessKey });
    await rm(cache, { recursive: true, force: true });
  }
});

test('no credentials anywhere: the requests go unsigned, and a store that allows anonymous access serves the models', async () => {
  await putSimple('anon', 'simple_anon');
  // Nothing for the SDK's chain to find: no keys, no profile files, no instance metadata.
  const none = join(tmpdir(), 'nereid-no-such-aws-file');
  setEnv({ AWS_SHARED_CREDENTIALS_FILE: none, AWS_CONFIG_FILE: none });
  const cache = await cacheDir();
  try {
    const server = await startTestServer({ modelRepositories: [url('anon')], repositoryCacheDir: cache });
    try {
      assert.equal(await infer(server, 'simple_anon'), 200);
    } finally {
      await server.close();
    }
  } finally {
    setEnv({ AWS_ACCESS_KEY_ID: S3_KEY.accessKeyId, AWS_SECRET_ACCESS_KEY: S3_KEY.secretAccessKey });
    await rm(cache, { recursive: true, force: true });
  }
});

test('a scan lists the repository once: a restart with an unchanged bucket of three models asks for one listing and no object', async () => {
  for (const name of ['listed_a', 'listed_b', 'listed_c']) await putSimple('listed', name);
  const cache = await cacheDir();
  // Counts what the server asks the store, through a relay that never stalls.
  const proxy = await startStallingProxy(port, Number.MAX_SAFE_INTEGER, () => undefined);
  try {
    const first = await startTestServer({ modelRepositories: [url('listed', proxy.port)], repositoryCacheDir: cache });
    await first.close();
    proxy.requests.length = 0;
    const second = await startTestServer({ modelRepositories: [url('listed', proxy.port)], repositoryCacheDir: cache });
    try {
      for (const name of ['listed_a', 'listed_b', 'listed_c']) assert.equal(await infer(second, name), 200);
    } finally {
      await second.close();
    }
    const listings = proxy.requests.filter((r) => r.includes('list-type=2'));
    assert.equal(listings.length, 1, proxy.requests.join('\n'));
    assert.equal(proxy.requests.length, 1, `no object is read again:\n${proxy.requests.join('\n')}`);
  } finally {
    await proxy.close();
    await rm(cache, { recursive: true, force: true });
  }
});

test('the store killed mid-download and started again: the download is retried and the model loads whole', async () => {
  const big = Buffer.alloc(24 * 1024 * 1024);
  for (let i = 0; i < big.length; i += 4096) big.writeUInt32LE(i, i);
  await putSimple('killed', 'simple_a', { '1/weights.bin': big });
  let restarted: Promise<void> | undefined;
  const proxy = await startStallingProxy(port, 4 * 1024 * 1024, () => {
    restarted = (async () => {
      await store.kill();
      store = await startS3rver(dataDir, port, [BUCKET]);
    })();
  });
  const cache = await cacheDir();
  try {
    const server = await startTestServer({ modelRepositories: [url('killed', proxy.port)], repositoryCacheDir: cache });
    assert.ok(restarted, 'the store was killed mid-download');
    await restarted;
    assert.equal(await infer(server, 'simple_a'), 200);
    await server.close();
    const files = new Map(await filesUnder(cache));
    const weights = [...files].find(([k]) => k.endsWith('simple_a/1/weights.bin'));
    assert.ok(weights, 'the big file is in the cache');
    assert.ok((await readFile(weights[1])).equals(big), 'whole and intact');
    assert.ok(![...files.keys()].some((k) => k.endsWith('.partial')), 'no partial file left');
  } finally {
    await proxy.close();
    await rm(cache, { recursive: true, force: true });
  }
});

test('the cache is reused across a restart: unchanged files are not downloaded again, a changed one is', async () => {
  await putSimple('cached', 'simple_a');
  const cache = await cacheDir();
  try {
    const first = await startTestServer({ modelRepositories: [url('cached')], repositoryCacheDir: cache });
    await first.close();
    const inode = async (rel: string) => {
      const f = (await filesUnder(cache)).find(([k]) => k.endsWith(`simple_a/${rel}`));
      return (await stat(f![1])).ino;
    };
    const model = await inode('1/model.onnx');
    const config = await inode('config.pbtxt');
    await put('cached/simple_a/config.pbtxt', (await readFile(join(EXAMPLES, 'simple', 'config.pbtxt'), 'utf8')).replace('name: "simple"', 'name: "simple_a"') + '\n# changed\n');
    const second = await startTestServer({ modelRepositories: [url('cached')], repositoryCacheDir: cache });
    assert.equal(await infer(second, 'simple_a'), 200);
    await second.close();
    assert.equal(await inode('1/model.onnx'), model, 'the unchanged file stayed as it was');
    assert.notEqual(await inode('config.pbtxt'), config, 'the changed file was downloaded again');
  } finally {
    await rm(cache, { recursive: true, force: true });
  }
});

test('on demand: a request loads a model from the bucket; unloaded when idle, it loads again from the cache, reading no object', async () => {
  await putSimple('ondemand', 'simple_a');
  const config = (await readFile(join(EXAMPLES, 'simple', 'config.pbtxt'), 'utf8')).replace('name: "simple"', 'name: "simple_a"');
  await put('ondemand/simple_a/config.pbtxt', `${config}\nparameters { key: "nereid_idle_unload_secs" value { string_value: "1" } }\n`);
  const cache = await cacheDir();
  const proxy = await startStallingProxy(port, Number.MAX_SAFE_INTEGER, () => undefined);
  try {
    const server = await startTestServer({ modelRepositories: [url('ondemand', proxy.port)], repositoryCacheDir: cache, modelLoadOnDemand: true });
    try {
      assert.equal((await server.server.repositoryIndex(true)).length, 0, 'nothing loaded at start');
      assert.equal(await infer(server, 'simple_a'), 200);
      await until(async () => (await server.server.repositoryIndex(true)).length === 0, 'simple_a unloaded once idle');
      proxy.requests.length = 0;
      assert.equal(await infer(server, 'simple_a'), 200);
      assert.ok(proxy.requests.length > 0 && proxy.requests.every((r) => r.includes('list-type=2')), `only listings, no object read again:\n${proxy.requests.join('\n')}`);
    } finally {
      await server.close();
    }
  } finally {
    await proxy.close();
    await rm(cache, { recursive: true, force: true });
  }
});

test('poll mode with the store down: the loaded models keep serving, and nothing is unloaded', async () => {
  await putSimple('down', 'simple_a');
  const cache = await cacheDir();
  // A relay that can be pointed nowhere stands for the store going down without disturbing the other tests.
  const proxy = await startStallingProxy(port, Number.MAX_SAFE_INTEGER, () => undefined);
  const server = await startTestServer({ modelRepositories: [url('down', proxy.port)], modelControlMode: 'poll', repositoryPollSecs: 3600, repositoryCacheDir: cache });
  try {
    await assertServesWithStoreDown(server, proxy, 'simple_a');
  } finally {
    await server.close();
    await rm(cache, { recursive: true, force: true });
  }
});
