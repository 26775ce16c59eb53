import { lstat, readlink, realpath, stat } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { invalidArg, type NereidError } from '../errors.js';

/**
 * The one way a model's files are found. Every file a config names (default_model_filename, cc_model_filenames,
 * output label files, warmup and initial-state data, an EXECUTION_ENV_PATH, the backend's default model file)
 * is looked up here, relative to the folder that field is relative to, and must resolve inside that folder
 * with every symlink followed. What lands outside is refused with one text, decided without asking the file
 * system whether the target exists, so that the answer for `/etc/passwd` and for a path that does not exist
 * is the same. A file that is missing inside the folder is named relative to the model folder: a client never
 * sees where the server keeps its models.
 */

export interface ModelFolder {
  readonly model: string;
  /** The model's folder (or the temporary copy a load with file overrides built). */
  readonly modelDir: string;
  /** The folder, inside the model folder, the names are relative to and must stay in: '' is the model folder. */
  readonly sub: string;
}

export interface ModelFile {
  /** The path to open: the folder joined with the name as given (symlinks inside are kept). */
  readonly path: string;
  readonly isDirectory: boolean;
}

/**
 * An engine's error message (ONNX Runtime's, llama.cpp's) with the server's paths taken out: a path inside the
 * model folder becomes relative to it, any other absolute path `<path>`. The message goes to the client.
 */
export function withoutServerPaths(message: string, modelDir: string, modelDirReal?: string): string {
  let m = message;
  for (const dir of [modelDirReal, resolve(modelDir)]) {
    if (dir) m = m.split(dir.endsWith(sep) ? dir : dir + sep).join('');
  }
  return m.replace(/(?<![\w.~-])\/[^\s"'`,;:()\[\]]+/g, '<path>');
}

/** Symlinks followed before a name counts as a loop, as the kernel's own limit. */
const MAX_LINKS = 40;

/**
 * Finds `name` in `folder` (see the module comment). `field` says what named the file, for the error:
 * `default_model_filename`, `label_filename of output 'x'`, …; `shown` is the name as the config spells it, when
 * that differs from `name`. Rejects with INVALID_ARG.
 */
export async function resolveModelFile(folder: ModelFolder, name: string, field: string, shown = name): Promise<ModelFile> {
  const { target, real } = await locate(folder, name, field, shown);
  const s = real === undefined ? undefined : await stat(real).catch(() => undefined);
  if (!s) throw missingError(folder, target);
  return { path: target, isDirectory: s.isDirectory() };
}

/** As resolveModelFile, for a name that must be a file: a folder there counts as no file. */
export async function resolveModelFileOnly(folder: ModelFolder, name: string, field: string): Promise<string> {
  const found = await resolveModelFile(folder, name, field);
  if (found.isDirectory) throw missingError(folder, found.path);
  return found.path;
}

/**
 * As resolveModelFileOnly, for a data file core reads itself (a label file, initial state data): a missing file
 * is refused in the words of core's ReadTextFile, with the path from the model's folder on.
 */
export async function resolveDataFile(folder: ModelFolder, name: string, field: string): Promise<string> {
  const { target, real } = await locate(folder, name, field, name);
  const s = real === undefined ? undefined : await stat(real).catch(() => undefined);
  if (!s || s.isDirectory()) {
    const shown = join(folder.model, relative(folder.modelDir, target));
    throw invalidArg(`failed to open text file for read ${shown}: ${s ? 'Is a directory' : 'No such file or directory'}`);
  }
  return target;
}

/** Refuses a name that leaves its folder; a name that is merely missing passes (a file used only sometimes). */
export async function checkModelFileInside(folder: ModelFolder, name: string, field: string): Promise<void> {
  await locate(folder, name, field, name);
}

async function locate(folder: ModelFolder, name: string, field: string, shown: string): Promise<{ target: string; real: string | undefined }> {
  const base = resolve(folder.modelDir, folder.sub);
  const outside = (): NereidError => outsideError(folder, shown, field);
  if (name === '' || name.includes('\0')) throw outside();
  const target = resolve(base, name);
  if (!within(base, target)) throw outside();
  const baseReal = await realpath(base).catch(() => undefined);
  if (baseReal === undefined) return { target, real: undefined };
  const where = await follow(baseReal, relative(base, target));
  if (where === 'outside') throw outside();
  return { target, real: where === 'missing' ? undefined : where };
}

/** The text for a name that leaves its folder: the same whether or not anything is there. */
function outsideError(folder: ModelFolder, name: string, field: string): NereidError {
  return invalidArg(`${field} '${name}' of model '${folder.model}' is outside its ${folderWord(folder.sub)}`);
}

function missingError(folder: ModelFolder, target: string): NereidError {
  return invalidArg(`unable to find '${relative(folder.modelDir, target)}' for model '${folder.model}'`);
}

function folderWord(sub: string): string {
  if (sub === '') return 'model folder';
  if (/^\d+$/.test(sub)) return 'version folder';
  return `'${sub}' folder`;
}

/**
 * Walks `rel` from the real folder `baseReal` one component at a time, following symlinks as the kernel
 * would: the real path it reaches, 'missing' when a component inside the folder does not exist, or 'outside'
 * when the path (or, for a missing component, the path it would have named) is not inside the folder. A
 * missing component outside answers 'outside', so existence outside never shows.
 */
async function follow(baseReal: string, rel: string): Promise<string | 'missing' | 'outside'> {
  let cur = baseReal;
  const todo = rel.split(sep).filter((p) => p !== '' && p !== '.');
  let links = 0;
  while (todo.length > 0) {
    const part = todo.shift()!;
    if (part === '..') {
      cur = dirname(cur);
      continue;
    }
    const next = join(cur, part);
    const s = await lstat(next).catch(() => undefined);
    if (!s) return within(baseReal, resolve(next, ...todo)) ? 'missing' : 'outside';
    if (s.isSymbolicLink()) {
      if (++links > MAX_LINKS) return 'outside';
      const link = await readlink(next).catch(() => undefined);
      if (link === undefined) return 'outside';
      if (isAbsolute(link)) cur = sep;
      todo.unshift(...link.split(sep).filter((p) => p !== '' && p !== '.'));
      continue;
    }
    cur = next;
  }
  return within(baseReal, cur) ? cur : 'outside';
}

/** True when `child` is `parent` or below it (both absolute and normalized). */
function within(parent: string, child: string): boolean {
  return child === parent || child.startsWith(parent.endsWith(sep) ? parent : parent + sep);
}
