import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EXAMPLES, FIXTURES } from '../../helpers/paths.js';
import { tempRepository } from '../../helpers/server.js';
import { serveWithInstanceSpy } from '../../helpers/instance-spy.js';

// What an ONNX Runtime instance says its model holds (BackendInstance.memory): the bytes of the main graph's
// initializers, read from the model file, equal to what the onnx package finds (the sum of numpy's nbytes over
// the initializers), for weights stored raw, in typed fields and in external files alike. Every instance
// reports them, as each has a session of its own; a model file the walk cannot read loads all the same.

const PYTHON = '/usr/bin/python3';
const probe = spawnSync(PYTHON, ['-c', 'import numpy, onnx'], { encoding: 'utf8' });
const missing = probe.status === 0 ? undefined : `needs ${PYTHON} with numpy and onnx: ${probe.error?.message ?? probe.stderr.trim()}`;
const skip = missing && process.env.CI !== 'true' ? missing : false;

/** The initializers' bytes as the onnx package counts them (external data loaded from beside the file). */
function onnxNbytes(path: string): number {
  const script = [
    'import sys, onnx',
    'from onnx import numpy_helper',
    'm = onnx.load(sys.argv[1])',
    'print(sum(numpy_helper.to_array(t).nbytes for t in m.graph.initializer))',
  ].join('\n');
  const r = spawnSync(PYTHON, ['-c', script, path], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return Number(r.stdout.trim());
}

/**
 * Writes a model Y = X + W whose W lives in an external data file, with initializers of other types besides:
 * int64 and double in typed fields (int64_data, double_data), float16 raw, uint8 and a scalar.
 */
function writeTypedModel(path: string): void {
  const script = `
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto as T
w = numpy_helper.from_array(np.arange(1000, dtype=np.float32).reshape(10, 100)[0:1].reshape(100), 'W')
inits = [
    w,
    helper.make_tensor('I64', T.INT64, [3, 7], list(range(21))),
    helper.make_tensor('F64', T.DOUBLE, [5], [0.5] * 5),
    helper.make_tensor('U8', T.UINT8, [2, 3, 4], list(range(24))),
    numpy_helper.from_array(np.ones((6, 6), dtype=np.float16), 'H'),
    helper.make_tensor('S', T.FLOAT, [], [2.0]),
]
# Each other initializer is an output of its own (not in the config), so that ONNX Runtime keeps them all.
kept = [t for t in inits if t.name != 'W']
nodes = [helper.make_node('Add', ['X', 'W'], ['Y'])] + [helper.make_node('Identity', [t.name], ['OUT_' + t.name]) for t in kept]
outputs = [helper.make_tensor_value_info('Y', T.FLOAT, [100])] + [helper.make_tensor_value_info('OUT_' + t.name, t.data_type, list(t.dims)) for t in kept]
graph = helper.make_graph(nodes, 'g', [helper.make_tensor_value_info('X', T.FLOAT, [100])], outputs, inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)])
model.ir_version = 7
onnx.save_model(model, sys.argv[1], save_as_external_data=True, all_tensors_to_one_file=True, location='weights.bin', size_threshold=256)
m = onnx.load(sys.argv[1], load_external_data=False)
assert [t.name for t in m.graph.initializer if t.data_location == T.EXTERNAL] == ['W']
assert len(m.graph.initializer[1].int64_data) == 21 and len(m.graph.initializer[2].double_data) == 5
`;
  const r = spawnSync(PYTHON, ['-c', script, path], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
}

const TYPED_CONFIG = `name: "typed"
backend: "onnxruntime"
max_batch_size: 0
input [ { name: "X" data_type: TYPE_FP32 dims: [ 100 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 100 ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]
`;

test('each ONNX instance reports its model\'s initializer bytes, as the onnx package counts them', { skip }, async () => {
  const repo = await tempRepository([{ from: join(EXAMPLES, 'digits') }, { from: join(FIXTURES, 'slow', 'slow_fp32') }]);
  await mkdir(join(repo.dir, 'typed', '1'), { recursive: true });
  await writeFile(join(repo.dir, 'typed', 'config.pbtxt'), TYPED_CONFIG);
  writeTypedModel(join(repo.dir, 'typed', '1', 'model.onnx'));
  const s = await serveWithInstanceSpy({ modelRepositories: [repo.dir] }, ['onnxruntime']);
  try {
    // Model, version, instances (ONNX Runtime's default two, or the config's own count).
    const cases = [['digits', 1, 2], ['digits', 2, 2], ['slow_fp32', 1, 1], ['typed', 1, 2]] as const;
    for (const [model, version, count] of cases) {
      const expected = onnxNbytes(join(repo.dir, model, String(version), 'model.onnx'));
      assert.ok(expected > 0, `${model} ${version} has weights`);
      const instances = s.instances(model).filter((i) => i.version === version);
      assert.equal(instances.length, count, `${model} ${version}`);
      for (const { instance, instanceName } of instances) {
        assert.deepEqual(instance.memory?.(), { bytes: expected, external: false }, `${model} ${version} ${instanceName}`);
      }
    }
    // Worth saying: the external file holds W alone, and it is counted.
    assert.equal(onnxNbytes(join(repo.dir, 'typed', '1', 'model.onnx')), 100 * 4 + 21 * 8 + 5 * 8 + 24 + 36 * 2 + 4);
  } finally {
    await s.close();
    await repo.remove();
  }
});

test('a model without initializers reports 0; one whose file the walk cannot read loads and reports nothing', async () => {
  const repo = await tempRepository([{ from: join(EXAMPLES, 'simple') }, { from: join(EXAMPLES, 'simple'), name: 'odd' }]);
  const config = join(repo.dir, 'odd', 'config.pbtxt');
  await writeFile(config, (await readFile(config, 'utf8')).replace('name: "simple"', 'name: "odd"'));
  // An empty group (wire types 3 and 4, which no ONNX file uses) as field 99 after the whole model: ONNX
  // Runtime's parser skips it as an unknown field of ModelProto; the walk does not read groups.
  await appendFile(join(repo.dir, 'odd', '1', 'model.onnx'), Buffer.from([0x9b, 0x06, 0x9c, 0x06]));
  const s = await serveWithInstanceSpy({ modelRepositories: [repo.dir] }, ['onnxruntime']);
  try {
    assert.equal(s.server.isModelReady('odd'), true);
    assert.ok(s.instances('simple').length > 0);
    for (const { instance } of s.instances('simple')) assert.deepEqual(instance.memory?.(), { bytes: 0, external: false });
    assert.ok(s.instances('odd').length > 0);
    for (const { instance } of s.instances('odd')) assert.equal(instance.memory?.(), undefined);
  } finally {
    await s.close();
    await repo.remove();
  }
});
