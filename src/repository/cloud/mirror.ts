import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { dirname, join, posix, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Logger } from '../../observability/logger.js';
import { isInside } from '../local.js';
import { withRetries, type RetryPolicy } from './retry.js';
import { describeError, StoreError, type ObjectStore, type StoredObject } from './store.js';

/**
 * The download cache: a model's objects mirrored into a local folder. Each file is written under a temporary
 * name beside the cache, checked (size, and MD5 where the store states one), then renamed into place, so no
 * half-written file is ever in a model folder. A manifest per model records the ETag each local file was
 * downloaded at; a file whose ETag and size are unchanged is not downloaded again, across restarts too.
 */
export interface MirrorPaths {
  /** The model's local folder. */
  readonly dir: string;
  /** The model's manifest file. */
  readonly manifest: string;
  /** Where partial downloads live until complete; on the same file system as `dir`. */
  readonly partial: string;
}

export interface MirrorOptions {
  readonly logger: Logger;
  readonly retry: RetryPolicy;
  /** Runs a download when the source's pool has room. */
  readonly pool: <T>(fn: () => Promise<T>) => Promise<T>;
  /** The model's URL, for messages. */
  readonly url: string;
  /** Progress is logged for a download that runs longer than this. */
  readonly progressMs?: number;
  /** A download that receives nothing for this long is dropped and tried again (a connection gone silent). */
  readonly idleMs?: number;
}

type Manifest = Record<string, { etag: string; size: number }>;

export interface MirrorResult {
  readonly downloaded: number;
  readonly bytes: number;
}

/**
 * Brings `paths.dir` in line with the objects under `prefix` (which ends in '/'): those given in `listed`, from
 * a listing just made, or else listed here. `openStore` is called only when the store is needed: a model whose
 * files are all current never loads the store's SDK, which its listing may not have needed (see s3.ts).
 */
export async function mirrorModel(openStore: () => Promise<ObjectStore>, prefix: string, paths: MirrorPaths, opts: MirrorOptions, listed?: readonly StoredObject[]): Promise<MirrorResult> {
  const retryLog = (what: string) => (e: unknown, attempt: number, delay: number) =>
    opts.logger.warn(`${what} failed (attempt ${attempt} of ${opts.retry.attempts}), retrying in ${delay} ms: ${describeError(e)}`);
  const objects = listed ?? await withRetries(async () => (await openStore()).listObjects(prefix), opts.retry, retryLog(`listing ${opts.url}`));
  const files = new Map<string, StoredObject>();
  for (const o of objects) {
    const rel = relativeKey(o.key, prefix, opts.url);
    if (rel !== undefined) files.set(rel, o);
  }
  if (files.size === 0) throw new StoreError(`${opts.url} holds no files`, false);
  await mkdir(paths.dir, { recursive: true });
  await mkdir(paths.partial, { recursive: true });
  const manifest = await readManifest(paths.manifest);
  const stale: [string, StoredObject][] = [];
  for (const [rel, o] of files) {
    const had = manifest[rel];
    const local = await stat(join(paths.dir, rel)).catch(() => undefined);
    if (!had || had.etag !== o.etag || had.size !== o.size || !local?.isFile() || local.size !== o.size) stale.push([rel, o]);
  }
  const store = stale.length > 0 ? await openStore() : undefined;
  await store?.prepareReads?.();
  const total = stale.reduce((n, [, o]) => n + o.size, 0);
  let done = 0;
  const started = Date.now();
  const progress = stale.length === 0 ? undefined : setInterval(() => {
    opts.logger.info(`downloading ${opts.url}: ${mb(done)} of ${mb(total)} MB in ${Math.round((Date.now() - started) / 1000)} s`);
  }, opts.progressMs ?? 5000).unref();
  try {
    const results = await Promise.allSettled(stale.map(([rel, o]) => opts.pool(() =>
      withRetries(() => download(store!, o, join(paths.dir, rel), paths.partial, opts.idleMs ?? 30_000, (n) => (done += n)), opts.retry, retryLog(`downloading ${opts.url}/${rel}`))
        .then(() => { manifest[rel] = { etag: o.etag, size: o.size }; }))));
    let changed = stale.length > 0;
    for (const rel of Object.keys(manifest)) {
      if (!files.has(rel)) {
        delete manifest[rel];
        changed = true;
      }
    }
    // An unchanged model costs a restart no write: the manifest already says what the folder holds.
    if (changed) await writeManifest(paths.manifest, manifest);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  } finally {
    if (progress) clearInterval(progress);
  }
  await removeOthers(paths.dir, new Set(files.keys()));
  if (stale.length > 0) opts.logger.info(`downloaded ${stale.length} file(s) of ${opts.url}, ${mb(total)} MB in ${((Date.now() - started) / 1000).toFixed(2)} s`);
  return { downloaded: stale.length, bytes: total };
}

/** The download cache of one repository: a folder per model, a manifest per model, and partial downloads. */
export interface CacheLayout {
  readonly models: string;
  readonly manifests: string;
  readonly partial: string;
}

/** A partial download untouched this long was abandoned (a download receiving nothing is dropped far sooner). */
const ABANDONED_MS = 10 * 60_000;

