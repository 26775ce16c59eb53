import type { Readable } from 'node:stream';
import type { AsCredential } from './credentials.js';
import { StoreError, type ObjectStore, type StoredObject } from './store.js';
import type { CloudUrl } from './url.js';

/**
 * Azure Blob Storage through @azure/storage-blob. As in Triton: an account key (shared key), a managed
 * identity (with AZURE_STORAGE_CLIENT_ID for a user-assigned one), DefaultAzureCredential, or anonymous.
 * The service is https://<account>.blob.core.windows.net; AZURE_STORAGE_BLOB_ENDPOINT (Nereid's) replaces it,
 * for an emulator such as Azurite or a sovereign cloud.
 */
export async function azureStore(url: CloudUrl, cred: AsCredential, env: NodeJS.ProcessEnv): Promise<ObjectStore> {
  const blob = await import('@azure/storage-blob');
  const account = cred.account ?? url.account!;
  const endpoint = env.AZURE_STORAGE_BLOB_ENDPOINT || `https://${account}.blob.core.windows.net`;
  const options = { retryOptions: { maxTries: 1 } }; // the repository retries, the same way for every store
  let service;
  if (cred.authType === 'managed_identity' || cred.authType === 'default') {
    const identity = await import('@azure/identity');
    const token = cred.authType === 'default' ? new identity.DefaultAzureCredential()
      : cred.clientId ? new identity.ManagedIdentityCredential({ clientId: cred.clientId }) : new identity.ManagedIdentityCredential();
    service = new blob.BlobServiceClient(endpoint, token, options);
  } else if (cred.key) {
    service = new blob.BlobServiceClient(endpoint, new blob.StorageSharedKeyCredential(account, cred.key), options);
  } else {
    service = new blob.BlobServiceClient(endpoint, new blob.AnonymousCredential(), options);
  }
  const container = service.getContainerClient(url.bucket);
  return {
    async listObjects(prefix) {
      const out: StoredObject[] = [];
      for await (const b of container.listBlobsFlat({ prefix })) {
        const md5 = b.properties.contentMD5 ? Buffer.from(b.properties.contentMD5).toString('hex') : undefined;
        out.push({ key: b.name, size: b.properties.contentLength ?? 0, etag: (b.properties.etag ?? '').replace(/"/g, ''), ...(md5 ? { md5 } : {}) });
      }
      return out;
    },
    async read(key) {
      const r = await container.getBlobClient(key).download();
      if (!r.readableStreamBody) throw new StoreError(`${key}: the store sent no body`, true);
      return r.readableStreamBody as Readable;
    },
  };
}
