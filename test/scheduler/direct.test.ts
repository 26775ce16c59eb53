import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DirectScheduler } from '../../src/scheduler/direct.js';
import type { BackendInstance, BackendRequest, ExecutionTimes } from '../../src/backends/backend.js';
import type { Job } from '../../src/scheduler/scheduler.js';
import { until } from '../helpers/until.js';

const WAIT_NS = 10e9;

/** An instance whose executions end when the test says so; it records which job it got, in order. */
class HeldInstance implements BackendInstance {
  readonly got: string[] = [];
  readonly calledNs = new Map<string, bigint>();
  private readonly pending: (() => void)[] = [];

  constructor(readonly name: string, readonly pipelineDepth: number | undefined, private readonly log: string[]) {}

  execute(requests: readonly BackendRequest[]): Promise<ExecutionTimes> {
    for (const r of requests) {
      this.got.push(r.id!);
      this.calledNs.set(r.id!, process.hrtime.bigint());
      this.log.push(`${this.name}:${r.id}`);
    }
    return new Promise((resolve) => this.pending.push(() => resolve({ inputNs: 0, inferNs: 0, outputNs: 0, waitNs: WAIT_NS })));
  }

  /** Ends the oldest execution it holds. */
  end(): void {
    this.pending.shift()!();
  }

