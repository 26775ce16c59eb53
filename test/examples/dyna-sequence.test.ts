import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { EXAMPLES } from '../helpers/paths.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { binaryBody, request, splitBinary } from '../helpers/http.js';

// The bundled simple_dyna_sequence and simple_string_dyna_sequence, sent what Triton's sequence example clients
// send with --dyna (triton-inference-server/client src/python/examples/simple_http_sequence_sync_infer_client.py,
// simple_grpc_sequence_stream_infer_client.py, src/c++/examples/simple_http_sequence_sync_infer_client.cc) and
// checked as they check: simple_dyna_sequence answers INPUT + START + END * CORRID, without state;
// simple_string_dyna_sequence (Triton's dyna_sequence backend) accumulates per sequence and adds the id at the end.

let s: TestServer;
before(async () => {
  s = await startTestServer({
    modelRepositories: [EXAMPLES], modelControlMode: 'explicit', loadModels: ['simple_dyna_sequence', 'simple_string_dyna_sequence'],
  });
});
after(async () => {
  await s.close();
});

const INT_MODEL = 'simple_dyna_sequence';
const STRING_MODEL = 'simple_string_dyna_sequence';
const VALUES = [11, 7, 5, 3, 2, 0, 1];

interface Step { readonly value: number; readonly start: boolean; readonly end: boolean; readonly requestId?: string }

/**
 * One request as tritonclient.http sends it: INPUT INT32 [1, 1] as a binary tensor, OUTPUT asked for in binary,
 * sequence_id / sequence_start / sequence_end as parameters.
 */
async function infer(model: string, id: number | string, step: Step): Promise<{ status: number; value?: number; id?: string; error?: string }> {
  const header = {
    ...(step.requestId !== undefined ? { id: step.requestId } : {}),
    inputs: [{ name: 'INPUT', shape: [1, 1], datatype: 'INT32', parameters: { binary_data_size: 4 } }],
    outputs: [{ name: 'OUTPUT', parameters: { binary_data: true } }],
    parameters: { sequence_id: id, sequence_start: step.start, sequence_end: step.end },
  };
  const { body, headers } = binaryBody(header, [new Uint8Array(new Int32Array([step.value]).buffer)]);
  const r = await request(`${s.url}/v2/models/${model}/infer`, { body, headers });
  if (r.status !== 200) return { status: r.status, error: r.json().error };
  const { header: h, blobs } = splitBinary(r);
  assert.deepEqual(h.outputs.map((o: any) => [o.name, o.datatype, o.shape]), [['OUTPUT', 'INT32', [1, 1]]]);
  const blob = blobs.get('OUTPUT')!;
  return { status: r.status, value: blob.readInt32LE(0), id: h.id };
}

/** The client's sequence: the first value with START, the last with END. */
const steps = (values: number[]): Step[] => values.map((value, i) => ({ value, start: i === 0, end: i === values.length - 1 }));

async function sendSequence(model: string, id: number | string, values: number[]): Promise<number[]> {
  const out: number[] = [];
  for (const step of steps(values)) {
    const r = await infer(model, id, step);
    assert.equal(r.status, 200, r.error);
    out.push(r.value!);
  }
  return out;
}

/** The clients' check (identical in the Python and C++ examples), with --dyna. */
function check(results: { int0: number[]; int1: number[]; string0: number[] }, ids: { int0: number; int1: number; string0: string }): void {
  assert.equal(results.int0.length, VALUES.length + 1);
  for (let i = 0; i < results.int0.length; i++) {
    let int0 = i === 0 ? 1 : VALUES[i - 1]!;
    let int1 = i === 0 ? 101 : 0 - VALUES[i - 1]!; // not -v: the client compares numbers, and -0 is not 0 here
    let string0 = i === 0 ? 20 : -VALUES[i - 1]! + results.string0[i - 1]!;
    // "The dyna_sequence custom backend adds the correlation ID to the last request in a sequence."
    if (i !== 0 && VALUES[i - 1] === 1) {
      int0 += ids.int0;
      int1 += ids.int1;
      string0 += Number.parseInt(ids.string0, 10);
    }
    assert.deepEqual([results.int0[i], results.int1[i], results.string0[i]], [int0, int1, string0], `step ${i}`);
  }
}

