import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXAMPLES, FIXTURES } from '../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../helpers/server.js';
import { postJson, request } from '../helpers/http.js';
import { InferenceServer } from '../../src/server/inference-server.js';
import { startHttpFrontend } from '../../src/frontends/http/server.js';
import { createLogger } from '../../src/observability/logger.js';
import type { InferenceResponse } from '../../src/inference/index.js';
import { pythonSkip } from '../backends/python/helpers.js';
import { until } from '../helpers/until.js';

// How the sequence batcher forms batches, through the real server: when a batch waits for more sequences
// (direct strategy's max_queue_delay_microseconds and minimum_slot_utilization), which requests may share a
// batch (shapes, ragged inputs), and what a cancelled queued request does to its sequence. Timing is checked
// by batch statistics and by ratios measured in the same test, with generous bounds only.

/** A model folder copied under `name`, its config edited by `edit`. */
async function copyModel(dir: string, name: string, edit: (text: string) => string): Promise<void> {
  const p = join(dir, name, 'config.pbtxt');
  await writeFile(p, edit((await readFile(p, 'utf8')).replace(/^name: ".*"$/m, `name: "${name}"`)));
}

const batchSizes = (st: any): Record<number, number> => Object.fromEntries(st.batch_stats.map((b: any) => [b.batch_size, b.compute_infer.count]));
/** A fixed-size output's elements (INT32 or FP32, little-endian as the backends write them). */
const values = (r: InferenceResponse, name: string): number[] => {
  const d = r.outputs.find((o) => o.name === name)!.data as Uint8Array;
  const view = new DataView(d.buffer, d.byteOffset, d.byteLength);
  const dt = r.outputs.find((o) => o.name === name)!.datatype;
  return Array.from({ length: d.byteLength / 4 }, (_, i) => (dt === 'FP32' ? view.getFloat32(i * 4, true) : view.getInt32(i * 4, true)));
};
const stats = async (s: TestServer, model: string) => (await request(`${s.url}/v2/models/${model}/stats`)).json().model_stats[0];

test('direct strategy: a batch below minimum_slot_utilization waits max_queue_delay_microseconds; a full one goes at once', async () => {
  const repo = await tempRepository([{ from: join(EXAMPLES, 'sequence_accumulator'), name: 'accumulator_direct' }]);
  // Two slots, both needed (utilization 1.0), or a 3 s wait.
  await copyModel(repo.dir, 'accumulator_direct', (t) => t
    .replace('max_batch_size: 8', 'max_batch_size: 2')
    .replace('sequence_batching {', 'sequence_batching {\n  direct { max_queue_delay_microseconds: 3000000 minimum_slot_utilization: 1.0 }'));
  const s = await startTestServer({ modelRepositories: [repo.dir] });
  const step = (id: number, value: number) => postJson(`${s.url}/v2/models/accumulator_direct/infer`, {
    inputs: [{ name: 'INPUT', shape: [1, 1], datatype: 'INT32', data: [value] }], parameters: { sequence_id: id, sequence_start: true, sequence_end: true },
  }).then((r) => { assert.equal(r.status, 200, r.body.toString()); return r.json().outputs[0].data[0] as number; });
  try {
    let t0 = performance.now();
    assert.equal(await step(1, 7), 7);
    const alone = performance.now() - t0;
    assert.ok(alone >= 2500 && alone <= 10000, `a lone START answered after ${alone.toFixed(0)} ms, not after about 3 s`);
    assert.deepEqual(batchSizes(await stats(s, 'accumulator_direct')), { 1: 1 });
    // Two sequences fill both slots: they run at once, as one batch.
    t0 = performance.now();
    assert.deepEqual(await Promise.all([step(2, 1), step(3, 2)]), [1, 2]);
    const full = performance.now() - t0;
    assert.ok(full < alone / 2, `a full batch took ${full.toFixed(0)} ms against ${alone.toFixed(0)} ms alone`);
    assert.deepEqual(batchSizes(await stats(s, 'accumulator_direct')), { 1: 1, 2: 1 });
  } finally {
    await s.close();
    await repo.remove();
  }
});

