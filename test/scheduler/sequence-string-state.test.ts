import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FIXTURES } from '../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../helpers/server.js';
import { postJson, request } from '../helpers/http.js';
import { serializeBytes } from '../../src/tensor/bytes.js';
import { pythonSkip } from '../backends/python/helpers.js';
import { missingPrograms, startRedis } from '../helpers/replicas.js';

// Implicit state of TYPE_STRING (BYTES), as Triton's core keeps it (src/sequence_state.cc, and
// sequence_batch_scheduler.cc's initial state): a sequence starts from empty strings, or from initial_state's
// zero_data (empty strings too) or data_file (serialized elements, a 4-byte length before each). The models are
// test/fixtures/python/string_state, a running concatenation (copies read their start from initial_state), and
// the ONNX test/fixtures/sequence/string_sum, a running sum of numbers written as strings.

const skip = pythonSkip();
let repo: { dir: string; remove(): Promise<void> };
let s: TestServer;

async function withInitialState(name: string, initial: string, file?: { name: string; data: Uint8Array }): Promise<void> {
  const config = join(repo.dir, name, 'config.pbtxt');
  await writeFile(config, (await readFile(config, 'utf8'))
    .replace('name: "string_state"', `name: "${name}"`)
    .replace('dims: [ 1 ] } ]\n}', `dims: [ 1 ] initial_state { name: "start" data_type: TYPE_STRING dims: [ 1 ] ${initial} } } ]\n}`));
  if (!file) return;
  await mkdir(join(repo.dir, name, 'initial_state'), { recursive: true });
  await writeFile(join(repo.dir, name, 'initial_state', file.name), file.data);
}

before(async () => {
  const model = join(FIXTURES, 'python', 'string_state');
  repo = await tempRepository([{ from: model }, { from: model, name: 'from_file' }, { from: model, name: 'from_zero' }, { from: model, name: 'bad_file' },
    { from: join(FIXTURES, 'sequence', 'string_sum') }]);
  const utf8 = (v: string) => new TextEncoder().encode(v);
  await withInitialState('from_file', 'data_file: "hello.bin"', { name: 'hello.bin', data: serializeBytes([utf8('hi:')]) });
  await withInitialState('from_zero', 'zero_data: true');
  // Two elements for a state of one.
  await withInitialState('bad_file', 'data_file: "two.bin"', { name: 'two.bin', data: serializeBytes([utf8('a'), utf8('b')]) });
  s = await startTestServer({ modelRepositories: [repo.dir], exitOnError: false, strictReadiness: false });
});
after(async () => {
  await s?.close();
  await repo?.remove();
});

async function steps(model: string, id: number, values: string[], urls?: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < values.length; i++) {
    const url = urls ? urls[i % urls.length]! : s.url;
    const r = await postJson(`${url}/v2/models/${model}/infer`, {
      inputs: [{ name: 'INPUT', shape: [1, 1], datatype: 'BYTES', data: [values[i]] }],
      parameters: { sequence_id: id, sequence_start: i === 0, sequence_end: i === values.length - 1 },
    });
    assert.equal(r.status, 200, r.body.toString());
    const outputs = r.json().outputs as { name: string; datatype: string; shape: number[]; data: string[] }[];
    assert.deepEqual(outputs.map((o) => [o.name, o.datatype, o.shape]), [['OUTPUT', 'BYTES', [1, 1]]]);
    out.push(outputs[0]!.data[0]!);
  }
  return out;
}

test('a TYPE_STRING state loads, starts empty and carries each sequence\'s strings from step to step', { skip }, async () => {
  const [a, b] = await Promise.all([steps('string_state', 1, ['a', 'b', 'c']), steps('string_state', 2, ['x', 'y', 'z'])]);
  assert.deepEqual(a, ['a', 'ab', 'abc']);
  assert.deepEqual(b, ['x', 'xy', 'xyz']);
  // A new sequence on the same id starts empty again.
  assert.deepEqual(await steps('string_state', 1, ['q']), ['q']);
});

test('a TYPE_STRING initial_state starts from its data_file\'s elements, or from empty strings with zero_data', { skip }, async () => {
  assert.deepEqual(await steps('from_file', 3, ['x', 'y']), ['hi:x', 'hi:xy']);
  assert.deepEqual(await steps('from_zero', 4, ['x', 'y']), ['x', 'xy']);
});

test('a TYPE_STRING initial_state data_file that does not hold the state\'s elements is refused at load', { skip }, async () => {
  const index = (await postJson(`${s.url}/v2/repository/index`, {})).json() as { name: string; state: string; reason: string }[];
  const bad = index.find((m) => m.name === 'bad_file')!;
  assert.equal(bad.state, 'UNAVAILABLE');
  assert.match(bad.reason, /initial state file 'two\.bin' of state 'INPUT_STATE'/);
  assert.equal((await request(`${s.url}/v2/models/string_state/ready`)).status, 200);
});

test('an ONNX model\'s TYPE_STRING state starts from its initial_state data file and carries between steps', async () => {
  const [a, b] = await Promise.all([steps('string_sum', 5, ['5', '7', '1']), steps('string_sum', 6, ['-2', '10'])]);
  assert.deepEqual(a, ['5', '12', '13']);
  assert.deepEqual(b, ['-2', '8']);
  assert.deepEqual(await steps('string_sum', 5, ['4']), ['4']);
});

test('a TYPE_STRING state travels through the shared sequence store: replicas take turns on one sequence', { skip: missingPrograms(['redis-server', 'redis-cli']) || false }, async () => {
  const redis = await startRedis();
  const options = { modelRepositories: [join(FIXTURES, 'sequence')], modelControlMode: 'explicit' as const, loadModels: ['string_sum'], sequenceStateStore: `redis://127.0.0.1:${redis.port}` };
  const replicas = await Promise.all([startTestServer(options), startTestServer(options)]);
  try {
    assert.deepEqual(await steps('string_sum', 7, ['5', '7', '1', '2'], replicas.map((r) => r.url)), ['5', '12', '13', '15']);
  } finally {
    await Promise.all(replicas.map((r) => r.close()));
    await redis.stop();
  }
});
