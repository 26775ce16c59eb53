import { createHash, createHmac } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { S3Credential } from './credentials.js';
import type { StoredObject } from './store.js';
import type { CloudUrl } from './url.js';

/**
 * ListObjectsV2 over node:http, signed with Signature Version 4, for a repository whose credential is a key
 * pair. A restart with the bucket unchanged makes this one request and downloads nothing; through the SDK it
 * would first load the SDK (about 120 ms of CPU) and pay the SDK's first request (50 ms more), longer than
 * everything else such a restart does. The SDK still does every download, and every listing this cannot
 * address exactly as the SDK would (see listingEndpoint).
 */
export type Lister = (prefix: string) => Promise<StoredObject[]>;

interface Endpoint {
  readonly origin: string;
  /** The bucket's path on the origin: '/bucket' path-style, '' when the bucket is in the host name. */
  readonly path: string;
  readonly region: string;
}

/** Variables by which the SDK would address S3 differently (FIPS, dual-stack, another endpoint). */
const ENDPOINT_VARIABLES = ['AWS_ENDPOINT_URL', 'AWS_ENDPOINT_URL_S3', 'AWS_USE_FIPS_ENDPOINT', 'AWS_USE_DUALSTACK_ENDPOINT'];

/** The lister for `url`, or undefined where the SDK must list (no key pair, or an address this would not find). */
export function plainLister(url: CloudUrl, cred: S3Credential, region: string, env: NodeJS.ProcessEnv): Lister | undefined {
  if (!cred.keyId || !cred.secretKey) return undefined;
  const endpoint = listingEndpoint(url, region, env);
  if (!endpoint) return undefined;
  const key: KeyPair = { id: cred.keyId, secret: cred.secretKey, token: cred.sessionToken };
  return async (prefix) => {
    const out: StoredObject[] = [];
    let token: string | undefined;
    do {
      const page = parsePage(await signedGet(endpoint, key, { 'list-type': '2', prefix, ...(token ? { 'continuation-token': token } : {}) }));
      out.push(...page.objects);
      token = page.next;
    } while (token);
    return out;
  };
}

/**
 * Where the SDK, as s3Store configures it, sends the request: a custom endpoint path-style; AWS's commercial
 * regions with the bucket in the host name (path-style for a name that cannot be a host label). Other
 * partitions and variables that change the address are left to the SDK.
 */
function listingEndpoint(url: CloudUrl, region: string, env: NodeJS.ProcessEnv): Endpoint | undefined {
  if (ENDPOINT_VARIABLES.some((k) => env[k])) return undefined;
  if (url.endpoint) return { origin: url.endpoint, path: `/${url.bucket}`, region };
  if (!/^[a-z]{2}-[a-z]+-\d+$/.test(region) || /^(cn|us-gov|us-iso)/.test(region)) return undefined;
  if (/^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/.test(url.bucket)) return { origin: `https://${url.bucket}.s3.${region}.amazonaws.com`, path: '', region };
  return { origin: `https://s3.${region}.amazonaws.com`, path: `/${url.bucket}`, region };
}

/** How long a listing request may go without a byte from the store. */
const LISTING_IDLE_MS = 30_000;

const EMPTY_SHA256 = createHash('sha256').update('').digest('hex');

/** RFC 3986 encoding, as SigV4's canonical query wants it. */
function uriEncode(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

interface KeyPair {
  readonly id: string;
  readonly secret: string;
  readonly token?: string | undefined;
}

async function signedGet(endpoint: Endpoint, key: KeyPair, query: Record<string, string>): Promise<string> {
  const target = new URL(endpoint.origin);
  const path = endpoint.path === '' ? '/' : endpoint.path;
  const search = Object.keys(query).sort().map((k) => `${uriEncode(k)}=${uriEncode(query[k]!)}`).join('&');
  const headers = signedHeaders(target.host, path, search, endpoint.region, key);
  const { request } = target.protocol === 'https:' ? await import('node:https') : await import('node:http');
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = request({ protocol: target.protocol, hostname: target.hostname, port: target.port, path: `${path}?${search}`, headers, agent: false }, resolve);
    // A store that takes the connection and never answers fails the attempt (and is retried) instead of
    // holding the start forever.
    req.setTimeout(LISTING_IDLE_MS, () => req.destroy(new Error(`no answer from ${target.host} in ${LISTING_IDLE_MS / 1000} s`)));
    req.on('error', reject).end();
  });
  let body = '';
  res.setEncoding('utf8');
  for await (const chunk of res) body += chunk as string;
  if (res.statusCode !== 200) throw storeRefusal(res.statusCode ?? 0, body);
  return body;
}

/** The headers of a GET with no body, Authorization included (Signature Version 4 for service s3). */
function signedHeaders(host: string, path: string, search: string, region: string, key: KeyPair): Record<string, string> {
  const amzDate = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
  const headers: Record<string, string> = { host, 'x-amz-content-sha256': EMPTY_SHA256, 'x-amz-date': amzDate };
  if (key.token) headers['x-amz-security-token'] = key.token;
  const names = Object.keys(headers).sort();
  const canonical = ['GET', path, search, ...names.map((n) => `${n}:${headers[n]}`), '', names.join(';'), EMPTY_SHA256].join('\n');
  const scope = `${amzDate.slice(0, 8)}/${region}/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, createHash('sha256').update(canonical).digest('hex')].join('\n');
  let signingKey: Buffer = Buffer.from(`AWS4${key.secret}`);
  for (const part of scope.split('/')) signingKey = createHmac('sha256', signingKey).update(part).digest();
  const signature = createHmac('sha256', signingKey).update(toSign).digest('hex');
  return { ...headers, authorization: `AWS4-HMAC-SHA256 Credential=${key.id}/${scope}, SignedHeaders=${names.join(';')}, Signature=${signature}` };
}

/** The store's error as the SDK reports it (name = the error code, the HTTP status in $metadata): see store.ts. */
function storeRefusal(status: number, body: string): Error {
  return Object.assign(new Error(tag(body, 'Message') ?? ''), { name: tag(body, 'Code') ?? 'Error', $metadata: { httpStatusCode: status } });
}

function parsePage(xml: string): { objects: StoredObject[]; next: string | undefined } {
  const objects: StoredObject[] = [];
  for (const m of xml.matchAll(/<Contents>([\s\S]*?)<\/Contents>/g)) {
    const k = tag(m[1]!, 'Key');
    if (k === undefined) continue;
    const etag = (tag(m[1]!, 'ETag') ?? '').replace(/"/g, '');
    // A single-part upload's ETag is the MD5 of its bytes; a multipart one (with a '-') is not.
    objects.push({ key: k, size: Number(tag(m[1]!, 'Size') ?? 0), etag, ...(/^[0-9a-f]{32}$/.test(etag) ? { md5: etag } : {}) });
  }
  return { objects, next: tag(xml, 'IsTruncated') === 'true' ? tag(xml, 'NextContinuationToken') : undefined };
}

/** The text of the first element named `name`, entities decoded. */
function tag(xml: string, name: string): string | undefined {
  const m = new RegExp(`<${name}>([\\s\\S]*?)</${name}>`).exec(xml);
  return m ? decodeEntities(m[1]!) : undefined;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (whole, e: string) => {
    if (e.startsWith('#x')) return String.fromCodePoint(parseInt(e.slice(2), 16));
    if (e.startsWith('#')) return String.fromCodePoint(Number(e.slice(1)));
    return ENTITIES[e] ?? whole;
  });
}
