import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../../helpers/server.js';
import { postJson } from '../../helpers/http.js';
import { PYTHON_FIXTURES, pythonSkip } from './helpers.js';

// The parameters a Python model may put on its responses, as Triton's L0_backend_python/response_parameters
// test pins them: a dict of str keys and bool, int or str values reaches the client; anything else is refused
// by pb_utils.InferenceResponse with python_backend's words (the model answers that as an INVALID_ARG error).

const skip = pythonSkip();

test('response parameters: bool, int and str values reach the client, other types are refused in Triton\'s words', { skip }, async () => {
  const s = await startTestServer({ modelRepositories: [PYTHON_FIXTURES], modelControlMode: 'explicit', loadModels: ['response_parameters'] });
  try {
    const infer = (params: unknown) => postJson(`${s.url}/v2/models/response_parameters/infer`, {
      inputs: [{ name: 'RESPONSE_PARAMETERS', shape: [1], datatype: 'BYTES', data: [JSON.stringify(params)] }],
    });
    for (const params of [{}, { many_elements: false }, { bool: true, str: 'Hello World!', int: 1024 }, { a: '1', b: '2', c: 3, d: false, e: 5, f: '' }]) {
      const r = await infer(params);
      assert.equal(r.status, 200, r.body.toString());
      assert.deepEqual(r.json().parameters ?? {}, params);
      assert.equal(r.json().outputs[0].data[0], JSON.stringify(params));
    }
    const refused: [unknown, string][] = [
      [[], ", got <class 'list'>"],
      [{ 1: 'int key' }, "Expect parameters keys to have type str, found type <class 'int'>"],
      [{ int: 2, float: 0.5 }, "Expect parameters values to have type bool/int/str, found type <class 'float'>"],
      [{ bool: true, null: null }, "Expect parameters values to have type bool/int/str, found type <class 'NoneType'>"],
      [{ str: '', list: ['variable'] }, "Expect parameters values to have type bool/int/str, found type <class 'list'>"],
    ];
    for (const [params, message] of refused) {
      const r = await infer(params);
      assert.equal(r.status, 400, r.body.toString());
      assert.ok(r.json().error.includes(message), `${JSON.stringify(params)}: ${r.json().error}`);
    }
  } finally {
    await s.close();
  }
});
