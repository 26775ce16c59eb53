import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { InferenceServer } from '../../src/server/inference-server.js';
import { createLogger } from '../../src/observability/logger.js';
import type { SequenceStateStore, StoredSequence } from '../../src/scheduler/sequence-store.js';
import { EXAMPLES } from '../helpers/paths.js';

// Two servers in one process stand for two replicas sharing one sequence store (an in-memory one here, with
// the same compare-and-set contract as the Redis store), so that the races a load balancer makes possible can
// be staged step by step: a commit by the other replica between a step's load and its commit.

class MemoryStore implements SequenceStateStore {
  readonly records = new Map<string, StoredSequence>();
  /** Runs once before the next commit, then is cleared: the other replica's move. */
  beforeCommit: (() => Promise<void>) | undefined;
  failLoads = false;

  async load(key: string): Promise<StoredSequence | undefined> {
    if (this.failLoads) throw new Error('connection refused');
    return this.records.get(key);
  }

  async commit(key: string, expected: number, next: StoredSequence): Promise<boolean> {
    const hook = this.beforeCommit;
    this.beforeCommit = undefined;
    if (hook) await hook();
    if ((this.records.get(key)?.step ?? 0) !== expected) return false;
    this.records.set(key, next);
    return true;
  }

  async close(): Promise<void> {}
}

const quiet = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
const store = new MemoryStore();
let a: InferenceServer;
let b: InferenceServer;
let alone: InferenceServer;
before(async () => {
  const options = { modelRepositories: [EXAMPLES], modelControlMode: 'explicit' as const, loadModels: ['sequence_accumulator'] };
  [a, b, alone] = await Promise.all([
    InferenceServer.create(options, { logger: quiet, sequenceStore: store }),
    InferenceServer.create(options, { logger: quiet, sequenceStore: store }),
    InferenceServer.create(options, { logger: quiet }),
  ]);
});
after(async () => {
  await Promise.all([a.close(5), b.close(5), alone.close(5)]);
});

interface Flags { start?: boolean; end?: boolean; id?: string }

async function step(server: InferenceServer, seq: number, value: number, f: Flags = {}): Promise<number> {
  const r = await server.infer({
    model: 'sequence_accumulator', ...(f.id ? { id: f.id } : {}), sequenceId: seq, sequenceStart: f.start ?? false, sequenceEnd: f.end ?? false,
    inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1], data: new Uint8Array(new Int32Array([value]).buffer) }],
  });
  const out = r.outputs[0]!.data as Uint8Array;
  return new DataView(out.buffer, out.byteOffset, 4).getInt32(0, true);
}

const code = (p: Promise<unknown>): Promise<string> => p.then(() => 'OK', (e: { code?: string }) => e.code ?? 'none');

test('two servers sharing the store continue each other\'s sequence; a server without it refuses the middle steps', async () => {
  assert.equal(await step(a, 1, 5, { start: true, id: '1a' }), 5);
  assert.equal(await step(b, 1, 6, { id: '1b' }), 11);
  assert.equal(await step(a, 1, 7, { id: '1c' }), 18);
  assert.equal(await step(b, 1, 1, { end: true, id: '1d' }), 19);
  assert.equal(await step(alone, 2, 5, { start: true }), 5);
  await assert.rejects(step(alone, 1, 6), /must specify the START flag/);
});

test('a step whose sequence another replica advanced while it ran is not applied: UNAVAILABLE, then a retry applies it once', async () => {
  assert.equal(await step(a, 3, 10, { start: true, id: '3a' }), 10);
  store.beforeCommit = async () => void (await step(b, 3, 100, { id: '3b' }));
  assert.equal(await code(step(a, 3, 1, { id: '3c' })), 'UNAVAILABLE');
  assert.equal(store.records.get('nereid:seq:sequence_accumulator:1:n:3')?.step, 2, 'only the other replica\'s step was stored');
  assert.equal(await step(a, 3, 1, { id: '3c' }), 111);
  assert.equal(await step(b, 3, 0, { id: '3d' }), 111);
});

test('the same step racing on two replicas: one applies it, the other answers the same reply', async () => {
  assert.equal(await step(a, 4, 10, { start: true, id: '4a' }), 10);
  let other: number | undefined;
  store.beforeCommit = async () => void (other = await step(b, 4, 5, { id: '4b' }));
  assert.equal(await step(a, 4, 5, { id: '4b' }), 15);
  assert.equal(other, 15);
  assert.equal(await step(b, 4, 1, { id: '4c' }), 16, 'applied once');
});

test('a retry is recognised by its request id and inputs: the same id with other inputs is a new step', async () => {
  assert.equal(await step(a, 5, 1, { start: true, id: 'same' }), 1);
  assert.equal(await step(b, 5, 1, { start: true, id: 'same' }), 1, 'a retried START is not a restart');
  assert.equal(await step(b, 5, 2, { id: 'same' }), 3);
  assert.equal(await step(a, 5, 2, { id: 'same' }), 3);
  // Without a request id a step cannot be told from its retry: it is applied again.
  assert.equal(await step(a, 5, 2), 5);
  assert.equal(await step(b, 5, 2), 7);
});

test('a store that does not answer fails the step with UNAVAILABLE and applies nothing', async () => {
  assert.equal(await step(a, 6, 4, { start: true, id: '6a' }), 4);
  store.failLoads = true;
  try {
    assert.equal(await code(step(b, 6, 4, { id: '6b' })), 'UNAVAILABLE');
  } finally {
    store.failLoads = false;
  }
  assert.equal(await step(b, 6, 4, { id: '6b' }), 8);
});
