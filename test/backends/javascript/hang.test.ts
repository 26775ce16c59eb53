import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { FIXTURES } from '../../helpers/paths.js';
import { startTestServer } from '../../helpers/server.js';
import type { Tensor } from '../../../src/index.js';

// A JavaScript model whose execute() blocks its worker: nereid_execute_timeout_ms stops the worker, fails the
// execution's requests and starts a new worker, which serves.

function int32(name: string, values: number[]): Tensor {
  return { name, datatype: 'INT32', shape: [values.length], data: new Uint8Array(new Int32Array(values).buffer) };
}

const int32s = (t: Tensor): number[] => [...new Int32Array((t.data as Uint8Array).slice().buffer)];

test('a JavaScript execute() past nereid_execute_timeout_ms fails, its worker is replaced and the model serves again', async () => {
  const s = await startTestServer({ modelRepositories: [join(FIXTURES, 'js')], modelControlMode: 'explicit', loadModels: ['hang_js'] });
  try {
    const hung = s.server.infer({ model: 'hang_js', inputs: [int32('IN', [-1])] });
    const outcome = await Promise.race([
      hung.then(() => 'answered', (e: unknown) => String(e)),
      new Promise<string>((resolve) => setTimeout(() => resolve('pending'), 20_000).unref()),
    ]);
    assert.match(outcome, /did not finish within 1000 ms/);
    const r = await s.server.infer({ model: 'hang_js', inputs: [int32('IN', [21])] });
    assert.deepEqual(int32s(r.outputs[0]!), [42]);
    assert.ok(s.server.isModelReady('hang_js'));
  } finally {
    await s.close();
  }
});
