import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { EXAMPLES } from '../../helpers/paths.js';
import { failure, startGrpcTestServer, unary, type GrpcTestServer } from '../../helpers/grpc.js';

// gRPC TraceSetting: each value a list of strings, an empty list clears the setting, the answer is the
// setting in force; Triton's refusals as INVALID_ARGUMENT / UNIMPLEMENTED.

let s: GrpcTestServer;
before(async () => {
  s = await startGrpcTestServer({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit', loadModels: ['simple'], trace: ['triton,file=/tmp/nereid-grpc-trace-unused.json'] });
});
after(() => s.close());

const flat = (r: { settings: Record<string, { value: string[] }> }): Record<string, string[]> =>
  Object.fromEntries(Object.entries(r.settings).map(([k, v]) => [k, v.value]));

test('a model’s setting: set, shown, cleared with an empty list back to the global value', async () => {
  const set = flat(await unary(s.client, 'TraceSetting', { model_name: 'simple', settings: { trace_level: { value: ['TIMESTAMPS', 'TENSORS'] }, trace_rate: { value: ['3'] } } }));
  assert.deepEqual(set, {
    trace_level: ['TIMESTAMPS', 'TENSORS'], trace_rate: ['3'], trace_count: ['-1'], log_frequency: ['0'], trace_file: ['/tmp/nereid-grpc-trace-unused.json'], trace_mode: ['triton'],
  });
  assert.deepEqual(flat(await unary(s.client, 'TraceSetting', { settings: {} })).trace_level, ['OFF'], 'the global setting is unchanged');
  const cleared = flat(await unary(s.client, 'TraceSetting', { model_name: 'simple', settings: { trace_rate: { value: [] } } }));
  assert.deepEqual([cleared.trace_rate, cleared.trace_level], [['1000'], ['TIMESTAMPS', 'TENSORS']]);
  const off = flat(await unary(s.client, 'TraceSetting', { model_name: 'simple', settings: { trace_level: { value: [] } } }));
  assert.deepEqual(off.trace_level, ['OFF'], 'nothing of its own left: the model uses the global setting');
});

test('bad values are refused in Triton’s words', async () => {
  const cases: [Record<string, { value: string[] }>, number, string][] = [
    [{ trace_rate: { value: ['1', '2'] } }, grpc.status.INVALID_ARGUMENT, "expect only 1 value for 'trace_rate'"],
    [{ trace_count: { value: ['-3'] } }, grpc.status.INVALID_ARGUMENT, "Unable to parse 'trace_count'. Expecting value >= -1, got:-3"],
    [{ log_frequency: { value: ['often'] } }, grpc.status.INVALID_ARGUMENT, "Unable to parse 'log_frequency', got: often"],
    [{ trace_level: { value: ['OFF', 'TENSORS'] } }, grpc.status.INVALID_ARGUMENT, "Expect only one trace level 'OFF' is specified"],
    [{ trace_file: { value: ['/elsewhere'] } }, grpc.status.UNIMPLEMENTED, 'trace file location can not be updated through network protocol'],
  ];
  for (const [settings, code, details] of cases) {
    const e = await failure(unary(s.client, 'TraceSetting', { settings }));
    assert.deepEqual([e.code, e.details], [code, details], JSON.stringify(settings));
  }
  const unknown = await failure(unary(s.client, 'TraceSetting', { model_name: 'nosuch', settings: {} }));
  assert.deepEqual([unknown.code, unknown.details], [grpc.status.INVALID_ARGUMENT, 'Request for unknown model : nosuch']);
});
