import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NereidError } from '../../src/errors.js';
import { ForwardingScheduler } from '../../src/models/forwarding.js';
import type { Job } from '../../src/scheduler/scheduler.js';

/** A forwarding scheduler whose work the test hands in per job. */
class Forwarder extends ForwardingScheduler {
  constructor(private readonly work: (job: Job) => Promise<void>) {
    super();
  }

  enqueue(job: Job): void {
    if (this.refuseWhenStopped(job, 'unloading')) return;
    this.forward(job, () => this.work(job));
  }
}

interface Seen {
  finished: boolean;
  failed: NereidError | undefined;
  rejected: NereidError | undefined;
}

function job(seen: Seen): Job {
  return {
    id: 'j', rows: 1, enqueuedNs: process.hrtime.bigint(), signal: undefined, priority: undefined, timeoutUs: undefined,
    sequenceId: undefined, sequenceStart: false, sequenceEnd: false, state: 'queued', inputs: [], outputs: [],
    parameters: undefined,
    sender: { send: () => undefined, fail: (e: NereidError) => void (seen.failed = e) } as unknown as Job['sender'],
    finish: () => void (seen.finished = true),
    reject: (e) => void (seen.rejected = e),
  };
}

const fresh = (): Seen => ({ finished: false, failed: undefined, rejected: undefined });

test('forwarding: a job counts while its work runs; drain waits for it and refuses new jobs', async () => {
  let release!: () => void;
  const s = new Forwarder(() => new Promise<void>((resolve) => (release = resolve)));
  const seen = fresh();
  s.enqueue(job(seen));
  assert.equal(s.inflight(), 1);
  assert.equal(s.waiting(), 0);
  let drained = false;
  const draining = s.drain().then(() => (drained = true));
  const late = fresh();
  s.enqueue(job(late));
  assert.equal(late.rejected?.code, 'UNAVAILABLE', 'a job after drain began is refused');
  await new Promise((r) => setImmediate(r));
  assert.equal(drained, false);
  release();
  await draining;
  assert.deepEqual([seen.finished, seen.failed, s.inflight()], [true, undefined, 0]);
});

test('forwarding: work that fails, or throws before it has a promise, fails the job and still ends it', async () => {
  for (const work of [
    () => Promise.reject(new NereidError('INVALID_ARG', 'bad step')),
    (): Promise<void> => {
      throw new Error('thrown at once');
    },
  ]) {
    const s = new Forwarder(work);
    const seen = fresh();
    s.enqueue(job(seen));
    await s.drain();
    assert.equal(seen.finished, true);
    assert.ok(seen.failed, 'the job is answered with the failure');
    assert.equal(s.inflight(), 0);
  }
});