/**
 * Removes what the store no longer has from the cache after a listing: the folders and manifests of models
 * gone from the repository (Triton keeps no copy of a model once loaded, so a model gone from the store could
 * not be reloaded from it either), and partial downloads a killed server left behind. Another server sharing
 * the cache folder may be downloading: only partial files untouched for minutes go.
 */
export async function pruneCache(cache: CacheLayout, models: ReadonlySet<string>): Promise<void> {
  for (const e of await readdir(cache.models, { withFileTypes: true }).catch(() => [])) {
    if (!models.has(e.name)) await rm(join(cache.models, e.name), { recursive: true, force: true });
  }
  for (const e of await readdir(cache.manifests).catch(() => [])) {
    if (e.endsWith('.json') && !models.has(e.slice(0, -'.json'.length))) await rm(join(cache.manifests, e), { force: true });
  }
  const now = Date.now();
  for (const e of await readdir(cache.partial).catch(() => [])) {
    const s = await stat(join(cache.partial, e)).catch(() => undefined);
    if (s && now - s.mtimeMs > ABANDONED_MS) await rm(join(cache.partial, e), { force: true });
  }
}

/**
 * The object's path inside the model folder, or undefined for a folder marker. A key that would leave the
 * folder (`..`, an absolute or empty segment, a backslash) is refused: the model does not load.
 */
export function relativeKey(key: string, prefix: string, url: string): string | undefined {
  if (!key.startsWith(prefix)) throw new StoreError(`${url}: the store listed '${key}', outside the model's prefix`, false);
  const rel = key.slice(prefix.length);
  if (rel === '' || rel.endsWith('/')) return undefined;
  const segments = rel.split('/');
  if (rel.includes('\\') || rel.includes('\0') || segments.some((s) => s === '' || s === '.' || s === '..') || posix.isAbsolute(rel) || !isInside('/m', join('/m', rel))) {
    throw new StoreError(`${url}: the object '${rel}' would be written outside the model's folder; refused`, false);
  }
  return segments.join(sep);
}

/**
 * What the file stream may hold while a write is in flight. With the default 16 KiB every 64 KiB chunk from the
 * socket stops the body until its write is done, and the stop and restart cost more CPU than the write: a
 * megabyte lets chunks arriving meanwhile queue and go to disk together (measured on a 200 MB object against
 * s3rver: 17% less CPU per byte, with the MD5 check on).
 */
const WRITE_BUFFER_BYTES = 1024 * 1024;

async function download(store: ObjectStore, o: StoredObject, target: string, partialDir: string, idleMs: number, progress: (n: number) => void): Promise<void> {
  const tmp = join(partialDir, `${randomBytes(8).toString('hex')}.partial`);
  const md5 = o.md5 ? createHash('md5') : undefined;
  let bytes = 0;
  let idle: NodeJS.Timeout | undefined;
  try {
    const body = await store.read(o.key);
    idle = setTimeout(() => body.destroy(new StoreError(`${o.key}: nothing received for ${Math.round(idleMs / 1000)} s`, true)), idleMs);
    // A listener beside the pipe, not a stage in it: every chunk is counted and hashed as it passes, without
    // the extra stream hop a Transform costs on each chunk.
    body.on('data', (chunk: Buffer) => {
      idle?.refresh();
      bytes += chunk.length;
      progress(chunk.length);
      md5?.update(chunk);
    });
    await pipeline(body, createWriteStream(tmp, { flags: 'wx', highWaterMark: WRITE_BUFFER_BYTES }));
    if (bytes !== o.size) throw new StoreError(`${o.key}: received ${bytes} bytes, the store listed ${o.size}`, true);
    if (md5 && md5.digest('hex') !== o.md5) throw new StoreError(`${o.key}: the bytes received do not match the store's MD5`, true);
    await mkdir(dirname(target), { recursive: true });
    await rename(tmp, target);
  } catch (e) {
    progress(-bytes);
    await rm(tmp, { force: true });
    throw e;
  } finally {
    clearTimeout(idle);
  }
}

/** Deletes local files the store no longer has, and folders left empty. */
async function removeOthers(dir: string, keep: ReadonlySet<string>, rel = ''): Promise<boolean> {
  const entries = await readdir(join(dir, rel), { withFileTypes: true }).catch(() => []);
  let empty = true;
  for (const e of entries) {
    const r = rel === '' ? e.name : join(rel, e.name);
    if (e.isDirectory()) {
      if (await removeOthers(dir, keep, r)) await rmdir(join(dir, r)).catch(() => undefined);
      else empty = false;
    } else if (!keep.has(r)) {
      await rm(join(dir, r), { force: true });
    } else {
      empty = false;
    }
  }
  return empty;
}

async function readManifest(path: string): Promise<Manifest> {
  try {
    const m = JSON.parse(await readFile(path, 'utf8')) as unknown;
    return m && typeof m === 'object' ? (m as Manifest) : {};
  } catch {
    return {};
  }
}

async function writeManifest(path: string, m: Manifest): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(tmp, JSON.stringify(m));
  await rename(tmp, path);
}

function mb(n: number): string {
  return (n / 1e6).toFixed(1);
}
