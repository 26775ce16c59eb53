import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startTestServer } from '../../helpers/server.js';
import { postJson } from '../../helpers/http.js';
import { PYTHON_FIXTURES, pythonSkip } from './helpers.js';

// A Python model learns where a request stands in its sequence only from request.flags(): START is 1 and END
// is 2 (TRITONSERVER_REQUEST_FLAG_SEQUENCE_START / _END), as Triton's Python backend hands them on.

const skip = pythonSkip();

test('a Python model sees START as flag 1, END as flag 2, and the correlation id', { skip }, async () => {
  const s = await startTestServer({ modelRepositories: [PYTHON_FIXTURES], modelControlMode: 'explicit', loadModels: ['sequence_flags'] });
  try {
    const seen = async (start: boolean, end: boolean) => {
      const r = await postJson(`${s.url}/v2/models/sequence_flags/infer`, {
        inputs: [{ name: 'INPUT0', shape: [1], datatype: 'INT32', data: [0] }],
        parameters: { sequence_id: 31, sequence_start: start, sequence_end: end },
      });
      assert.equal(r.status, 200, r.body.toString());
      const out = new Map<string, number>(r.json().outputs.map((o: any) => [o.name, o.data[0]]));
      return [out.get('FLAGS'), out.get('CORRID')];
    };
    assert.deepEqual(await seen(true, false), [1, 31]);
    assert.deepEqual(await seen(false, false), [0, 31]);
    assert.deepEqual(await seen(false, true), [2, 31]);
    assert.deepEqual(await seen(true, true), [3, 31]);
  } finally {
    await s.close();
  }
});
