import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../../helpers/server.js';
import { postJson } from '../../helpers/http.js';
import { EXAMPLES } from '../../helpers/paths.js';
import { PYTHON_EXAMPLES, fp32, fp32s, output, pythonSkip, text } from './helpers.js';

// TorchScript (platform pytorch_libtorch) on the Python stub with Debian's python3-torch, and the second example
// repository served beside the first: the BLS example calling the Python and the TorchScript add_sub.

const skip = pythonSkip('numpy, torch');

test('a TorchScript model.pt answers with INPUT__0 / OUTPUT__0 naming, a batch of rows at once', { skip }, async () => {
  const s = await startTestServer({ modelRepositories: [PYTHON_EXAMPLES], modelControlMode: 'explicit', loadModels: ['add_sub_torch'] });
  try {
    const config = s.server.modelConfigJson('add_sub_torch') as any;
    assert.equal(config.platform, 'pytorch_libtorch');
    assert.equal(config.backend, 'pytorch');
    const r = await s.server.infer({ model: 'add_sub_torch', inputs: [fp32('INPUT__0', [1, 2, 3, 4, 5, 6, 7, 8], [2, 4]), fp32('INPUT__1', [1, 1, 1, 1, 2, 2, 2, 2], [2, 4])] });
    assert.deepEqual(output(r.outputs, 'OUTPUT__0').shape, [2, 4]);
    assert.deepEqual(fp32s(output(r.outputs, 'OUTPUT__0')), [2, 3, 4, 5, 7, 8, 9, 10]);
    assert.deepEqual(fp32s(output(r.outputs, 'OUTPUT__1')), [0, 1, 2, 3, 3, 4, 5, 6]);
  } finally {
    await s.close();
  }
});

test('both example repositories at once: the BLS example runs the Python and the TorchScript add_sub', { skip }, async () => {
  const s = await startTestServer({ modelRepositories: [EXAMPLES, PYTHON_EXAMPLES] });
  try {
    for (const model of ['add_sub', 'add_sub_torch']) {
      const r = await s.server.infer({ model: 'bls_sync', inputs: [text('MODEL_NAME', [model]), fp32('INPUT0', [1, 2, 3, 4]), fp32('INPUT1', [10, 10, 10, 10])] });
      assert.deepEqual(fp32s(output(r.outputs, 'OUTPUT0')), [11, 12, 13, 14], model);
      assert.deepEqual(fp32s(output(r.outputs, 'OUTPUT1')), [-9, -8, -7, -6], model);
    }
    // The ONNX examples answer beside them.
    const simple = await postJson(`${s.url}/v2/models/simple/infer`, {
      inputs: [
        { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: Array.from({ length: 16 }, (_, i) => i) },
        { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: Array.from({ length: 16 }, () => 1) },
      ],
    });
    assert.equal(simple.status, 200, simple.body.toString());
  } finally {
    await s.close();
  }
});
