import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignatureV4 } from '@smithy/signature-v4';
import { plainLister } from '../../src/repository/cloud/s3-listing.js';
import { parseCloudUrl } from '../../src/repository/cloud/url.js';

// The listing made without the SDK, against a stand-in that records each request. s3rver checks no signature,
// so the SDK's own signer is the reference here.

const KEY = { keyId: 'AKIDEXAMPLE', secretKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', sessionToken: 'tok/en+=' };

/** The hash the SDK's signer takes: node:crypto behind its interface. */
class Sha256 {
  private readonly h;
  constructor(secret?: string | Uint8Array) {
    this.h = secret === undefined ? createHash('sha256') : createHmac('sha256', secret);
  }
  update(data: string | Uint8Array): void {
    this.h.update(data);
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.h.digest());
  }
}

const PAGES = [
  `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>b</Name><IsTruncated>true</IsTruncated><KeyCount>2</KeyCount>
   <Contents><Key>repo/m/a &amp; b&lt;1&gt;.txt</Key><Size>5</Size><ETag>&quot;0123456789abcdef0123456789abcdef&quot;</ETag></Contents>
   <Contents><Key>repo/m/1/model.onnx</Key><Size>317</Size><ETag>"aaaa-2"</ETag></Contents>
   <NextContinuationToken>1/Ab+c=</NextContinuationToken></ListBucketResult>`,
  `<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>repo/m/&#233;&#x4E2D;</Key><Size>0</Size><ETag>&quot;d41d8cd98f00b204e9800998ecf8427e&quot;</ETag></Contents></ListBucketResult>`,
];

async function withStandIn(answer: (req: IncomingMessage, n: number) => [number, string], fn: (port: number, seen: IncomingMessage[]) => Promise<void>): Promise<void> {
  const seen: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    const [status, body] = answer(req, seen.length);
    seen.push(req);
    res.writeHead(status, { 'content-type': 'application/xml' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await fn((server.address() as AddressInfo).port, seen);
  } finally {
    server.close();
  }
}

test('a listing without the SDK is signed as the SDK signs it, pages on, and reads keys and ETags as the SDK does', async () => {
  await withStandIn((_req, n) => [200, PAGES[n]!], async (port, seen) => {
    const lister = plainLister(parseCloudUrl(`s3://127.0.0.1:${port}/b/repo`), KEY, 'eu-west-1', {});
    assert.ok(lister);
    const objects = await lister('repo/m/');
    assert.deepEqual(objects, [
      { key: 'repo/m/a & b<1>.txt', size: 5, etag: '0123456789abcdef0123456789abcdef', md5: '0123456789abcdef0123456789abcdef' },
      { key: 'repo/m/1/model.onnx', size: 317, etag: 'aaaa-2' },
      { key: 'repo/m/é中', size: 0, etag: 'd41d8cd98f00b204e9800998ecf8427e', md5: 'd41d8cd98f00b204e9800998ecf8427e' },
    ]);
    assert.equal(seen.length, 2);
    const signer = new SignatureV4({ credentials: { accessKeyId: KEY.keyId, secretAccessKey: KEY.secretKey, sessionToken: KEY.sessionToken }, region: 'eu-west-1', service: 's3', sha256: Sha256 as never, uriEscapePath: false });
    for (const [i, req] of seen.entries()) {
      const url = new URL(req.url!, `http://127.0.0.1:${port}`);
      assert.equal(url.pathname, '/b');
      assert.deepEqual(Object.fromEntries(url.searchParams), { 'list-type': '2', prefix: 'repo/m/', ...(i === 1 ? { 'continuation-token': '1/Ab+c=' } : {}) });
      const date = req.headers['x-amz-date'] as string;
      const headers = { host: req.headers.host!, 'x-amz-date': date, 'x-amz-content-sha256': req.headers['x-amz-content-sha256'] as string, 'x-amz-security-token': req.headers['x-amz-security-token'] as string };
      const signed = await signer.sign({ method: 'GET', protocol: 'http:', hostname: '127.0.0.1', port, path: url.pathname, query: Object.fromEntries(url.searchParams), headers } as never,
        { signingDate: new Date(`${date.slice(0, 4)}-${date.slice(4, 6)}-${date.slice(6, 8)}T${date.slice(9, 11)}:${date.slice(11, 13)}:${date.slice(13, 15)}Z`) });
      assert.equal(req.headers.authorization, (signed as unknown as { headers: Record<string, string> }).headers.authorization);
    }
  });
});

test('a refusal reads as the SDK\'s error (code, message, HTTP status), which decides retrying', async () => {
  await withStandIn(() => [403, '<Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match</Message></Error>'], async (port) => {
    const lister = plainLister(parseCloudUrl(`s3://127.0.0.1:${port}/b`), KEY, 'us-east-1', {})!;
    await assert.rejects(lister(''), (e: Error & { $metadata?: { httpStatusCode?: number } }) =>
      e.name === 'SignatureDoesNotMatch' && /does not match/.test(e.message) && e.$metadata?.httpStatusCode === 403);
  });
});

test('the SDK lists where there is no key pair, or where the address would not be the SDK\'s', () => {
  const aws = parseCloudUrl('s3://bucket/repo');
  assert.ok(plainLister(aws, KEY, 'us-east-1', {}));
  assert.equal(plainLister(aws, {}, 'us-east-1', {}), undefined);
  assert.equal(plainLister(aws, { profile: 'p' }, 'us-east-1', {}), undefined);
  assert.equal(plainLister(aws, KEY, 'us-east-1', { AWS_ENDPOINT_URL_S3: 'http://elsewhere:9000' }), undefined);
  assert.equal(plainLister(aws, KEY, 'us-east-1', { AWS_USE_FIPS_ENDPOINT: 'true' }), undefined);
  assert.equal(plainLister(aws, KEY, 'cn-north-1', {}), undefined);
  assert.equal(plainLister(aws, KEY, 'us-gov-west-1', {}), undefined);
});
