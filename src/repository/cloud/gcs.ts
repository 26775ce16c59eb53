import type { GcsCredential } from './credentials.js';
import type { ObjectStore, StoredObject } from './store.js';
import type { CloudUrl } from './url.js';

/**
 * Google Cloud Storage through @google-cloud/storage: a key file when one is given, else the SDK's Application
 * Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, GKE workload identity, the metadata server). The SDK
 * itself honours STORAGE_EMULATOR_HOST.
 */
export async function gcsStore(url: CloudUrl, cred: GcsCredential): Promise<ObjectStore> {
  const { Storage } = await import('@google-cloud/storage');
  const storage = new Storage({
    ...(cred.keyFile ? { keyFilename: cred.keyFile } : {}),
    retryOptions: { autoRetry: false }, // the repository retries, the same way for every store
  });
  const bucket = storage.bucket(url.bucket);
  type Page = { items?: { name: string; size?: string; etag?: string; md5Hash?: string; generation?: string }[]; prefixes?: string[]; nextPageToken?: string };
  const pages = async (prefix: string, delimiter: string | undefined, each: (p: Page) => void): Promise<void> => {
    let pageToken: string | undefined;
    do {
      const [, , response] = await bucket.getFiles({ prefix, autoPaginate: false, ...(delimiter ? { delimiter } : {}), ...(pageToken ? { pageToken } : {}) });
      const page = (response ?? {}) as Page;
      each(page);
      pageToken = page.nextPageToken;
    } while (pageToken);
  };
  return {
    async listObjects(prefix) {
      const out: StoredObject[] = [];
      await pages(prefix, undefined, (p) => {
        for (const o of p.items ?? []) {
          const md5 = o.md5Hash ? Buffer.from(o.md5Hash, 'base64').toString('hex') : undefined;
          out.push({ key: o.name, size: Number(o.size ?? 0), etag: o.generation ?? o.etag ?? md5 ?? '', ...(md5 ? { md5 } : {}) });
        }
      });
      return out;
    },
    async read(key) {
      // The repository checks size and MD5 itself, for every store alike.
      return bucket.file(key).createReadStream({ validation: false });
    },
  };
}
