import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FIXTURES } from '../../helpers/paths.js';
import { tempRepository } from '../../helpers/server.js';
import { serveWithInstanceSpy } from '../../helpers/instance-spy.js';
import { PYTHON_FIXTURES, pythonSkip } from './helpers.js';

// What a Python instance says it holds (BackendInstance.memory): its stub process's resident memory, outside
// the server's process (external). It follows what the model keeps: a model that holds 64 MiB in initialize()
// reports that much more than one that holds nothing. TorchScript models run on the same stub and report the
// same way. Once the model is unloaded its stub is gone and the figure is 0.

const MiB = 1024 * 1024;
const skip = pythonSkip();
const torchSkip = pythonSkip('numpy, torch');

const HOLDING_MODEL = `import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.block = np.ones(64 * 1024 * 1024, dtype=np.uint8)  # written, so resident

    def execute(self, requests):
        return [pb_utils.InferenceResponse(output_tensors=[
            pb_utils.Tensor("OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy())]) for r in requests]
`;

test('a Python instance reports its stub\'s resident memory, external, following what the model holds', { skip }, async () => {
  const repo = await tempRepository([{ from: join(PYTHON_FIXTURES, 'identity_fp32') }]);
  await mkdir(join(repo.dir, 'holding', '1'), { recursive: true });
  await writeFile(join(repo.dir, 'holding', 'config.pbtxt'), `name: "holding"
backend: "python"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
`);
  await writeFile(join(repo.dir, 'holding', '1', 'model.py'), HOLDING_MODEL);
  const s = await serveWithInstanceSpy({ modelRepositories: [repo.dir], modelControlMode: 'explicit', loadModels: ['identity_fp32', 'holding'] }, ['python']);
  try {
    const [plain] = s.instances('identity_fp32');
    const [holding] = s.instances('holding');
    const small = plain!.instance.memory?.();
    const large = holding!.instance.memory?.();
    assert.equal(small?.external, true);
    assert.ok(small.bytes >= 5 * MiB && small.bytes <= 1024 * MiB, `${small.bytes} bytes`);
    assert.equal(large?.external, true);
    assert.ok(large.bytes - small.bytes >= 60 * MiB, `${large.bytes} against ${small.bytes}`);
    await s.server.unloadModel('holding');
    assert.deepEqual(holding!.instance.memory?.(), { bytes: 0, external: true });
  } finally {
    await s.close();
    await repo.remove();
  }
});

test('a TorchScript instance reports its stub\'s resident memory, external', { skip: torchSkip }, async () => {
  const repo = await tempRepository([{ from: join(FIXTURES, 'torch', 'ragged_torch') }]);
  const s = await serveWithInstanceSpy({ modelRepositories: [repo.dir] }, ['pytorch']);
  try {
    const instances = s.instances('ragged_torch');
    assert.ok(instances.length > 0);
    for (const { instance } of instances) {
      const m = instance.memory?.();
      assert.equal(m?.external, true);
      assert.ok(m.bytes >= 5 * MiB && m.bytes <= 1024 * MiB, `${m.bytes} bytes`);
    }
  } finally {
    await s.close();
    await repo.remove();
  }
});
