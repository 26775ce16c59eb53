import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startTestServer, tempRepository } from '../../helpers/server.js';
import { postJson } from '../../helpers/http.js';
import { PYTHON_FIXTURES, pythonSkip } from './helpers.js';

// Cancelling a BLS response iterator, as Triton's L0_backend_python request cancellation tests do with their
// bls decoupled cancel model (which calls response_sender_until_cancelled): the called model sees its request
// cancelled through is_cancelled(), answers with a CANCELLED error, and the caller, still reading, gets that
// error response from the iterator before it ends.

const skip = pythonSkip();

test('a cancelled BLS stream: the called model sees is_cancelled() and the caller reads its CANCELLED error', { skip }, async () => {
  const repo = await tempRepository([{ from: join(PYTHON_FIXTURES, 'until_cancelled') }, { from: join(PYTHON_FIXTURES, 'bls_cancel') }]);
  const s = await startTestServer({ modelRepositories: [repo.dir], modelControlMode: 'explicit', loadModels: ['until_cancelled', 'bls_cancel'] });
  try {
    const r = await postJson(`${s.url}/v2/models/bls_cancel/infer`, {
      inputs: [{ name: 'INPUT', shape: [1], datatype: 'INT32', data: [1] }, { name: 'MAX_SUM', shape: [1], datatype: 'INT32', data: [3] }],
    });
    assert.equal(r.status, 200, r.body.toString());
    const out = new Map<string, number>(r.json().outputs.map((o: any) => [o.name, o.data[0]]));
    assert.equal(out.get('IS_CANCELLED'), 1);
    assert.ok(out.get('SUM')! >= 3, `sum ${out.get('SUM')}`);
    // The called model stopped well before its 200 responses.
    assert.ok(out.get('COUNT')! < 200, `count ${out.get('COUNT')}`);
    assert.equal(out.get('SUM'), out.get('COUNT'));
  } finally {
    await s.close();
    await repo.remove();
  }
});
