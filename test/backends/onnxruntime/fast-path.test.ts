import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { EXAMPLES, ROOT } from '../../helpers/paths.js';
import { openSession } from '../../../src/backends/onnxruntime/session.js';

// session.ts runs onnxruntime-node's native binding directly (a synchronous run, no event-loop turn per
// inference) and falls back to the public, asynchronous API when the binding's shape is not the one it knows.
// The fallback is correct but costs about twice the CPU per request: these tests make it loud instead of silent.

test('onnxruntime-node is pinned to the exact version installed, so the private binding cannot change under an update', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  const pinned = pkg.dependencies['onnxruntime-node'];
  assert.match(pinned ?? '', /^\d+\.\d+\.\d+$/, `package.json names an exact onnxruntime-node version, not ${pinned}`);
  const installed = (createRequire(join(ROOT, 'package.json'))('onnxruntime-node/package.json') as { version: string }).version;
  assert.equal(installed, pinned);
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string; dependencies?: Record<string, string> }> };
  assert.equal(lock.packages['']?.dependencies?.['onnxruntime-node'], pinned);
  assert.equal(lock.packages['node_modules/onnxruntime-node']?.version, pinned);
});

test('a session opens on the native binding: run() answers synchronously with the outputs, not a promise', async () => {
  // simple: OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1, INT32 [1,16].
  const session = await openSession(join(EXAMPLES, 'simple', '1', 'model.onnx'), {});
  try {
    assert.equal(session.synchronous, true, 'the native binding was not usable: session.ts fell back to the public API');
    const a = Int32Array.from({ length: 16 }, (_, i) => i);
    const b = Int32Array.from({ length: 16 }, () => 3);
    const out = session.run({ INPUT0: { location: 'cpu', type: 'int32', dims: [1, 16], data: a }, INPUT1: { location: 'cpu', type: 'int32', dims: [1, 16], data: b } }, ['OUTPUT0', 'OUTPUT1']);
    assert.ok(!(out instanceof Promise), 'run() returned a promise');
    assert.deepEqual([...(out.OUTPUT0!.data as Int32Array)], [...a].map((x) => x + 3));
    assert.deepEqual([...(out.OUTPUT1!.data as Int32Array)], [...a].map((x) => x - 3));
    assert.deepEqual(out.OUTPUT0!.dims, [1, 16]);
    assert.deepEqual(session.inputMetadata.map((m) => m.name), ['INPUT0', 'INPUT1']);
  } finally {
    await session.release();
  }
});
