import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { EXAMPLES, FIXTURES, ROOT } from '../helpers/paths.js';

// The committed example and fixture models are made by scripts; rerunning the scripts must give the same bytes,
// so nobody edits a model by hand and nobody changes a script without regenerating.

const PYTHON = '/usr/bin/python3';

function pythonMissing(): string | undefined {
  const r = spawnSync(PYTHON, ['-c', 'import numpy, onnx, sklearn'], { encoding: 'utf8' });
  if (r.error) return `${PYTHON} not found`;
  if (r.status !== 0) return `${PYTHON} lacks python3-numpy, python3-onnx or python3-sklearn`;
  return undefined;
}

async function files(dir: string, under = dir): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await files(p, under)));
    else out.push(relative(under, p));
  }
  return out.sort();
}

async function assertSameTree(made: string, committed: string, only?: string[]): Promise<void> {
  const madeFiles = await files(made);
  const committedFiles = (await files(committed)).filter((f) => !only || only.some((d) => f === d || f.startsWith(`${d}/`)));
  assert.deepEqual(madeFiles, committedFiles, `files under ${relative(ROOT, committed)} differ from what the script makes`);
  for (const f of madeFiles) {
    const [a, b] = await Promise.all([readFile(join(made, f)), readFile(join(committed, f))]);
    assert.ok(a.equals(b), `${relative(ROOT, join(committed, f))} differs from what the script makes: rerun the script`);
  }
}

const missing = pythonMissing();
const skip = missing && process.env.CI !== 'true' ? `${missing} (install them, or run in CI where they are required)` : false;

for (const [script, committed] of [['make_examples.py', EXAMPLES], ['make_fixtures.py', FIXTURES]] as const) {
  test(`scripts/models/${script} reproduces the committed models byte for byte`, { skip }, async () => {
    const out = await mkdtemp(join(tmpdir(), 'nereid-models-'));
    try {
      const r = spawnSync(PYTHON, [join(ROOT, 'scripts', 'models', script), '--out', out], { encoding: 'utf8', timeout: 120_000 });
      assert.equal(r.status, 0, `${script} failed:\n${r.stdout}\n${r.stderr}`);
      // The fixtures script writes the model repositories and README.md; other files in test/fixtures are not its own.
      const only = committed === FIXTURES ? await readdir(out) : undefined;
      await assertSameTree(out, committed, only);
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  });
}
