import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { EXAMPLES, ROOT } from '../helpers/paths.js';
import { spawnServer } from '../helpers/server.js';
import { AZURITE_ACCOUNT, AZURITE_KEY, freePort, inferSimpleStatus, simpleModelFiles, startAzurite, type StoreProcess } from '../helpers/object-stores.js';
import { makeCertificates, opensslSkip } from '../helpers/certificates.js';

// AZURE_STORAGE_AUTH_TYPE=managed_identity (with AZURE_STORAGE_CLIENT_ID) and =default, as Triton reads them,
// through a `nereid serve` process: Azurite checks bearer tokens (--oauth basic, which needs HTTPS), and a small
// server on loopback stands in for Azure's managed identity endpoint, which exists only on Azure's machines. It
// answers as App Service's endpoint does (IDENTITY_ENDPOINT and IDENTITY_HEADER), a source both the managed
// identity credential and DefaultAzureCredential of @azure/identity try. The server is a separate process
// because the test's certificate authority reaches it only through NODE_EXTRA_CA_CERTS, read at start.

const skip = opensslSkip();
const CLIENT_ID = 'c0ffee00-1111-2222-3333-444455556666';
const HEADER_SECRET = 'identity-header-secret';

let dir: string;
let store: StoreProcess;
let endpoint: string;
let tokens: Server;
let tokenUrl: string;
/** What the identity endpoint was asked: the client id of each request and whether its secret header was right. */
const asked: { clientId: string | null; header: boolean }[] = [];
let refuse = false;

/** A token Azurite's basic check accepts: issuer, audience and times; it verifies no signature. */
function token(): string {
  const now = Math.floor(Date.now() / 1000);
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part({ aud: 'https://storage.azure.com', iss: 'https://sts.windows.net/00000000-0000-0000-0000-000000000000/', iat: now - 60, nbf: now - 60, exp: now + 3600 })}.sig`;
}

before(async () => {
  if (skip) return;
  dir = await mkdtemp(join(tmpdir(), 'nereid-azure-mi-'));
  await makeCertificates(dir);
  const port = await freePort();
  store = await startAzurite(join(dir, 'data'), port, ['--oauth', 'basic', '--cert', join(dir, 'server.crt'), '--key', join(dir, 'server.key')]);
  endpoint = `https://127.0.0.1:${port}/${AZURITE_ACCOUNT}`;
  tokens = createServer((req, res) => {
    const q = new URL(req.url ?? '/', 'http://x').searchParams;
    asked.push({ clientId: q.get('client_id'), header: req.headers['x-identity-header'] === HEADER_SECRET });
    if (refuse) {
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'invalid_request', error_description: 'no identity is assigned' }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
      access_token: token(), expires_on: String(Math.floor(Date.now() / 1000) + 3600), resource: q.get('resource'), token_type: 'Bearer',
    }));
  });
  await new Promise<void>((resolve) => tokens.listen(0, '127.0.0.1', resolve));
  tokenUrl = `http://127.0.0.1:${(tokens.address() as AddressInfo).port}/msi/token`;
  await upload('mi', 'simple_a');
});

after(async () => {
  if (skip) return;
  await store.kill();
  await new Promise((resolve) => tokens.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

/** Uploads the example model with the account key, from a process that trusts the test's CA. */
async function upload(prefix: string, name: string): Promise<void> {
  const files = Object.fromEntries([...await simpleModelFiles(EXAMPLES, name)].map(([rel, body]) => [`${prefix}/${name}/${rel}`, body.toString('base64')]));
  const script = `
    import { BlobServiceClient, StorageSharedKeyCredential } from '@azure/storage-blob';
    const [endpoint, account, key, files] = process.argv.slice(1);
    const c = new BlobServiceClient(endpoint, new StorageSharedKeyCredential(account, key)).getContainerClient('models');
    await c.createIfNotExists();
    for (const [k, b] of Object.entries(JSON.parse(files))) await c.getBlockBlobClient(k).uploadData(Buffer.from(b, 'base64'));`;
  await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script, endpoint, AZURITE_ACCOUNT, AZURITE_KEY, JSON.stringify(files)], {
    cwd: ROOT, env: { ...process.env, NODE_EXTRA_CA_CERTS: join(dir, 'ca.crt') },
  });
}

/** `nereid serve` on the as:// repository with an identity and no key anywhere; resolves with how it ended. */
async function serve(auth: Record<string, string>): Promise<{ status?: number; output: string; code?: number | null }> {
  const cache = await mkdtemp(join(tmpdir(), 'nereid-as-mi-cache-'));
  const env: NodeJS.ProcessEnv = {
    AZURE_STORAGE_BLOB_ENDPOINT: endpoint, IDENTITY_ENDPOINT: tokenUrl, IDENTITY_HEADER: HEADER_SECRET,
    NODE_EXTRA_CA_CERTS: join(dir, 'ca.crt'), ...auth,
  };
  for (const k of ['AZURE_STORAGE_KEY', 'AZURE_STORAGE_ACCOUNT', 'AZURE_CLIENT_ID', 'AZURE_TENANT_ID', 'AZURE_CLIENT_SECRET', 'AZURE_FEDERATED_TOKEN_FILE', 'MSI_ENDPOINT', 'TRITON_CLOUD_CREDENTIAL_PATH']) env[k] ??= '';
  try {
    const server = await spawnServer(['--model-repository', `as://${AZURITE_ACCOUNT}/models/mi`, '--repository-cache-dir', cache], env);
    try {
      return { status: await inferSimpleStatus(server.url, 'simple_a'), output: server.output() };
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
    }
  } catch (e) {
    return { output: (e as Error).message };
  } finally {
    await rm(cache, { recursive: true, force: true });
  }
}

test('AZURE_STORAGE_AUTH_TYPE=managed_identity with AZURE_STORAGE_CLIENT_ID: a token from the identity endpoint for that client loads the models', { skip }, async () => {
  asked.length = 0;
  const r = await serve({ AZURE_STORAGE_AUTH_TYPE: 'managed_identity', AZURE_STORAGE_CLIENT_ID: CLIENT_ID });
  assert.equal(r.status, 200, r.output);
  assert.ok(asked.length >= 1, 'the identity endpoint was asked for a token');
  assert.ok(asked.every((a) => a.clientId === CLIENT_ID && a.header), JSON.stringify(asked));
});

test('AZURE_STORAGE_AUTH_TYPE=default: DefaultAzureCredential finds the managed identity and the models load', { skip }, async () => {
  asked.length = 0;
  const r = await serve({ AZURE_STORAGE_AUTH_TYPE: 'default' });
  assert.equal(r.status, 200, r.output);
  assert.ok(asked.length >= 1, 'the identity endpoint was asked for a token');
});

test('an identity endpoint that refuses: the model fails to load naming the URL, and the secret header is never shown', { skip }, async () => {
  refuse = true;
  try {
    const r = await serve({ AZURE_STORAGE_AUTH_TYPE: 'managed_identity', AZURE_STORAGE_CLIENT_ID: CLIENT_ID });
    assert.equal(r.status, undefined, `nothing served: ${r.output}`);
    assert.match(r.output, new RegExp(`failed to list as://${AZURITE_ACCOUNT}/models/mi`));
    assert.doesNotMatch(r.output, new RegExp(HEADER_SECRET));
    assert.doesNotMatch(r.output, /\n\s+at /, 'a message, not a stack');
    assert.ok(asked.length >= 1, 'the identity endpoint was asked');
  } finally {
    refuse = false;
  }
});