test('requests whose shapes differ share a sequence batch only when the input allows ragged batches', async () => {
  const repo = await tempRepository([{ from: join(FIXTURES, 'dtypes', 'identity_int32'), name: 'seq_identity' },
    { from: join(FIXTURES, 'batching', 'ragged_acc'), name: 'seq_ragged' }]);
  // Inline instances batch what arrives in one turn of the loop, so two requests sent together meet in a batch.
  const inline = '\nparameters { key: "nereid_execution_placement" value { string_value: "inline" } }\n';
  await copyModel(repo.dir, 'seq_identity', (t) => `${t}sequence_batching { }\ninstance_group [ { count: 1 kind: KIND_CPU } ]${inline}`);
  await copyModel(repo.dir, 'seq_ragged', (t) => t.replace(/dynamic_batching \{[^}]*\}/, 'sequence_batching { }') + inline);
  const s = await startTestServer({ modelRepositories: [repo.dir] });
  const start = (model: string, id: number, n: number, datatype: 'INT32' | 'FP32', input: string) => s.server.infer({
    model, sequenceId: id, sequenceStart: true, sequenceEnd: true,
    inputs: [{ name: input, datatype, shape: [1, n], data: new Uint8Array(datatype === 'INT32' ? new Int32Array(n).fill(id).buffer : new Float32Array(n).fill(id).buffer) }],
  });
  try {
    // INPUT0 has a variable dim and is not ragged: [1, 2] and [1, 3] go in two batches.
    const [a, b] = await Promise.all([start('seq_identity', 1, 2, 'INT32', 'INPUT0'), start('seq_identity', 2, 3, 'INT32', 'INPUT0')]);
    assert.deepEqual([values(a, 'OUTPUT0'), values(b, 'OUTPUT0')], [[1, 1], [2, 2, 2]]);
    assert.deepEqual(batchSizes(await stats(s, 'seq_identity')), { 1: 2 });
    // Ragged INPUT0: one batch; ACC counts elements up to each request, so the second request sees 2 + 3.
    const [r1, r2] = await Promise.all([start('seq_ragged', 1, 2, 'FP32', 'INPUT0'), start('seq_ragged', 2, 3, 'FP32', 'INPUT0')]);
    assert.deepEqual([values(r1, 'ACC'), values(r2, 'ACC')], [[2], [5]]);
    assert.deepEqual([values(r1, 'OUTPUT0'), values(r2, 'OUTPUT0')], [[2, 2], [4, 4, 4]]);
    assert.deepEqual(batchSizes(await stats(s, 'seq_ragged')), { 2: 1 });
  } finally {
    await s.close();
    await repo.remove();
  }
});

test('a cancelled queued request ends its sequence: it and the later queued requests are CANCELLED, logged as Triton logs it', async () => {
  const repo = await tempRepository([{ from: join(FIXTURES, 'slow', 'slow_fp32'), name: 'slow_sequence' }]);
  // ~0.1 s per execution on one instance: the sequence's later requests wait behind its first.
  await copyModel(repo.dir, 'slow_sequence', (t) => `${t}sequence_batching { }\n`
    + 'parameters { key: "nereid_execution_placement" value { string_value: "worker" } }\n');
  const dir = await mkdtemp(join(tmpdir(), 'nereid-log-'));
  const file = join(dir, 'server.log');
  const logger = createLogger({ info: false, warning: false, error: false, verbose: 1, format: 'default', file });
  const server = await InferenceServer.create({ modelRepositories: [repo.dir] }, { logger });
  const http = await startHttpFrontend(server, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20 }, logger);
  const step = (id: number, v: number, flags: { start?: boolean; end?: boolean; signal?: AbortSignal } = {}) => server.infer({
    model: 'slow_sequence', sequenceId: id, sequenceStart: flags.start ?? false, sequenceEnd: flags.end ?? false, signal: flags.signal,
    inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 16], data: new Uint8Array(new Float32Array(16).fill(v).buffer) }],
  });
  const outcome = (p: Promise<InferenceResponse>) => p.then((r) => values(r, 'OUTPUT0')[0], (e: Error & { code?: string }) => e.code);
  try {
    const c = new AbortController();
    const first = outcome(step(5, 1, { start: true }));
    const second = outcome(step(5, 2, { signal: c.signal }));
    const third = outcome(step(5, 3));
    // Another sequence queued beside it goes on.
    const other = outcome(step(6, 4, { start: true, end: true }));
    c.abort();
    assert.deepEqual(await Promise.all([first, second, third, other]), [1, 'CANCELLED', 'CANCELLED', 4]);
    // The sequence has ended: its next request needs START.
    await assert.rejects(step(5, 4), /sequence 5 to model 'slow_sequence' must specify the START flag/);
    const failures = (server as any).manager.resolve('slow_sequence').stats.failures;
    assert.equal(failures.CANCELED, 2);
  } finally {
    await server.close(5);
    await http.close();
    await logger.close();
    await repo.remove();
  }
  const log = await readFile(file, 'utf8');
  await rm(dir, { recursive: true, force: true });
  assert.match(log, /^V.*Releasing canceled sequence CORRID 5"$/m);
});

