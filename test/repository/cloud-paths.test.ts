import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseCloudUrl } from '../../src/repository/cloud/url.js';
import { credentialFor } from '../../src/repository/cloud/credentials.js';
import { relativeKey } from '../../src/repository/cloud/mirror.js';

test('repository URLs are read as Triton reads them: buckets, custom S3 endpoints path-style, Azure accounts', () => {
  assert.deepEqual(parseCloudUrl('s3://bucket/a//b/'), { scheme: 's3', url: 's3://bucket/a/b', bucket: 'bucket', prefix: 'a/b' });
  assert.deepEqual(parseCloudUrl('s3://bucket'), { scheme: 's3', url: 's3://bucket', bucket: 'bucket', prefix: '' });
  assert.deepEqual(parseCloudUrl('s3://localhost:9000/models/repo'),
    { scheme: 's3', url: 's3://localhost:9000/models/repo', bucket: 'models', prefix: 'repo', endpoint: 'http://localhost:9000' });
  assert.deepEqual(parseCloudUrl('s3://https://s3.example.com:443/models'),
    { scheme: 's3', url: 's3://https://s3.example.com:443/models', bucket: 'models', prefix: '', endpoint: 'https://s3.example.com:443' });
  assert.deepEqual(parseCloudUrl('gs://bucket/path/to'), { scheme: 'gs', url: 'gs://bucket/path/to', bucket: 'bucket', prefix: 'path/to' });
  assert.deepEqual(parseCloudUrl('as://acct.blob.core.windows.net/container/p'),
    { scheme: 'as', url: 'as://acct.blob.core.windows.net/container/p', account: 'acct', bucket: 'container', prefix: 'p' });
  for (const bad of ['s3://', 's3:////', 'as://account', 's3://https://no-port/bucket']) assert.throws(() => parseCloudUrl(bad), bad);
});

test('TRITON_CLOUD_CREDENTIAL_PATH: the longest matching prefix wins, Triton\'s field names; no match is an error without secrets', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'nereid-creds-'));
  const file = join(dir, 'c.json');
  try {
    await writeFile(file, JSON.stringify({
      s3: { '': { key_id: 'A', secret_key: 'secret-a' }, 's3://bucket/deep': { key_id: 'B', secret_key: 'secret-b', region: 'eu-west-1', session_token: 't' } },
      gs: { 'gs://g': '/keys/g.json' },
      as: { 'as://acct': { account_str: 'acct', account_key: 'k3y!' }, 'as://mi': { account_str: 'mi', auth_type: 'managed_identity', client_id: 'cid' } },
    }));
    const env = { TRITON_CLOUD_CREDENTIAL_PATH: file, AWS_ACCESS_KEY_ID: 'ENV' };
    assert.deepEqual(await credentialFor(parseCloudUrl('s3://bucket/deep/er'), env), { keyId: 'B', secretKey: 'secret-b', sessionToken: 't', region: 'eu-west-1', profile: undefined });
    assert.equal((await credentialFor(parseCloudUrl('s3://other'), env) as { keyId?: string }).keyId, 'A');
    assert.deepEqual(await credentialFor(parseCloudUrl('gs://g/x'), env), { keyFile: '/keys/g.json' });
    assert.deepEqual(await credentialFor(parseCloudUrl('as://acct/c'), env), { account: 'acct', key: 'k3y!', authType: 'key', clientId: undefined });
    assert.deepEqual(await credentialFor(parseCloudUrl('as://mi/c'), env), { account: 'mi', key: undefined, authType: 'managed_identity', clientId: 'cid' });
    await assert.rejects(credentialFor(parseCloudUrl('gs://elsewhere/x'), env), /no credential in TRITON_CLOUD_CREDENTIAL_PATH matches gs:\/\/elsewhere\/x/);
    await writeFile(file, '{"s3": {"": {"secret_key": "leak-me"');
    await assert.rejects(credentialFor(parseCloudUrl('s3://b'), env), (e: Error) => /not valid JSON/.test(e.message) && !e.message.includes('leak-me'));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('credentials from the environment: Triton\'s variables, AWS_DEFAULT_REGION included', async () => {
  const env = { AWS_ACCESS_KEY_ID: 'id', AWS_SECRET_ACCESS_KEY: 's', AWS_DEFAULT_REGION: 'ap-south-1', AWS_PROFILE: 'p', AZURE_STORAGE_ACCOUNT: 'acc', AZURE_STORAGE_KEY: 'k', GOOGLE_APPLICATION_CREDENTIALS: '/k.json' };
  assert.deepEqual(await credentialFor(parseCloudUrl('s3://b'), env), { keyId: 'id', secretKey: 's', sessionToken: undefined, region: 'ap-south-1', profile: 'p' });
  assert.deepEqual(await credentialFor(parseCloudUrl('gs://b'), env), { keyFile: '/k.json' });
  assert.deepEqual(await credentialFor(parseCloudUrl('as://a/c'), env), { account: 'acc', key: 'k', authType: 'key', clientId: undefined });
});

test('object keys that would leave the model\'s folder are refused; folder markers are skipped', () => {
  assert.equal(relativeKey('repo/m/1/model.onnx', 'repo/m/', 'u'), join('1', 'model.onnx'));
  assert.equal(relativeKey('repo/m/1/', 'repo/m/', 'u'), undefined);
  for (const bad of ['repo/m/../x', 'repo/m/1/../../x', 'repo/m//etc/passwd', 'repo/m/a\\..\\b', 'repo/m/./x']) {
    assert.throws(() => relativeKey(bad, 'repo/m/', 's3://b/repo/m'), /outside the model's folder; refused/, bad);
  }
  assert.throws(() => relativeKey('other/x', 'repo/m/', 'u'), /outside the model's prefix/);
});