  get held(): number {
    return this.pending.length;
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

function job(id: string, starts: Map<string, bigint>): Job {
  return {
    id, rows: 1, enqueuedNs: process.hrtime.bigint(), signal: undefined, priority: undefined, timeoutUs: undefined,
    sequenceId: undefined, sequenceStart: false, sequenceEnd: false, state: 'queued', inputs: [], outputs: [],
    parameters: undefined, sender: { send: () => undefined, fail: () => undefined } as unknown as Job['sender'],
    finish: (execStartNs) => void starts.set(id, execStartNs),
    reject: () => assert.fail(`job ${id} was rejected`),
  };
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('pipelineDepth: an instance takes that many requests at once, a second one only when no instance is idle', async () => {
  const log: string[] = [];
  const a = new HeldInstance('a', 2, log);
  const b = new HeldInstance('b', 2, log);
  const starts = new Map<string, bigint>();
  const s = new DirectScheduler([a, b], () => undefined);
  for (const id of ['1', '2', '3', '4', '5']) s.enqueue(job(id, starts));
  await turn();
  assert.deepEqual(log, ['a:1', 'b:2', 'a:3', 'b:4'], 'first entries of every instance first, then the second ones');
  assert.equal(s.waiting(), 1);
  a.end();
  await turn();
  assert.deepEqual(a.got, ['1', '3', '5'], 'the next request goes to the instance that made room');
  assert.equal(a.held, 2);
  // The time a request waited inside the instance counts as queue time: its execution start moves by waitNs.
  const moved = starts.get('1')! - a.calledNs.get('1')!;
  assert.ok(moved > BigInt(WAIT_NS) - 1_000_000_000n && moved <= BigInt(WAIT_NS), `execution start moved by ${moved} ns`);
  a.end();
  await turn();
  for (const i of [a, b, b]) i.end();
  await turn();
  assert.equal(s.inflight(), 0);
});

test('without pipelineDepth an instance runs one request at a time', async () => {
  const log: string[] = [];
  const a = new HeldInstance('a', undefined, log);
  const s = new DirectScheduler([a], () => undefined);
  const starts = new Map<string, bigint>();
  for (const id of ['1', '2']) s.enqueue(job(id, starts));
  await turn();
  assert.deepEqual(log, ['a:1']);
  a.end();
  await turn();
  assert.deepEqual(log, ['a:1', 'a:2']);
  a.end();
  await turn();
  assert.equal(s.inflight(), 0);
});

test('tenants take turns in a contended queue: one tenant\'s flood delays another\'s request by one of its own; each keeps its order', async () => {
  const log: string[] = [];
  const a = new HeldInstance('i', undefined, log);
  const s = new DirectScheduler([a], () => undefined);
  const starts = new Map<string, bigint>();
  const of = (tenant: string | undefined) => (id: string): Job => ({ ...job(id, starts), tenant });
  for (const id of ['a1', 'a2', 'a3', 'a4', 'a5']) s.enqueue(of('a')(id));
  for (const id of ['b1', 'b2']) s.enqueue(of('b')(id));
  s.enqueue(of('c')('c1'));
  for (let i = 0; i < 8; i++) {
    await turn();
    a.end();
  }
  await turn();
  assert.deepEqual(a.got, ['a1', 'a2', 'b1', 'c1', 'a3', 'b2', 'a4', 'a5']);
  assert.equal(s.inflight(), 0);
  // Without tenants (no API keys), arrival order.
  const plain = new HeldInstance('p', undefined, []);
  const t = new DirectScheduler([plain], () => undefined);
  for (const id of ['1', '2', '3']) t.enqueue(of(undefined)(id));
  for (let i = 0; i < 3; i++) {
    await turn();
    plain.end();
  }
  assert.deepEqual(plain.got, ['1', '2', '3']);
});

/** A job with a timeout that records how it ended. */
function timedJob(id: string, timeoutUs: number | undefined, ended: string[]): Job {
  return {
    ...job(id, new Map()), timeoutUs,
    finish: () => void ended.push(`${id}:ran`),
    reject: (e, reason) => void ended.push(`${id}:${e.code}:${reason}:${e.message}`),
  };
}

test('a request with a timeout waits for a free instance, never in a busy one, and is answered when its timeout passes', async () => {
  const log: string[] = [];
  const a = new HeldInstance('a', 2, log);
  const ended: string[] = [];
  const s = new DirectScheduler([a], () => undefined);
  s.enqueue(timedJob('hung', undefined, ended));
  // The instance is busy: the timed request waits here, and the untimed one after it keeps its place. Its
  // timeout (0.5 s) outlasts the turn below on a busy machine, so the count of waiting requests is still 2.
  s.enqueue(timedJob('timed', 500_000, ended));
  s.enqueue(timedJob('untimed', undefined, ended));
  await turn();
  assert.deepEqual(log, ['a:hung'], 'nothing was handed to the busy instance');
  assert.equal(s.waiting(), 2);
  await until(() => ended.length > 0, 'the timed request to be answered');
  assert.deepEqual(ended, ['timed:UNAVAILABLE:REJECTED:[request id: timed] Request timeout expired']);
  assert.equal(s.waiting(), 1);
  // Once the instance is free the untimed request runs; the expired one is not run.
  a.end();
  await turn();
  assert.deepEqual(log, ['a:hung', 'a:untimed']);
  a.end();
  await turn();
  assert.deepEqual(ended, ['timed:UNAVAILABLE:REJECTED:[request id: timed] Request timeout expired', 'hung:ran', 'untimed:ran']);
  await s.drain();
});

test('a request whose timeout does not pass before an instance is free runs as any other', async () => {
  const log: string[] = [];
  const a = new HeldInstance('a', undefined, log);
  const ended: string[] = [];
  const s = new DirectScheduler([a], () => undefined);
  s.enqueue(timedJob('first', undefined, ended));
  s.enqueue(timedJob('timed', 10_000_000, ended));
  a.end();
  await turn();
  a.end();
  await turn();
  assert.deepEqual(ended, ['first:ran', 'timed:ran']);
  await s.drain();
});

test("a request after drain() is refused in Triton's words, its id in front (core dynamic_batch_scheduler.cc Enqueue)", async () => {
  const s = new DirectScheduler([new HeldInstance('a', 1, [])], () => undefined);
  await s.drain();
  let refused: Error | undefined;
  s.enqueue({ ...job('late', new Map()), reject: (e: Error) => void (refused = e) });
  assert.equal(refused?.message, '[request id: late] Server is stopping, scheduler for model has stopped accepting new inference requests');
});

/** A synchronous instance (an inline ONNX Runtime session): executeNow answers before it returns. */
class SyncInstance implements BackendInstance {
  readonly synchronous = true;
  readonly ran: string[] = [];

  executeNow(requests: readonly BackendRequest[]): ExecutionTimes {
    for (const r of requests) this.ran.push(r.id!);
    return { inputNs: 0, inferNs: 0, outputNs: 0 };
  }

  execute(requests: readonly BackendRequest[]): Promise<ExecutionTimes> {
    return Promise.resolve(this.executeNow(requests));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

test('synchronous instances: requests wait for the end of the turn, run as they arrive after many single-request turns, and wait again once a turn brings two', async () => {
  const a = new SyncInstance();
  const s = new DirectScheduler([a], () => undefined);
  const starts = new Map<string, bigint>();
  // One request a turn, as from one client at a time: each waits for the end of its turn at first.
  let n = 0;
  s.enqueue(job(String(n++), starts));
  assert.equal(a.ran.length, 0, 'the first request waits for the end of the turn');
  await turn();
  assert.equal(a.ran.length, 1);
  for (let i = 0; i < 80; i++) {
    s.enqueue(job(String(n++), starts));
    await turn();
  }
  assert.equal(a.ran.length, n);
  // Turn after turn brought one request: the next one runs as it arrives.
  s.enqueue(job(String(n++), starts));
  assert.equal(a.ran.length, n, 'a request runs as it arrives once waiting batches nothing');
  await turn();
  // Now two requests in every turn: a watched turn sees the second, and requests wait for the turn's end again.
  for (let i = 0; i < 80; i++) {
    s.enqueue(job(String(n++), starts));
    s.enqueue(job(String(n++), starts));
    await turn();
  }
  const before = a.ran.length;
  s.enqueue(job(String(n++), starts));
  assert.equal(a.ran.length, before, 'waiting again: the request runs at the end of the turn');
  await turn();
  assert.equal(a.ran.length, n);
  await s.drain();
});