test('simple_http_sequence_sync_infer_client.py --dyna: three sequences one after another', async () => {
  // Ids 1000, 1001 and the string "1002" (offset 0); sequence 0 sends 0 then VALUES, the others 100 / 20 then -VALUES.
  const int0 = await sendSequence(INT_MODEL, 1000, [0, ...VALUES]);
  const int1 = await sendSequence(INT_MODEL, 1001, [100, ...VALUES.map((v) => -v)]);
  const string0 = await sendSequence(STRING_MODEL, '1002', [20, ...VALUES.map((v) => -v)]);
  check({ int0, int1, string0 }, { int0: 1000, int1: 1001, string0: '1002' });
  // The same numbers written out: no state in simple_dyna_sequence, a running sum in the string model.
  assert.deepEqual(int0, [1, 11, 7, 5, 3, 2, 0, 1 + 1000]);
  assert.deepEqual(int1, [101, -11, -7, -5, -3, -2, 0, -1 + 1001]);
  assert.deepEqual(string0, [20, 9, 2, -3, -6, -8, -8, -9 + 1002]);
});

test('simple_http_sequence_sync_infer_client.cc -d: the three sequences interleaved request by request', async () => {
  // Ids 1, 2 and "3"; first the three START requests, then per value one request of each sequence, END on 1.
  const results = { int0: [] as number[], int1: [] as number[], string0: [] as number[] };
  const send = async (model: string, id: number | string, step: Step, into: number[]): Promise<void> => {
    const r = await infer(model, id, step);
    assert.equal(r.status, 200, r.error);
    into.push(r.value!);
  };
  await send(INT_MODEL, 1, { value: 0, start: true, end: false }, results.int0);
  await send(INT_MODEL, 2, { value: 100, start: true, end: false }, results.int1);
  await send(STRING_MODEL, '3', { value: 20, start: true, end: false }, results.string0);
  for (const v of VALUES) {
    await send(INT_MODEL, 1, { value: v, start: false, end: v === 1 }, results.int0);
    await send(INT_MODEL, 2, { value: -v, start: false, end: v === 1 }, results.int1);
    await send(STRING_MODEL, '3', { value: -v, start: false, end: v === 1 }, results.string0);
  }
  check(results, { int0: 1, int1: 2, string0: '3' });
});

test('simple_grpc_sequence_stream_infer_client.py --dyna -o 1: all three sequences in flight at once, matched by request id', async () => {
  // The stream client sends every request without waiting, each with id "<sequence id>_<count>", and sorts the
  // responses by the part of the id before '_'. Here each sequence is sent in order and the three concurrently.
  const ids = { int0: 1000 + 2, int1: 1001 + 2, string0: String(1002 + 1) };
  const run = async (model: string, id: number | string, values: number[]): Promise<number[]> => {
    const out: number[] = [];
    for (const [i, step] of steps(values).entries()) {
      const r = await infer(model, id, { ...step, requestId: `${id}_${i + 1}` });
      assert.equal(r.status, 200, r.error);
      assert.equal(r.id!.split('_')[0], String(id));
      out.push(r.value!);
    }
    return out;
  };
  const [int0, int1, string0] = await Promise.all([
    run(INT_MODEL, ids.int0, [0, ...VALUES]),
    run(INT_MODEL, ids.int1, [100, ...VALUES.map((v) => -v)]),
    run(STRING_MODEL, ids.string0, [20, ...VALUES.map((v) => -v)]),
  ]);
  check({ int0: int0!, int1: int1!, string0: string0! }, ids);
});

