import { createHash } from 'node:crypto';
import { lstat, mkdir, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { invalidArg } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import { isCloudUrl, parseCloudUrl, type CloudUrl, type Scheme } from './cloud/url.js';
import { assertModelName, modelKey, subfolders, type ModelLocation, type RepositoryScan } from './local.js';

/**
 * Where model files come from. A source lists its model folders and brings a model's files into a local
 * folder (`root`/name), after which everything reads them as it reads a local repository: configs, versions,
 * poll mode's timestamps. A local folder is its own root and fetches nothing.
 */
export interface RepositorySource {
  /** The repository as given (a resolved path or a URL): its namespace with --model-namespacing. */
  readonly id: string;
  /** The local folder holding the model folders. */
  readonly root: string;
  listModels(): Promise<string[]>;
  /** Makes `root`/name complete and current; a failure leaves the model unloadable, never half there. */
  fetchModel?(name: string): Promise<void>;
}

export interface SourceOptions {
  readonly logger: Logger;
  /** --repository-cache-dir: where models of URL repositories are downloaded (default: under the OS temp dir). */
  readonly cacheDir?: string;
  readonly env?: NodeJS.ProcessEnv;
}

/** The default download cache folder. */
export function defaultCacheDir(): string {
  return join(tmpdir(), 'nereid-repository-cache');
}

/** Triton's variables naming where it downloads each store's models; they win over the cache flag. */
const MOUNT_DIRECTORY: Record<Scheme, string> = { s3: 'TRITON_AWS_MOUNT_DIRECTORY', gs: 'TRITON_GCS_MOUNT_DIRECTORY', as: 'TRITON_AZURE_MOUNT_DIRECTORY' };

export function openSources(repositories: readonly string[], opts: SourceOptions): RepositorySource[] {
  const seen = new Set<string>();
  const out: RepositorySource[] = [];
  for (const r of repositories) {
    const source = isCloudUrl(r) ? cloudSource(parseCloudUrl(r), opts) : localSource(resolve(r));
    if (seen.has(source.id)) continue; // tritonserver keeps repositories in a set
    seen.add(source.id);
    out.push(source);
  }
  return out;
}

export function localSource(path: string): RepositorySource {
  return {
    id: path,
    root: path,
    async listModels() {
      let entries;
      try {
        entries = await readdir(path, { withFileTypes: true });
      } catch (e) {
        throw invalidArg(`failed to stat file ${path}: ${(e as Error).message}`);
      }
      // One readdir for the whole repository: a model's own folder is read when it loads, not when listed.
      return subfolders(path, entries);
    },
  };
}

function cloudSource(url: CloudUrl, opts: SourceOptions): RepositorySource {
  const env = opts.env ?? process.env;
  const base = env[MOUNT_DIRECTORY[url.scheme]] || opts.cacheDir || defaultCacheDir();
  const own = join(base, `${url.scheme}-${createHash('sha256').update(url.url).digest('hex').slice(0, 16)}`);
  const root = join(own, 'models');
  // The SDKs load with the first call, never at startup without URLs.
  let repo: Promise<import('./cloud/source.js').CloudRepository> | undefined;
  const open = () => (repo ??= (async () => {
    await ensureOwnFolder(base, own);
    const { CloudRepository } = await import('./cloud/source.js');
    return new CloudRepository(url, { models: root, manifests: join(own, 'manifests'), partial: join(own, 'partial') }, { logger: opts.logger, env });
  })().catch((e) => {
    repo = undefined;
    throw e;
  }));
  return {
    id: url.url,
    root,
    listModels: async () => (await open()).listModels(),
    fetchModel: async (name) => (await open()).fetchModel(name),
  };
}

/**
 * The cache folder must be this user's own: in a shared temp dir another user could otherwise plant model
 * files there for this server to load.
 */
async function ensureOwnFolder(base: string, own: string): Promise<void> {
  await mkdir(own, { recursive: true, mode: 0o700 });
  const uid = process.getuid?.();
  for (const dir of [base, own]) {
    const s = await lstat(dir);
    if (!s.isDirectory() || (uid !== undefined && s.uid !== uid)) {
      throw invalidArg(`the repository cache folder ${dir} is not a folder of this user's; give another with --repository-cache-dir`);
    }
  }
}

/**
 * Every model of every source. With `namespacing` each source is a namespace, so no name is a duplicate.
 * A listing that fails fails the scan: in poll mode nothing is then unloaded for want of a listing.
 */
export async function scanSources(sources: readonly RepositorySource[], namespacing = false): Promise<RepositoryScan> {
  const models = new Map<string, ModelLocation>();
  const duplicates = new Map<string, string[]>();
  const listed = await Promise.all(sources.map((s) => s.listModels()));
  sources.forEach((source, i) => {
    for (const name of listed[i]!) {
      if (source.fetchModel && !validName(name)) continue;
      const location = locate(source, name, namespacing);
      if (namespacing) {
        models.set(location.key, location);
        continue;
      }
      const prev = models.get(name);
      if (prev || duplicates.has(name)) {
        duplicates.set(name, [...(duplicates.get(name) ?? [prev!.repository]), source.id]);
        models.delete(name);
        continue;
      }
      models.set(name, location);
    }
  });
  return { models, duplicates };
}

function locate(source: RepositorySource, name: string, namespacing: boolean): ModelLocation {
  const namespace = namespacing ? source.id : '';
  let fetched: Promise<void> | undefined;
  return {
    name, repository: source.id, root: source.root, dir: join(source.root, name), namespace, key: modelKey(namespace, name),
    // Once per scan: a load reads the files the scan's fetch brought.
    ...(source.fetchModel ? { fetch: () => (fetched ??= source.fetchModel!(name)) } : {}),
  };
}

function validName(name: string): boolean {
  try {
    assertModelName(name);
    return true;
  } catch {
    return false;
  }
}
