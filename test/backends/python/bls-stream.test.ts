import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startTestServer, tempRepository } from '../../helpers/server.js';
import { postJson } from '../../helpers/http.js';
import { PYTHON_EXAMPLES, PYTHON_FIXTURES, pythonSkip } from './helpers.js';

// What a Python model's BLS exec(decoupled=True) iterator yields, as in Triton's python_backend: every response
// of the called model and, when that model sends its FINAL flag alone, one last response with no outputs
// (Triton's qa/python_models BLS decoupled tests skip it with `if len(infer_response.output_tensors()) > 0`).

const skip = pythonSkip();

async function counts(mode: number, n: number): Promise<[number, number]> {
  const repo = await tempRepository([
    { from: join(PYTHON_EXAMPLES, 'square_int32') }, { from: join(PYTHON_FIXTURES, 'sender_decoupled') },
    { from: join(PYTHON_FIXTURES, 'bls_stream_count') },
  ]);
  const s = await startTestServer({ modelRepositories: [repo.dir], modelControlMode: 'explicit', loadModels: ['square_int32', 'sender_decoupled', 'bls_stream_count'] });
  try {
    const r = await postJson(`${s.url}/v2/models/bls_stream_count/infer`, {
      inputs: [{ name: 'MODE', shape: [1], datatype: 'INT32', data: [mode] }, { name: 'N', shape: [1], datatype: 'INT32', data: [n] }],
    });
    assert.equal(r.status, 200, r.body.toString());
    const out = new Map<string, number>(r.json().outputs.map((o: any) => [o.name, o.data[0]]));
    return [out.get('COUNT')!, out.get('EMPTY_LAST')!];
  } finally {
    await s.close();
    await repo.remove();
  }
}

test('BLS exec(decoupled=True) ends with an empty response when the called model sends FINAL alone, only then', { skip }, async () => {
  assert.deepEqual(await counts(0, 3), [4, 1]);
  assert.deepEqual(await counts(0, 0), [1, 1]);
  assert.deepEqual(await counts(1, 0), [1, 0]);
});
