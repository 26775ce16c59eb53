import { test } from 'node:test';
import assert from 'node:assert/strict';
import { executeTimeoutMs } from '../../src/backends/backend.js';
import type { ModelConfig } from '../../src/config/types.js';

// Where a model's execute timeout comes from: its nereid_execute_timeout_ms parameter, the Python backend's
// earlier NEREID_EXECUTE_TIMEOUT_MS spelling, else the server's environment variable, else none.

const config = (parameters: Record<string, string>): ModelConfig =>
  ({ name: 'm', parameters: Object.fromEntries(Object.entries(parameters).map(([k, v]) => [k, { string_value: v }])) }) as unknown as ModelConfig;

test('execute timeout: parameter, earlier spelling, environment default, none; bad values name their source', () => {
  const cases: [Record<string, string>, NodeJS.ProcessEnv, number | undefined | RegExp][] = [
    [{}, {}, undefined],
    [{ nereid_execute_timeout_ms: '2500' }, {}, 2500],
    [{ NEREID_EXECUTE_TIMEOUT_MS: '1500' }, {}, 1500],
    [{ nereid_execute_timeout_ms: '2500', NEREID_EXECUTE_TIMEOUT_MS: '1500' }, {}, 2500],
    [{}, { NEREID_EXECUTE_TIMEOUT_MS: '60000' }, 60000],
    [{ nereid_execute_timeout_ms: '10' }, { NEREID_EXECUTE_TIMEOUT_MS: '60000' }, 10],
    [{ nereid_execute_timeout_ms: '' }, {}, undefined],
    [{ nereid_execute_timeout_ms: '0' }, {}, /parameter nereid_execute_timeout_ms of model 'm' must be a positive number of milliseconds, got '0'/],
    [{ nereid_execute_timeout_ms: 'soon' }, {}, /got 'soon'/],
    [{}, { NEREID_EXECUTE_TIMEOUT_MS: '-1' }, /the environment variable NEREID_EXECUTE_TIMEOUT_MS must be a positive number/],
  ];
  for (const [parameters, env, expected] of cases) {
    if (expected instanceof RegExp) assert.throws(() => executeTimeoutMs(config(parameters), env), expected);
    else assert.equal(executeTimeoutMs(config(parameters), env), expected, JSON.stringify({ parameters, env }));
  }
});
