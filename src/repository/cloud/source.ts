import { join } from 'node:path';
import { NereidError } from '../../errors.js';
import type { Logger } from '../../observability/logger.js';
import { credentialFor, secretsOf, type AsCredential, type GcsCredential, type S3Credential } from './credentials.js';
import { mirrorModel, pruneCache, type CacheLayout } from './mirror.js';
import { boundedPool } from './pool.js';
import { DEFAULT_RETRY, withRetries, type RetryPolicy } from './retry.js';
import { describeError, type ObjectStore, type StoredObject } from './store.js';
import type { CloudUrl } from './url.js';

/**
 * A repository in an object store. This module, and the SDK of the store it talks to, load only when a
 * repository is a URL: a server on local folders never pays for them.
 */
export interface CloudSourceOptions {
  readonly logger: Logger;
  readonly env?: NodeJS.ProcessEnv;
  /** Files downloading at once from this repository. */
  readonly parallel?: number;
  readonly retry?: RetryPolicy;
}

export class CloudRepository {
  private store: Promise<ObjectStore> | undefined;
  private secrets: string[] = [];
  /** The last listing's objects per model, each taken by the model's next fetch (see listModels). */
  private listed = new Map<string, StoredObject[]>();
  private readonly pool;
  private readonly retry: RetryPolicy;
  private readonly env: NodeJS.ProcessEnv;

  constructor(private readonly url: CloudUrl, private readonly cache: CacheLayout, private readonly opts: CloudSourceOptions) {
    this.pool = boundedPool(opts.parallel ?? 8);
    this.retry = opts.retry ?? DEFAULT_RETRY;
    this.env = opts.env ?? process.env;
  }

  private prefix(): string {
    return this.url.prefix === '' ? '' : `${this.url.prefix}/`;
  }

  /**
   * The model folders, from one listing of every object under the repository (paged by the store): the scan
   * that follows fetches each model from it rather than listing each model again, so a restart with an
   * unchanged bucket costs one listing, not one per model. Each model's part is used once, by the fetch of
   * the scan that listed it; a later fetch lists afresh.
   */
  async listModels(): Promise<string[]> {
    const objects = await this.list();
    const prefix = this.prefix();
    const byModel = new Map<string, StoredObject[]>();
    for (const o of objects) {
      const slash = o.key.indexOf('/', prefix.length);
      if (slash <= prefix.length) continue; // an object beside the model folders, not in one
      const name = o.key.slice(prefix.length, slash);
      let list = byModel.get(name);
      if (!list) byModel.set(name, (list = []));
      list.push(o);
    }
    this.listed = byModel;
    // Only after a listing that succeeded: a store briefly unreachable must not empty the cache.
    await pruneCache(this.cache, new Set(byModel.keys()));
    return [...byModel.keys()];
  }

  private list(): Promise<StoredObject[]> {
    const prefix = this.prefix();
    return this.guard(`failed to list ${this.url.url}`, async (open) => {
      const store = await open();
      return withRetries(() => store.listObjects(prefix), this.retry,
        (e, attempt, delay) => this.opts.logger.warn(this.scrub(`listing ${this.url.url} failed (attempt ${attempt} of ${this.retry.attempts}), retrying in ${delay} ms: ${describeError(e)}`)));
    });
  }

  async fetchModel(name: string): Promise<void> {
    const url = `${this.url.url}/${name}`;
    const listed = this.listed.get(name);
    this.listed.delete(name);
    const paths = { dir: join(this.cache.models, name), manifest: join(this.cache.manifests, `${name}.json`), partial: this.cache.partial };
    await this.guard(`failed to download ${url}`, (store) => mirrorModel(store, `${this.prefix()}${name}/`, paths, {
      logger: this.opts.logger, retry: this.retry, pool: this.pool, url,
    }, listed));
  }

  /**
   * Runs `op`, which opens the store when it needs it; a failure becomes one line naming the URL and the cause,
   * secrets scrubbed.
   */
  private async guard<T>(what: string, op: (open: () => Promise<ObjectStore>) => Promise<T>): Promise<T> {
    try {
      return await op(() => this.open());
    } catch (e) {
      // A value with a code, like every refusal: the command line prints the message, not a stack.
      throw new NereidError('UNAVAILABLE', this.scrub(`${what}: ${describeError(e)}`));
    }
  }

  private open(): Promise<ObjectStore> {
    this.store ??= this.connect().catch((e) => {
      this.store = undefined; // a later poll tries again (a credential file fixed, say)
      throw e;
    });
    return this.store;
  }

  private async connect(): Promise<ObjectStore> {
    const cred = await credentialFor(this.url, this.env);
    this.secrets = secretsOf(cred);
    if (this.url.scheme === 's3') return (await import('./s3.js')).s3Store(this.url, cred as S3Credential, this.env);
    if (this.url.scheme === 'gs') return (await import('./gcs.js')).gcsStore(this.url, cred as GcsCredential);
    return (await import('./azure.js')).azureStore(this.url, cred as AsCredential, this.env);
  }

  private scrub(text: string): string {
    let out = text;
    for (const s of this.secrets) out = out.split(s).join('***');
    return out;
  }
}
