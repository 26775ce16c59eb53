import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join, normalize, resolve } from 'node:path';
import { promisify } from 'node:util';
import { invalidArg } from '../../errors.js';
import type { ModelConfig } from '../../config/types.js';

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
export async function chooseInterpreter(config: ModelConfig, modelDir: string, backendConfig: Readonly<Record<string, string>>): Promise<Interpreter> {
  const envPath = config.parameters['EXECUTION_ENV_PATH']?.string_value;
  if (envPath) return environment(await unpacked(resolveEnvPath(envPath, modelDir)));
  const configured = backendConfig['nereid-python'];
  if (configured) return { command: configured, env: {} };
  return { command: existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3', env: {} };
}

/** `$$TRITON_MODEL_DIRECTORY` stands for the model's folder, as in Triton; other paths must be absolute. */
function resolveEnvPath(value: string, modelDir: string): string {
  const p = value.replace('$$TRITON_MODEL_DIRECTORY', modelDir);
  if (!isAbsolute(p)) throw invalidArg(`EXECUTION_ENV_PATH '${value}' must be absolute or start with $$TRITON_MODEL_DIRECTORY`);
  return normalize(p);
}

const unpacking = new Map<string, Promise<string>>();

/** The environment's folder: itself, or where its tarball was unpacked (once per tarball content). */
async function unpacked(path: string): Promise<string> {
  const s = await stat(path).catch(() => undefined);
  if (!s) throw invalidArg(`EXECUTION_ENV_PATH '${path}' does not exist`);
  if (s.isDirectory()) return path;
  const key = createHash('sha256').update(`${resolve(path)}\0${s.size}\0${s.mtimeMs}`).digest('hex').slice(0, 16);
  let p = unpacking.get(key);
  if (!p) {
    p = unpack(path, join(tmpdir(), 'nereid-python-envs', key));
    unpacking.set(key, p);
    p.catch(() => unpacking.delete(key));
  }
  return p;
}

async function unpack(tarball: string, dir: string): Promise<string> {
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
    throw invalidArg(`unable to unpack EXECUTION_ENV_PATH '${tarball}': ${(e as Error).message}`);
  }
  return dir;
}

/** What conda-pack's activate script sets: the env's bin first on PATH, its lib for the dynamic loader. */
function environment(dir: string): Interpreter {
  const python = ['python3', 'python'].map((n) => join(dir, 'bin', n)).find((p) => existsSync(p));
  if (!python) throw invalidArg(`EXECUTION_ENV_PATH '${dir}' has no bin/python3`);
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
