/**
 * --sequence-state-store: the steps of sequences that live in a store shared by replicas. Each step reads its
 * sequence from the store, runs, and is committed by compare-and-set on the step number before its reply goes
 * out, so a reply the client sees is one the store has kept.
 */
import { invalidArg, unavailable, type NereidError } from '../errors.js';
import type { BackendRequest } from '../backends/backend.js';
import type { Parameters } from '../inference/index.js';
import type { Tensor } from '../tensor/tensor.js';
import type { Job } from './scheduler.js';
import { stepDigest, type SequenceStateStore, type StoredSequence } from './sequence-store.js';

/** --sequence-state-store for one model version: the store and the prefix of its sequences' keys. */
export interface SharedSequences {
  readonly store: SequenceStateStore;
  readonly keyPrefix: string;
}

/** What a shared step reads and sets of its live sequence. */
export interface StepSequence {
  readonly id: number | bigint | string;
  readonly key: string;
  /** Implicit state: the last state outputs, by state output name. */
  state: Map<string, Tensor> | undefined;
}

/** A step's reply held until its state is committed: a reply the client sees is one the store has kept. */
export interface HeldStep {
  readonly seq: StepSequence;
  readonly job: Job;
  /** The stored step this one follows (0: the sequence has no record). */
  expected: number;
  digest: string;
  answer: { visible: Tensor[]; state: Tensor[]; params: Parameters | undefined } | undefined;
  late: Promise<void> | undefined;
  answered: (() => void) | undefined;
}

function storeFailure(model: string, e: Error): NereidError {
  return unavailable(`sequence state store did not answer for model '${model}'; the step was not applied: ${e.message}`);
}

/** A step answered without running: its stored reply (a retry), or a refusal. */
function answerEarly(job: Job, rec: StoredSequence | undefined, error?: NereidError): void {
  if (error) {
    job.state = 'done';
    return job.reject(error);
  }
  job.sender.send(rec!.reply, true);
  job.finish(process.hrtime.bigint(), { inputNs: 0, inferNs: 0, outputNs: 0 });
  job.state = 'done';
}

export class SharedSteps {
  private readonly store: SequenceStateStore;
  private readonly keyPrefix: string;
  /** How long a stored sequence lives past its last step. */
  private readonly ttlMs: number;

  constructor(private readonly name: string, shared: SharedSequences, idleMs: number, private readonly stateOutputs: ReadonlySet<string>) {
    this.store = shared.store;
    this.keyPrefix = shared.keyPrefix;
    this.ttlMs = Math.max(1000, idleMs);
  }

  /**
   * Reads each step's sequence from the store. A retry of the sequence's last step (same request id and inputs)
   * is answered with the stored reply and not run; a step of a sequence the store does not hold (never started,
   * ended, idle past max_sequence_idle_microseconds) is refused as without the store. Returns the steps to run,
   * each with the stored state it continues from.
   */
  async load<S extends StepSequence>(jobs: readonly { seq: S; job: Job }[]): Promise<{ seq: S; job: Job; held: HeldStep }[]> {
    const loaded = await Promise.all(jobs.map(({ seq }) => this.store.load(this.keyPrefix + seq.key, this.ttlMs).then((r) => r, (e: Error) => e)));
    const run: { seq: S; job: Job; held: HeldStep }[] = [];
    jobs.forEach(({ seq, job }, i) => {
      const rec = loaded[i];
      if (rec instanceof Error) return answerEarly(job, undefined, storeFailure(this.name, rec));
      const digest = job.id ? stepDigest(job) : '';
      if (rec && job.id && rec.lastId === job.id && rec.lastDigest === digest) return answerEarly(job, rec);
      if (!job.sequenceStart && (!rec || rec.ended)) {
        return answerEarly(job, undefined, invalidArg(`inference request for sequence ${String(seq.id)} to model '${this.name}' must specify the START flag on the first request of the sequence`));
      }
      seq.state = rec && !job.sequenceStart ? new Map(rec.state.map((t) => [t.name, t])) : undefined;
      const held: HeldStep = { seq, job, expected: rec?.step ?? 0, digest, answer: undefined, late: undefined, answered: undefined };
      run.push({ seq, job, held });
    });
    return run;
  }

  /** Keeps a step's reply and state until commit() has stored them; errors go to the client at once. */
  holdingSender(held: HeldStep): BackendRequest['sender'] {
    const job = held.job;
    return {
      send: (outs: readonly Tensor[], final: boolean, params?: Parameters): void => {
        if (!final) return;
        const state: Tensor[] = [];
        const visible: Tensor[] = [];
        for (const t of outs) {
          if (this.stateOutputs.has(t.name)) state.push(t);
          if (job.outputs.includes(t.name)) visible.push(t);
        }
        held.answer = { visible, state, params };
        held.answered?.();
      },
      fail: (e: NereidError): void => {
        job.sender.fail(e);
        held.answered?.();
      },
      ...(job.sender.answerLater ? {
        answerLater: (): void => {
          job.sender.answerLater!();
          held.late ??= new Promise<void>((resolve) => (held.answered = resolve));
        },
      } : {}),
    };
  }

  /**
   * Stores the step (compare-and-set on the step number), then gives the client its reply. When another
   * request advanced the sequence first, the reply is dropped: the client gets the stored reply if that
   * request was this very step (a retry that raced its original), else UNAVAILABLE and may send the step again.
   */
  async commit(held: HeldStep): Promise<void> {
    if (!held.answer && held.late) await held.late;
    const answer = held.answer;
    if (!answer) return;
    const { seq, job } = held;
    const key = this.keyPrefix + seq.key;
    const next: StoredSequence = {
      step: held.expected + 1, ended: job.sequenceEnd, state: answer.state, lastId: job.id, lastDigest: held.digest, reply: answer.visible,
    };
    try {
      if (await this.store.commit(key, held.expected, next, this.ttlMs)) return job.sender.send(answer.visible, true, answer.params);
      const now = await this.store.load(key, this.ttlMs);
      if (now && job.id && now.lastId === job.id && now.lastDigest === held.digest) return job.sender.send(now.reply, true);
      job.sender.fail(unavailable(`sequence ${String(seq.id)} of model '${this.name}' was advanced by another request while this one ran; this step was not applied: send it again`));
    } catch (e) {
      job.sender.fail(storeFailure(this.name, e as Error));
    }
  }
}
