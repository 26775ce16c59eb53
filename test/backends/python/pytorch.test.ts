import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { InferenceServer } from '../../../src/index.js';
import type { Logger } from '../../../src/observability/logger.js';
import { startTestServer, tempRepository } from '../../helpers/server.js';
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

test('INTRA_OP_THREAD_COUNT sizes torch\'s threads and OpenBLAS\'s, which torch.set_num_threads leaves alone', { skip }, async () => {
  const repo = await tempRepository([{ from: join(PYTHON_EXAMPLES, 'add_sub_torch') }]);
  const lines: string[] = [];
  const l: Logger = {
    error: () => undefined, warn: () => undefined, warning: () => undefined, info: () => undefined, verbose: (_n, m) => void lines.push(m),
    isVerbose: () => true, child: () => l,
    settings: () => ({ log_file: '', log_info: false, log_warning: false, log_error: false, log_verbose_level: 1, log_format: 'default' }),
    update: () => undefined, close: () => Promise.resolve(),
  };
  const config = join(repo.dir, 'add_sub_torch', 'config.pbtxt');
  await writeFile(config, `${await readFile(config, 'utf8')}parameters { key: "INTRA_OP_THREAD_COUNT" value { string_value: "1" } }\n`);
  const server = await InferenceServer.create({ modelRepositories: [repo.dir], modelControlMode: 'explicit', loadModels: ['add_sub_torch'] }, { logger: l });
  try {
    const loaded = lines.find((m) => m.includes('loaded ') && m.includes('model.pt'));
    assert.ok(loaded, lines.join('\n'));
    assert.match(loaded, /, 1 intra-op thread\(s\)/);
    // Debian's torch does its matrix products in OpenBLAS; a torch built on MKL loads none.
    const probe = spawnSync('/usr/bin/python3', ['-c', 'import torch; print(any("openblas" in l for l in open("/proc/self/maps")))']);
    const answer = probe.stdout.toString().trim();
    assert.ok(answer === 'True' || answer === 'False', `the OpenBLAS probe failed: ${probe.stderr.toString()}`);
    if (answer === 'True') assert.match(loaded, /OpenBLAS 1 thread\(s\)/);
  } finally {
    await server.close();
    await repo.remove();
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

// Triton's PyTorch backend checks a TorchScript config against forward() at load (its ValidateInputs /
// ValidateOutputs, as in Triton's qa/L0_libtorch_* naming-convention cases): as many config inputs as forward
// takes, and inputs named neither as forward's arguments nor <name>__<index> go by their config position.
const FORWARD_A_B = `
import sys, torch
class M(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor):
        return a - b, b
torch.jit.save(torch.jit.script(M()), sys.argv[1])
`;

async function torchRepo(config: string): Promise<{ dir: string; remove(): Promise<void> }> {
  const repo = await tempRepository([]);
  await mkdir(join(repo.dir, 'm', '1'), { recursive: true });
  // torch.jit.script reads the module's source, so the script runs from a file.
  const script = join(repo.dir, 'make_model.py');
  await writeFile(script, FORWARD_A_B);
  const made = spawnSync('/usr/bin/python3', [script, join(repo.dir, 'm', '1', 'model.pt')]);
  await rm(script);
  assert.equal(made.status, 0, made.stderr.toString());
  await writeFile(join(repo.dir, 'm', 'config.pbtxt'), `platform: "pytorch_libtorch" max_batch_size: 0 ${config}`);
  return repo;
}

const tio = (kind: 'input' | 'output', name: string) => `${kind} { name: "${name}" data_type: TYPE_FP32 dims: [1] }`;

test('TorchScript inputs named neither as forward\'s arguments nor <name>__<index> go by config position', { skip }, async () => {
  // Y is listed first, so Y is forward's `a`; outputs without indices go in config order.
  const repo = await torchRepo(`${tio('input', 'Y')} ${tio('input', 'X')} ${tio('output', 'DIFF')} ${tio('output', 'SECOND')}`);
  const s = await startTestServer({ modelRepositories: [repo.dir] });
  try {
    const r = await s.server.infer({ model: 'm', inputs: [fp32('X', [2]), fp32('Y', [5])] });
    assert.deepEqual(fp32s(output(r.outputs, 'DIFF')), [3]);
    assert.deepEqual(fp32s(output(r.outputs, 'SECOND')), [2]);
  } finally {
    await s.close();
    await repo.remove();
  }
});

test('a TorchScript config with too few inputs, or none, or no outputs is refused at load in Triton\'s words', { skip }, async () => {
  const cases: [string, RegExp][] = [
    [`${tio('input', 'a')} ${tio('output', 'O__0')}`, /unable to load model 'm', configuration expects 1 inputs, model provides 2/],
    [`${tio('input', 'a')} ${tio('input', 'b')}`, /model configuration must contain at least one output, none were specified\./],
    [`${tio('input', 'a')} ${tio('input', 'b')} ${tio('output', 'O__0')} sequence_batching { control_input { name: "START" control { kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] } } }`,
      /input 'START' does not follow <name>__<index> naming convention\./],
    // torch has no uint64: a CORRID control forward would get must be of a type torch holds.
    [`${tio('input', 'a')} ${tio('output', 'O__0')} sequence_batching { control_input { name: "CORRID__1" control { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } } }`,
      /input 'CORRID__1' type 'TYPE_UINT64' is not supported by PyTorch\./],
    // Strings reach forward as a flat List[str] (the batch dimension counts too, with max_batch_size > 0).
    [`${tio('input', 'a')} input { name: "b" data_type: TYPE_STRING dims: [1, 1] } ${tio('output', 'O__0')}`,
      /Triton only supports 1 dimensional List of String as input for 'b' for model 'm'/],
    // Implicit state goes by the index in its names, so a model with state must name everything <name>__<index>.
    [`${tio('input', 'a')} ${tio('output', 'O__0')} sequence_batching { state { input_name: "S__1" output_name: "S__1" data_type: TYPE_FP32 dims: [1] } }`,
      /PyTorch model 'm' is using sequence batching with state but not all inputs and outputs follow the <name>__<index> naming convention\./],
    [`${tio('input', 'X__0')} ${tio('output', 'O__0')} sequence_batching { state { input_name: "S__1" output_name: "STATE" data_type: TYPE_FP32 dims: [1] } }`,
      /PyTorch model 'm' is using sequence batching with state but state 'STATE' does not follow the <name>__<index> naming convention\./],
  ];
  for (const [config, reason] of cases) {
    const repo = await torchRepo(config);
    const s = await startTestServer({ modelRepositories: [repo.dir], exitOnError: false, strictReadiness: false });
    try {
      const index = (await postJson(`${s.url}/v2/repository/index`, {})).json() as { name: string; state: string; reason: string }[];
      assert.equal(index[0]!.state, 'UNAVAILABLE', config);
      assert.match(index[0]!.reason, reason);
    } finally {
      await s.close();
      await repo.remove();
    }
  }
});
