import type { Dirent } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { isAbsolute, join, resolve, sep } from 'node:path';
import { invalidArg } from '../errors.js';

/**
 * Model repositories on local disk, in Triton's layout: every subfolder of a repository is a model, every
 * numeric subfolder of a model is a version. This module only reads the file system; which versions load and
 * when is the model manager's business.
 */

export interface ModelLocation {
  readonly name: string;
  /** The repository as given: a resolved folder or a URL. */
  readonly repository: string;
  /** The local folder the model's folder is in (for a URL repository, the download cache's). */
  readonly root: string;
  readonly dir: string;
  /** The repository with --model-namespacing, else '': models are told apart by namespace and name. */
  readonly namespace: string;
  /** The model's identity in the server: its name, preceded by its namespace when it has one. */
  readonly key: string;
  /** For a repository at a URL: brings the model's files into `dir` (see repository/source.ts). */
  readonly fetch?: () => Promise<void>;
}

/** A model's identity: the name alone without namespacing, as Triton collapses the namespace then. */
export function modelKey(namespace: string, name: string): string {
  return namespace === '' ? name : `${namespace}\u0000${name}`;
}

/** Folders inside a model that are never versions. */
const NOT_VERSIONS = new Set(['warmup', 'initial_state', 'configs']);

export interface RepositoryScan {
  /** By key (see modelKey). */
  readonly models: Map<string, ModelLocation>;
  /** Names found in more than one repository: Triton loads none of them. */
  readonly duplicates: Map<string, string[]>;
}

/**
 * The names of the folders among a folder's entries, symlinks to folders included: Triton tells folders by
 * stat(), which follows links. The entries' own types answer for all but links, so listing N plain folders
 * costs the one readdir and a link one stat more; a link that leads nowhere is no folder.
 */
export async function subfolders(dir: string, entries: readonly Dirent[]): Promise<string[]> {
  const linked = entries.filter((e) => e.isSymbolicLink());
  const isFolder = await Promise.all(linked.map((e) => stat(join(dir, e.name)).then((s) => s.isDirectory(), () => false)));
  const linkedFolders = new Set(linked.filter((_, i) => isFolder[i]));
  return entries.filter((e) => e.isDirectory() || linkedFolders.has(e)).map((e) => e.name);
}

/** Version numbers present in a model folder, by Triton's rules: digits only, no leading zero but for "0". */
export async function listVersions(modelDir: string): Promise<number[]> {
  const entries = await readdir(modelDir, { withFileTypes: true }).catch(() => []);
  const out: number[] = [];
  for (const name of await subfolders(modelDir, entries)) {
    if (NOT_VERSIONS.has(name) || !/^(0|[1-9][0-9]*)$/.test(name)) continue;
    const v = Number(name);
    if (Number.isSafeInteger(v)) out.push(v);
  }
  return out.sort((a, b) => a - b);
}

export interface VersionPolicy {
  latest?: { num_versions: number };
  all?: object;
  specific?: { versions: number[] };
}

/** The versions a policy selects from those present. */
export function selectVersions(policy: VersionPolicy | undefined, available: readonly number[]): number[] {
  if (policy?.all) return [...available];
  if (policy?.specific) return policy.specific.versions.filter((v) => available.includes(v)).sort((a, b) => a - b);
  const n = Math.max(1, policy?.latest?.num_versions ?? 1);
  return available.slice(-n);
}

/** The entries of a folder (names and kinds), for backend auto-detection. */
export async function listEntries(dir: string): Promise<{ name: string; isDirectory: boolean }[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  return entries.map((e) => ({ name: e.name, isDirectory: e.isDirectory() }));
}

/**
 * The newest modification time (ns) at or below a path: what poll mode compares to notice a change. Triton
 * compares the model folder and each of its top-level entries this way.
 */
export async function newestMtimeNs(path: string): Promise<bigint> {
  const s = await stat(path, { bigint: true }).catch(() => undefined);
  if (!s) return 0n;
  let newest = s.mtimeNs > s.ctimeNs ? s.mtimeNs : s.ctimeNs;
  if (s.isDirectory()) {
    const entries = await readdir(path).catch(() => [] as string[]);
    for (const e of entries) {
      const t = await newestMtimeNs(join(path, e));
      if (t > newest) newest = t;
    }
  }
  return newest;
}

/** Timestamps of a model's top-level entries, to tell a config change from a version folder change. */
export async function modelTimestamps(modelDir: string): Promise<Map<string, bigint>> {
  const out = new Map<string, bigint>();
  const entries = await readdir(modelDir).catch(() => [] as string[]);
  for (const e of entries) out.set(e, await newestMtimeNs(join(modelDir, e)));
  return out;
}

export async function readText(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** True when `child` is `parent` or inside it, after resolving `..` segments. */
export function isInside(parent: string, child: string): boolean {
  const p = resolve(parent);
  const c = resolve(p, child);
  return c === p || c.startsWith(p.endsWith(sep) ? p : p + sep);
}

export function assertModelName(name: string): void {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\\') || name.includes('\0') || isAbsolute(name)) {
    throw invalidArg(`invalid model name '${name}'`);
  }
}
