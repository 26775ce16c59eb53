import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from '../../helpers/paths.js';
import { pythonSkip } from './helpers.js';

// Nereid's triton_python_backend_utils on its own (no server): types, BYTES serialization, Tensor and DLPack,
// requests and responses a model builds, the config lookups and ModelConfig's auto-complete rules.

test('triton_python_backend_utils helpers behave as Triton documents them', { skip: pythonSkip() }, () => {
  const r = spawnSync('/usr/bin/python3', ['-B', join(ROOT, 'test', 'backends', 'python', 'py', 'check_utils.py')], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  assert.equal(r.stdout.trim(), 'ok');
});