test('a client that hangs up on the first queued request of a sequence ends the sequence: the later requests are answered CANCELLED', async () => {
  const repo = await tempRepository([{ from: join(EXAMPLES, 'sequence_accumulator'), name: 'accumulator_held' }]);
  // A lone sequence's requests wait 2 s for more sequences, so all three are queued when the first hangs up.
  await copyModel(repo.dir, 'accumulator_held', (t) => t
    .replace('sequence_batching {', 'sequence_batching {\n  direct { max_queue_delay_microseconds: 2000000 minimum_slot_utilization: 1.0 }'));
  const s = await startTestServer({ modelRepositories: [repo.dir] });
  const url = `${s.url}/v2/models/accumulator_held/infer`;
  const body = (value: number, start: boolean) => ({
    inputs: [{ name: 'INPUT', shape: [1, 1], datatype: 'INT32', data: [value] }], parameters: { sequence_id: 31, sequence_start: start },
  });
  const waiting = (): number => (s.server as any).manager.resolve('accumulator_held').waiting();
  try {
    const ac = new AbortController();
    const hungUp = fetch(url, { method: 'POST', body: JSON.stringify(body(1, true)), signal: ac.signal }).catch(() => 'aborted');
    await until(() => waiting() === 1, 'the first request to queue');
    const second = postJson(url, body(2, false));
    await until(() => waiting() === 2, 'the second request to queue');
    const third = postJson(url, body(3, false));
    await until(() => waiting() === 3, 'the third request to queue');
    ac.abort();
    assert.equal(await hungUp, 'aborted');
    for (const r of [await second, await third]) {
      assert.equal(r.status, 400);
      assert.match(r.json().error, /cancelled/);
    }
    assert.equal(waiting(), 0);
    assert.equal((await stats(s, 'accumulator_held')).execution_count, 0);
  } finally {
    await s.close();
    await repo.remove();
  }
});

test('oldest strategy: a cancelled request the batcher had taken up is answered alone; one cancelled behind it ends the sequence', async () => {
  const repo = await tempRepository([{ from: join(EXAMPLES, 'sequence_accumulator'), name: 'accumulator_oldest_held' }]);
  // A lone sequence's request waits 1 s for a second sequence to batch with.
  await copyModel(repo.dir, 'accumulator_oldest_held', (t) => t
    .replace('sequence_batching {', 'sequence_batching {\n  oldest { max_candidate_sequences: 4 preferred_batch_size: [ 2 ] max_queue_delay_microseconds: 1000000 }'));
  const s = await startTestServer({ modelRepositories: [repo.dir] });
  const step = (id: number, v: number, flags: { start?: boolean; end?: boolean; signal?: AbortSignal } = {}) => s.server.infer({
    model: 'accumulator_oldest_held', sequenceId: id, sequenceStart: flags.start ?? false, sequenceEnd: flags.end ?? false, signal: flags.signal,
    inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1], data: new Uint8Array(new Int32Array([v]).buffer) }],
  }).then((r) => values(r, 'OUTPUT')[0], (e: Error & { code?: string }) => e.code);
  try {
    // The first request, taken up and waiting for a batch, is cancelled: the sequence goes on without it, as
    // Triton's dynamic batcher answers the cancelled request and takes up the next.
    let c = new AbortController();
    let outcomes = [step(41, 1, { start: true, signal: c.signal }), step(41, 2), step(41, 3, { end: true })];
    c.abort();
    assert.deepEqual(await Promise.all(outcomes), ['CANCELLED', 2, 5]);
    // The second request, cancelled while it waited behind the first: the sequence ends there.
    c = new AbortController();
    outcomes = [step(42, 1, { start: true }), step(42, 2, { signal: c.signal }), step(42, 3)];
    c.abort();
    assert.deepEqual(await Promise.all(outcomes), [1, 'CANCELLED', 'CANCELLED']);
    assert.equal(await step(42, 4), 'INVALID_ARG');
  } finally {
    await s.close();
    await repo.remove();
  }
});

