import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from '../../helpers/paths.js';
import { pythonSkip } from './helpers.js';

// The response sender's refusals on their own, as python_backend's ResponseSender makes them (the checks Triton's
// L0_backend_python/response_sender tests drive through their models): an unknown flag, no response without
// FINAL, and for a model that is not decoupled FINAL before a response or a second response; then a closed sender.

test('the response sender refuses sends in Triton\'s order and words', { skip: pythonSkip() }, () => {
  const r = spawnSync('/usr/bin/python3', ['-B', join(ROOT, 'test', 'backends', 'python', 'py', 'check_sender.py')], {
    encoding: 'utf8', timeout: 60_000, stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'],
  });
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  assert.equal(r.stdout.trim(), 'ok');
});
