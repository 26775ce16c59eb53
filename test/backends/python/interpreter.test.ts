import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startTestServer, tempRepository } from '../../helpers/server.js';
import { PYTHON_FIXTURES, int32, output, pythonSkip, strings } from './helpers.js';

// Which Python runs a model: EXECUTION_ENV_PATH (a folder, or a conda-pack style tarball unpacked once), else
// --backend-config=python,nereid-python=PATH, else /usr/bin/python3.

const skip = pythonSkip();

async function info(repo: string, backendConfig: Record<string, Record<string, string>> = {}): Promise<string[]> {
  const s = await startTestServer({ modelRepositories: [repo], modelControlMode: 'explicit', loadModels: ['which_python'], backendConfig });
  try {
    return strings(output((await s.server.infer({ model: 'which_python', inputs: [int32('IN', [1])] })).outputs, 'INFO'));
  } finally {
    await s.close();
  }
}

test('the interpreter: /usr/bin/python3 by default, nereid-python from --backend-config, EXECUTION_ENV_PATH first', { skip }, async () => {
  const work = await mkdtemp(join(tmpdir(), 'nereid-python-env-'));
  const repo = await tempRepository([{ from: join(PYTHON_FIXTURES, 'which_python') }]);
  try {
    assert.equal((await info(repo.dir))[0], '/usr/bin/python3');

    const wrapper = join(work, 'python-wrapper');
    await writeFile(wrapper, '#!/bin/sh\nNEREID_TEST_MARK=wrapped exec /usr/bin/python3 "$@"\n');
    await chmod(wrapper, 0o755);
    assert.equal((await info(repo.dir, { python: { 'nereid-python': wrapper } }))[2], 'wrapped');

    // An environment folder (bin/python3 inside), named relative to the model folder.
    const env = join(repo.dir, 'which_python', 'env');
    await mkdir(join(env, 'bin'), { recursive: true });
    await symlink('/usr/bin/python3', join(env, 'bin', 'python3'));
    const config = join(repo.dir, 'which_python', 'config.pbtxt');
    const base = await readFile(config, 'utf8');
    await writeFile(config, `${base}parameters { key: "EXECUTION_ENV_PATH" value { string_value: "$$TRITON_MODEL_DIRECTORY/env" } }\n`);
    const fromDir = await info(repo.dir, { python: { 'nereid-python': wrapper } });
    assert.equal(fromDir[0], join(env, 'bin', 'python3'));
    assert.equal(fromDir[1], env);
    assert.equal(fromDir[2], '', 'EXECUTION_ENV_PATH wins over nereid-python');

    // The same environment as a tarball, unpacked into a cache folder.
    const tarball = join(work, 'env.tar.gz');
    execFileSync('tar', ['-czf', tarball, '-C', env, '.']);
    await writeFile(config, `${base}parameters { key: "EXECUTION_ENV_PATH" value { string_value: "${tarball}" } }\n`);
    const fromTar = await info(repo.dir);
    assert.match(fromTar[0], /nereid-python-envs\/[0-9a-f]{16}\/bin\/python3$/);
    await rm(dirname(dirname(fromTar[0]!)), { recursive: true, force: true });
  } finally {
    await repo.remove();
    await rm(work, { recursive: true, force: true });
  }
});