test('oldest strategy: every instance holds max_candidate_sequences sequences', async () => {
  const repo = await tempRepository([{ from: join(EXAMPLES, 'sequence_accumulator'), name: 'accumulator_candidates' }]);
  // Two instances of two candidate sequences each: four sequences live at once, none in the backlog (where a
  // fifth would wait for a place until one of them ends or idles out, 60 s here).
  await copyModel(repo.dir, 'accumulator_candidates', (t) => t
    .replace('max_sequence_idle_microseconds: 5000000', 'max_sequence_idle_microseconds: 60000000\n  oldest { max_candidate_sequences: 2 }')
    .replace(/instance_group \[[^\]]*\]/, 'instance_group [ { count: 2 kind: KIND_CPU } ]'));
  const s = await startTestServer({ modelRepositories: [repo.dir] });
  const step = (id: number, value: number, start: boolean, end: boolean) => postJson(`${s.url}/v2/models/accumulator_candidates/infer`, {
    inputs: [{ name: 'INPUT', shape: [1, 1], datatype: 'INT32', data: [value] }], parameters: { sequence_id: id, sequence_start: start, sequence_end: end },
  }).then((r) => { assert.equal(r.status, 200, r.body.toString()); return r.json().outputs[0].data[0] as number; });
  let timer: NodeJS.Timeout | undefined;
  const backlogged = new Promise<string>((resolve) => (timer = setTimeout(() => resolve('a START waited in the backlog'), 20000)));
  try {
    const ids = [1, 2, 3, 4];
    assert.deepEqual(await Promise.race([Promise.all(ids.map((id) => step(id, id, true, false))), backlogged]), ids);
    assert.deepEqual(await Promise.all(ids.map((id) => step(id, 10, false, true))), ids.map((id) => id + 10));
  } finally {
    clearTimeout(timer);
    await s.close();
    await repo.remove();
  }
});

// Answers each request from a thread after execute() has returned, DELAY_MS later: the later of two requests in
// one batch can be answered first.
const LATE_MODEL = `import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def later(sender, v, delay_ms):
    time.sleep(delay_ms / 1000.0)
    t = pb_utils.Tensor("OUT", np.array([[v]], np.int32))
    sender.send(pb_utils.InferenceResponse(output_tensors=[t]), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            v = int(pb_utils.get_input_tensor_by_name(request, "VALUE").as_numpy()[0][0])
            d = int(pb_utils.get_input_tensor_by_name(request, "DELAY_MS").as_numpy()[0][0])
            threading.Thread(target=later, args=(request.get_response_sender(), v, d)).start()
        return [None] * len(requests)
`;

test('oldest strategy with preserve_ordering: answers go out in request order even when the model answers out of order', { skip: pythonSkip() }, async () => {
  const dir = await mkdtemp(join(tmpdir(), 'nereid-seq-order-'));
  // The same model with and without preserve_ordering; the delay gathers two sequences into one batch.
  for (const [name, preserve] of [['late_ordered', true], ['late_unordered', false]] as const) {
    await mkdir(join(dir, name, '1'), { recursive: true });
    await writeFile(join(dir, name, '1', 'model.py'), LATE_MODEL);
    await writeFile(join(dir, name, 'config.pbtxt'), `name: "${name}"\nbackend: "python"\nmax_batch_size: 4
input [ { name: "VALUE" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "DELAY_MS" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
sequence_batching {
  oldest { max_candidate_sequences: 4 preferred_batch_size: [ 2 ] max_queue_delay_microseconds: 5000000 preserve_ordering: ${preserve} }
}
instance_group [ { count: 1 kind: KIND_CPU } ]
`);
  }
  const s = await startTestServer({ modelRepositories: [dir] });
  const run = async (model: string): Promise<{ order: number[]; batches: Record<number, number> }> => {
    const order: number[] = [];
    const step = (id: number, delayMs: number) => s.server.infer({
      model, sequenceId: id, sequenceStart: true, sequenceEnd: true,
      inputs: [{ name: 'VALUE', datatype: 'INT32', shape: [1, 1], data: new Uint8Array(new Int32Array([id]).buffer) },
        { name: 'DELAY_MS', datatype: 'INT32', shape: [1, 1], data: new Uint8Array(new Int32Array([delayMs]).buffer) }],
    }).then((r) => void order.push(values(r, 'OUT')[0]!));
    // The first request is answered 1.5 s after the second, which the model answers at once.
    await Promise.all([step(1, 1500), step(2, 0)]);
    return { order, batches: batchSizes(await stats(s, model)) };
  };
  try {
    // Without preserve_ordering the model's order shows; with it, the request order.
    assert.deepEqual(await run('late_unordered'), { order: [2, 1], batches: { 2: 1 } });
    assert.deepEqual(await run('late_ordered'), { order: [1, 2], batches: { 2: 1 } });
  } finally {
    await s.close();
    await rm(dir, { recursive: true, force: true });
  }
});
