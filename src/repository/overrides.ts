import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, normalize, isAbsolute } from 'node:path';
import { invalidArg } from '../errors.js';
import { isInside } from './local.js';

/**
 * A model built from the load API's `file:<path>` overrides. As in Triton, the files go into a fresh temporary
 * folder, never into the repository; a path that would leave that folder is refused before anything is written.
 */
export interface OverrideDir {
  /** The temporary folder the model folder sits in. */
  readonly root: string;
  readonly modelDir: string;
  remove(): Promise<void>;
}

/**
 * The override's path inside the model folder. A leading `/` is accepted and means the model folder, as Triton
 * joins `file:/1/model.py` under its temporary folder (Triton's own tests load models that way); the path must
 * still stay inside.
 */
export function checkOverridePath(path: string): string {
  const rel = path.replace(/^\/+/, '');
  const p = normalize(rel);
  if (rel === '' || isAbsolute(rel) || rel.includes('\0') || p.startsWith('..') || !isInside('/m', join('/m', p)) || p === '.') {
    throw invalidArg(`invalid file override path '${path}': it must stay inside the model folder`);
  }
  return p;
}

export async function writeOverrides(modelName: string, files: ReadonlyMap<string, Uint8Array>): Promise<OverrideDir> {
  const checked = [...files].map(([path, data]) => [checkOverridePath(path), data] as const);
  const root = await mkdtemp(join(tmpdir(), 'nereid-model-'));
  const modelDir = join(root, modelName);
  try {
    await mkdir(modelDir);
    for (const [path, data] of checked) {
      const target = join(modelDir, path);
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, data);
    }
  } catch (e) {
    await rm(root, { recursive: true, force: true });
    throw e;
  }
  return { root, modelDir, remove: () => rm(root, { recursive: true, force: true }) };
}