test('the configs are Triton\'s: four control inputs the client never sends, two instances, oldest strategy', async () => {
  for (const [model, corrid] of [[INT_MODEL, 'TYPE_UINT64'], [STRING_MODEL, 'TYPE_STRING']] as const) {
    const meta = (await request(`${s.url}/v2/models/${model}`)).json();
    assert.deepEqual(meta.inputs, [{ name: 'INPUT', datatype: 'INT32', shape: [-1, 1] }]);
    assert.deepEqual(meta.outputs, [{ name: 'OUTPUT', datatype: 'INT32', shape: [-1, 1] }]);
    const cfg = (await request(`${s.url}/v2/models/${model}/config`)).json();
    assert.equal(cfg.backend, 'javascript');
    assert.equal(cfg.max_batch_size, 8);
    assert.deepEqual(cfg.sequence_batching.control_input.map((c: any) => [c.name, c.control[0].kind]), [
      ['START', 'CONTROL_SEQUENCE_START'], ['END', 'CONTROL_SEQUENCE_END'], ['READY', 'CONTROL_SEQUENCE_READY'], ['CORRID', 'CONTROL_SEQUENCE_CORRID'],
    ]);
    assert.equal(cfg.sequence_batching.control_input[3].control[0].data_type, corrid);
    assert.equal(cfg.sequence_batching.max_sequence_idle_microseconds, 10000000);
    assert.equal(cfg.sequence_batching.oldest.max_candidate_sequences, 1024);
    assert.equal(cfg.parameters.execute_delay_ms.string_value, '3');
    assert.equal(cfg.instance_group[0].count, 2);
  }
});

test('simple_string_dyna_sequence: an id that is not an integer fails; ids read as stoi reads them; START starts over', async () => {
  const bad = await infer(STRING_MODEL, 'SEQ-3', { value: 1, start: true, end: false });
  assert.equal(bad.status, 400);
  assert.match(bad.error!, /dyna sequence backend expects correlation ID to be decodable into an integer/);
  // " 42abc" reads as 42: the accumulator gets 42 at the end.
  assert.deepEqual(await sendSequence(STRING_MODEL, ' 42abc', [5, 6]), [5, 5 + 6 + 42]);
  // A second START on a live sequence resets its accumulator.
  assert.equal((await infer(STRING_MODEL, '50', { value: 5, start: true, end: false })).value, 5);
  assert.equal((await infer(STRING_MODEL, '50', { value: 7, start: false, end: false })).value, 12);
  assert.equal((await infer(STRING_MODEL, '50', { value: 3, start: true, end: false })).value, 3);
  assert.equal((await infer(STRING_MODEL, '50', { value: 1, start: false, end: true })).value, 3 + 1 + 50);
});

test('simple_dyna_sequence: CORRID is a uint64 and counts truncated to 32 bits', async () => {
  // Through the in-process API, which takes ids past 2^53: 2^32 + 5 adds 5, 2^64 - 1 adds -1.
  const one = async (id: bigint, value: number, start: boolean, end: boolean): Promise<number> => {
    const res = await s.server.infer({
      model: INT_MODEL, sequenceId: id, sequenceStart: start, sequenceEnd: end,
      inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1], data: new Uint8Array(new Int32Array([value]).buffer) }],
    });
    return new Int32Array((res.outputs[0]!.data as Uint8Array).slice().buffer)[0]!;
  };
  assert.deepEqual([await one(2n ** 32n + 5n, 10, true, false), await one(2n ** 32n + 5n, 10, false, true)], [11, 15]);
  assert.deepEqual([await one(2n ** 64n - 1n, 10, true, false), await one(2n ** 64n - 1n, 10, false, true)], [11, 9]);
});

test('simple_string_dyna_sequence: many sequences at once over two instances each keep their own sum, and batch', async () => {
  const stats = async () => (await request(`${s.url}/v2/models/${STRING_MODEL}/stats`)).json().model_stats[0];
  const before = await stats();
  const ids = Array.from({ length: 8 }, (_, i) => 3000 + i);
  const inputs = (id: number) => VALUES.map((v) => v * (id - 2999));
  const results = await Promise.all(ids.map((id) => sendSequence(STRING_MODEL, String(id), inputs(id))));
  ids.forEach((id, k) => {
    const sums = inputs(id).map((_, i, a) => a.slice(0, i + 1).reduce((x, y) => x + y, 0));
    sums[sums.length - 1]! += id;
    assert.deepEqual(results[k], sums, `sequence ${id}`);
  });
  const after = await stats();
  const requests = after.inference_count - before.inference_count;
  const executions = after.execution_count - before.execution_count;
  assert.equal(requests, ids.length * VALUES.length);
  assert.ok(executions < requests, `${executions} executions for ${requests} requests`);
});
