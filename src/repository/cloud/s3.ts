import { createRequire } from 'node:module';
import type { Readable } from 'node:stream';
import type { S3Credential } from './credentials.js';
import { plainLister } from './s3-listing.js';
import type { ObjectStore, StoredObject } from './store.js';
import type { CloudUrl } from './url.js';

/**
 * S3 through @aws-sdk/client-s3. As in Triton: explicit keys first, then a profile, then the SDK's default
 * chain (environment, web identity, instance metadata); a custom endpoint is addressed path-style.
 * AWS_DEFAULT_REGION is Triton's region variable, which the v3 SDK does not read. With a key pair the
 * listing goes without the SDK (s3-listing.ts), which then loads with the first download only.
 */
export async function s3Store(url: CloudUrl, cred: S3Credential, env: NodeJS.ProcessEnv): Promise<ObjectStore> {
  const region = cred.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1';
  const lister = plainLister(url, cred, region, env);
  let sdk: Promise<ObjectStore> | undefined;
  const viaSdk = (): Promise<ObjectStore> => (sdk ??= sdkStore(url, cred, region).catch((e) => {
    sdk = undefined;
    throw e;
  }));
  return {
    listObjects: async (prefix) => (lister ? lister(prefix) : (await viaSdk()).listObjects(prefix)),
    read: async (key) => (await viaSdk()).read(key),
    prepareReads: async () => void (await viaSdk()),
  };
}

async function sdkStore(url: CloudUrl, cred: S3Credential, region: string): Promise<ObjectStore> {
  // The SDK's notice that its releases after January 2027 need Node 22 says nothing about the pinned release
  // that runs here, and would land in the log unformatted at every start; a user who sets the variable wins.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  // The SDK ships CommonJS only. Required rather than imported, its modules skip the ESM loader's format
  // detection and export scan: about a third of its load time, which the first request through it waits for.
  const { S3Client, ListObjectsV2Command, GetObjectCommand } = createRequire(import.meta.url)('@aws-sdk/client-s3') as typeof import('@aws-sdk/client-s3');
  let credentials;
  if (cred.keyId && cred.secretKey) {
    credentials = { accessKeyId: cred.keyId, secretAccessKey: cred.secretKey, ...(cred.sessionToken ? { sessionToken: cred.sessionToken } : {}) };
  }
  const common = {
    region,
    maxAttempts: 1, // the repository retries, the same way for every store
    ...(url.endpoint ? { endpoint: url.endpoint, forcePathStyle: true } : {}),
  };
  let client = new S3Client({ ...common, ...(credentials ? { credentials } : cred.profile ? { profile: cred.profile } : {}) });
  // With no credentials given, the default chain is tried first; when it finds none at all, requests go unsigned,
  // which a public bucket (or a store without authentication) answers: anonymous access where the store allows it.
  const mayGoAnonymous = !credentials && !cred.profile;
  const call = async <T>(op: (c: typeof client) => Promise<T>): Promise<T> => {
    try {
      return await op(client);
    } catch (e) {
      if (!mayGoAnonymous || (e as Error).name !== 'CredentialsProviderError') throw e;
      client = new S3Client({ ...common, credentials: { accessKeyId: '', secretAccessKey: '' }, signer: { sign: async (request) => request } });
      return await op(client);
    }
  };
  const bucket = url.bucket;
  return {
    async listObjects(prefix) {
      const out: StoredObject[] = [];
      let token: string | undefined;
      do {
        const r = await call((c) => c.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token })));
        for (const o of r.Contents ?? []) {
          if (!o.Key) continue;
          const etag = (o.ETag ?? '').replace(/"/g, '');
          // A single-part upload's ETag is the MD5 of its bytes; a multipart one (with a '-') is not.
          out.push({ key: o.Key, size: o.Size ?? 0, etag, ...(/^[0-9a-f]{32}$/.test(etag) ? { md5: etag } : {}) });
        }
        token = r.IsTruncated ? r.NextContinuationToken : undefined;
      } while (token);
      return out;
    },
    async read(key) {
      const r = await call((c) => c.send(new GetObjectCommand({ Bucket: bucket, Key: key })));
      return r.Body as Readable;
    },
  };
}
