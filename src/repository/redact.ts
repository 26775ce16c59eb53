import { join, sep } from 'node:path';
import type { ModelLocation } from './local.js';

/**
 * Errors of a load reach clients (the load answer, the repository index), and a client never sees the server's
 * paths. Backends already name files from the model's folder on; this is the net under every message a load
 * failure carries, whatever wrote it (a model's own initialize() included).
 */
export interface PathShown {
  readonly path: string;
  /** What the client sees instead: the model's name for its folder, '' for a folder above it. */
  readonly shown: string;
}

/** The folders a load of `name` reads, most specific first. */
export function shownPaths(name: string, overrideRoot: string | undefined, location: ModelLocation | undefined): PathShown[] {
  const out: PathShown[] = [];
  if (overrideRoot !== undefined) out.push({ path: join(overrideRoot, name), shown: name }, { path: overrideRoot, shown: '' });
  if (location) out.push({ path: location.dir, shown: name }, { path: location.root, shown: '' });
  return out;
}

export function redactPaths(text: string, shown: readonly PathShown[]): string {
  let out = text;
  for (const { path, shown: as } of shown) {
    if (path === '' || path === sep) continue;
    out = out.split(path + sep).join(as === '' ? '' : as + sep).split(path).join(as === '' ? '.' : as);
  }
  return out;
}
