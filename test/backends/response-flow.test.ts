import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EXAMPLES } from '../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../helpers/server.js';
import { until } from '../helpers/until.js';
import type { Tensor } from '../../src/tensor/tensor.js';

// A decoupled request to Triton's repeat backend whose reader leaves early (a client that stops reading, or an
// ensemble whose other step failed; qa/L0_decoupled closes its streams with requests in flight) is over once
// its responses stop: it is answered CANCELLED, so the model counts it and lets it go. Before, such a request
// stayed open for good, never counted.

let repo: { dir: string; remove(): Promise<void> };
let s: TestServer;

before(async () => {
  repo = await tempRepository([{ from: join(EXAMPLES, 'repeat_int32') }]);
  const write = async (name: string, text: string) => {
    await mkdir(join(repo.dir, name, '1'), { recursive: true });
    await writeFile(join(repo.dir, name, 'config.pbtxt'), `name: "${name}"\n${text}`);
  };
  await write('square_fail', `backend: "square"\nmax_batch_size: 0\nmodel_transaction_policy { decoupled: True }
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
parameters [ { key: "CUSTOM_FAIL_COUNT" value: { string_value: "1" } } ]`);
  await write('repeat_then_fail', `platform: "ensemble"\nmax_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] }, { name: "DELAY" data_type: TYPE_UINT32 dims: [ -1 ] }, { name: "WAIT" data_type: TYPE_UINT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
ensemble_scheduling { step [
  { model_name: "repeat_int32" model_version: -1 input_map { key: "IN" value: "IN" } input_map { key: "DELAY" value: "DELAY" }
    input_map { key: "WAIT" value: "WAIT" } output_map { key: "OUT" value: "r" } },
  { model_name: "square_fail" model_version: -1 input_map { key: "IN" value: "r" } output_map { key: "OUT" value: "OUT" } } ] }`);
  s = await startTestServer({ modelRepositories: [repo.dir] });
});
after(async () => {
  await s.close();
  await repo.remove();
});

/** IN = values, each response DELAY ms after the one before; the execution ends at once (WAIT 0). */
function repeatInputs(values: number[], delayMs: number): Tensor[] {
  return [
    { name: 'IN', datatype: 'INT32', shape: [values.length], data: new Uint8Array(Int32Array.from(values).buffer) },
    { name: 'DELAY', datatype: 'UINT32', shape: [values.length], data: new Uint8Array(Uint32Array.from(values.map(() => delayMs)).buffer) },
    { name: 'WAIT', datatype: 'UINT32', shape: [1], data: new Uint8Array(Uint32Array.of(0).buffer) },
  ];
}

const counted = (model: string): number => {
  const stats = (s.server.statistics(model).model_stats[0] as any).inference_stats;
  return stats.success.count + stats.fail.count;
};

test('a repeat request whose reader stops after the first response is over, and counted', async () => {
  // Many responses far apart: the request is nowhere near its end when the reader leaves.
  for await (const res of s.server.inferStream({ model: 'repeat_int32', inputs: repeatInputs([1, 2, 3, 4, 5, 6, 7, 8], 200) })) {
    assert.equal(res.outputs.length, 2);
    break;
  }
  await until(() => counted('repeat_int32') === 1, 'the request counted once its reader left');
});

test('a repeat step left behind by a failed ensemble is over, and counted', async () => {
  const before = counted('repeat_int32');
  // The first value reaches square_fail, which fails it while repeat still has responses to come.
  await assert.rejects(async () => {
    for await (const _ of s.server.inferStream({ model: 'repeat_then_fail', inputs: repeatInputs([1, 2, 3, 4, 5, 6, 7, 8], 200) })) { /* read on */ }
  }, /simulated failure/);
  await until(() => counted('repeat_int32') === before + 1, 'the step counted once the ensemble failed');
});
