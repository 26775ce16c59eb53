import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../helpers/paths.js';

// The TorchScript example and test fixtures are made by scripts/models/make_torch_examples.py; rerunning it must
// give the same bytes.

const PYTHON = '/usr/bin/python3';
const torchMissing = spawnSync(PYTHON, ['-c', 'import torch'], { encoding: 'utf8' }).status !== 0;
const skip = torchMissing && process.env.CI !== 'true' ? `${PYTHON} lacks python3-torch (install it, or run in CI where it is required)` : false;

test('scripts/models/make_torch_examples.py reproduces the committed TorchScript models byte for byte', { skip }, async () => {
  const out = await mkdtemp(join(tmpdir(), 'nereid-torch-models-'));
  try {
    const r = spawnSync(PYTHON, [join(ROOT, 'scripts', 'models', 'make_torch_examples.py'), '--out', join(out, 'examples'), '--fixtures-out', join(out, 'fixtures')],
      { encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 0, `make_torch_examples.py failed:\n${r.stdout}\n${r.stderr}`);
    const committed = { examples: join(ROOT, 'examples', 'python_repository'), fixtures: join(ROOT, 'test', 'fixtures', 'torch') };
    assert.deepEqual(await readdir(join(out, 'examples')), ['add_sub_torch']);
    assert.deepEqual(await readdir(join(out, 'fixtures')), await readdir(committed.fixtures));
    for (const where of ['examples', 'fixtures'] as const) {
      for (const model of await readdir(join(out, where))) {
        for (const f of ['config.pbtxt', join('1', 'model.pt')]) {
          const [made, kept] = await Promise.all([readFile(join(out, where, model, f)), readFile(join(committed[where], model, f))]);
          assert.ok(made.equals(kept), `${join(committed[where], model, f)} differs from what the script makes: rerun the script`);
        }
      }
    }
  } finally {
    await rm(out, { recursive: true, force: true });
  }
});
