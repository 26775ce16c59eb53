import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join, normalize, resolve } from 'node:path';
import { promisify } from 'node:util';
import { invalidArg } from '../../errors.js';
import type { ModelConfig } from '../../config/types.js';
import { resolveModelFile } from '../../config/model-files.js';
import type { ModelFiles } from '../backend.js';

const run = promisify(execFile);

/** The Python a model's stubs run on, and what their environment needs to find it. */
export interface Interpreter {
  readonly command: string;
  readonly env: Readonly<Record<string, string>>;
}

/**
 * As the backend chooses it: the model's EXECUTION_ENV_PATH (an unpacked environment, or a conda-pack tarball
 * unpacked once into a cache folder), else `--backend-config=python,nereid-python=PATH`, else
 * /usr/bin/python3 when present, else `python3` from PATH.
 */
export async function chooseInterpreter(files: ModelFiles, config: ModelConfig, backendConfig: Readonly<Record<string, string>>): Promise<Interpreter> {
  const envPath = config.parameters['EXECUTION_ENV_PATH']?.string_value;
  if (envPath) return environment(await unpacked(await resolveEnvPath(envPath, files), envPath), envPath);
  const configured = backendConfig['nereid-python'];
  if (configured) return { command: configured, env: {} };
  return { command: existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3', env: {} };
}

const MODEL_DIRECTORY = '$$TRITON_MODEL_DIRECTORY';

/**
 * `$$TRITON_MODEL_DIRECTORY` stands for the model's folder, as in Triton, and a path under it must stay inside
 * that folder (symlinks followed). An absolute path elsewhere is the operator's choice in a repository's
 * config (a shared environment, as Triton allows); a config that came with a load request may not name one.
 */
async function resolveEnvPath(value: string, files: ModelFiles): Promise<string> {
  const folder = { model: files.name, modelDir: files.modelDir, sub: '' };
  if (value.startsWith(MODEL_DIRECTORY)) {
    const rest = value.slice(MODEL_DIRECTORY.length).replace(/^\/+/, '');
    return (await resolveModelFile(folder, rest === '' ? '.' : rest, 'EXECUTION_ENV_PATH', value)).path;
  }
  if (!isAbsolute(value)) throw invalidArg(`EXECUTION_ENV_PATH '${value}' of model '${files.name}' must be absolute or start with ${MODEL_DIRECTORY}`);
  if (files.configFromRequest) return (await resolveModelFile(folder, value, 'EXECUTION_ENV_PATH')).path;
  return normalize(value);
}

/**
 * Unpacks in progress, so that models loading at once with the same tarball unpack it once. An entry leaves when
 * its unpack ends: the unpacked folder itself, named by the tarball's content, is what later loads reuse.
 */
const unpacking = new Map<string, Promise<string>>();

/** The environment's folder: itself, or where its tarball was unpacked (once per tarball content). */
async function unpacked(path: string, shown: string): Promise<string> {
  const s = await stat(path).catch(() => undefined);
  if (!s) throw invalidArg(`Failed to get the canonical path for ${shown}. (EXECUTION_ENV_PATH does not exist)`);
  if (s.isDirectory()) return path;
  const key = createHash('sha256').update(`${resolve(path)}\0${s.size}\0${s.mtimeMs}`).digest('hex').slice(0, 16);
  let p = unpacking.get(key);
  if (!p) {
    p = unpack(path, join(tmpdir(), 'nereid-python-envs', key), shown);
    unpacking.set(key, p);
    const done = (): void => {
      unpacking.delete(key);
    };
    p.then(done, done);
  }
  return p;
}

async function unpack(tarball: string, dir: string, shown: string): Promise<string> {
  if (existsSync(join(dir, 'bin'))) return dir;
  const partial = `${dir}.partial-${process.pid}`;
  await rm(partial, { recursive: true, force: true });
  await mkdir(partial, { recursive: true });
  try {
    await run('tar', ['-xzf', tarball, '-C', partial]);
    await rename(partial, dir).catch(async (e: NodeJS.ErrnoException) => {
      // Another server unpacked the same tarball first: use theirs.
      if (!existsSync(join(dir, 'bin'))) throw e;
      await rm(partial, { recursive: true, force: true });
    });
  } catch (e) {
    await rm(partial, { recursive: true, force: true });
    // tar's own message names server paths; the code is enough to tell a bad archive from a missing tar.
    const code = (e as { code?: unknown }).code;
    throw invalidArg(`unable to unpack EXECUTION_ENV_PATH '${shown}' (tar ${typeof code === 'number' ? `exit code ${code}` : String(code ?? 'failed')})`);
  }
  return dir;
}

/** What conda-pack's activate script sets: the env's bin first on PATH, its lib for the dynamic loader. */
function environment(dir: string, shown: string): Interpreter {
  const python = ['python3', 'python'].map((n) => join(dir, 'bin', n)).find((p) => existsSync(p));
  if (!python) throw invalidArg(`EXECUTION_ENV_PATH '${shown}' has no bin/python3`);
  const path = process.env['PATH'];
  const ld = process.env['LD_LIBRARY_PATH'];
  return {
    command: python,
    env: {
      PATH: path ? `${join(dir, 'bin')}:${path}` : join(dir, 'bin'),
      LD_LIBRARY_PATH: ld ? `${join(dir, 'lib')}:${ld}` : join(dir, 'lib'),
      CONDA_PREFIX: dir,
    },
  };
}
