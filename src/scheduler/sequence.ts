import { NereidError, invalidArg, isNereidError } from '../errors.js';
import type { ModelConfig, SequenceState } from '../config/types.js';
import type { BackendInstance, BackendRequest } from '../backends/backend.js';
import { NO_RESPONSE, type Parameters, type ResponseSender } from '../inference/index.js';
import type { Tensor } from '../tensor/tensor.js';
import { stoppedScheduler, type ExecutionListener, type Job, type Scheduler } from './scheduler.js';
import { SharedSteps, type HeldStep, type SharedSequences } from './sequence-shared.js';
import { controlPlans, controlTensor, initialState, type ControlPlan } from './sequence-tensors.js';
import { batchShapeRule, sameBatchShapes, type BatchShapeRule } from './equal-shapes.js';
import { AnswerOrder } from './answer-order.js';
import type { Logger } from '../observability/logger.js';
import { announceHold, schedulerHold, type SchedulerHold } from './test-hooks.js';

/** One live sequence: its correlation id, the instance it is pinned to, its queued requests and its state. */
interface Sequence {
  readonly id: number | bigint | string;
  readonly key: string;
  lane: Lane | undefined;
  readonly pending: Job[];
  running: boolean;
  /** Implicit state: the last state outputs, by state output name. */
  state: Map<string, Tensor> | undefined;
  lastUsedMs: number;
  /** Arrival of its oldest waiting request (oldest strategy). */
  readonly createdNs: bigint;
}

/** An instance and the sequences it holds (direct strategy pins each sequence to one instance). */
interface Lane {
  readonly instance: BackendInstance;
  readonly sequences: Set<Sequence>;
  busy: boolean;
  /** A synchronous instance's batch waits for the end of the loop turn (see direct.ts); one wait at a time. */
  deferred: boolean;
  /** The timer that sends a short batch once its oldest request has waited the queue delay. */
  delayTimer: NodeJS.Timeout | undefined;
  /** Oldest strategy with preserve_ordering: the instance's answers go out in dispatch order. */
  readonly order: AnswerOrder | undefined;
}


/**
 * Triton's sequence batcher. Requests carry a correlation id and START / END flags; the requests of one
 * sequence run in order, one at a time, with control inputs (START, END, READY, CORRID) filled for the model
 * and implicit state (`state { … }`) carried from each request's state outputs to the next request's inputs.
 * Direct strategy: a sequence is pinned to one instance, which holds up to max(1, max_batch_size) sequences
 * and runs one request of each of its ready sequences as a batch. Oldest strategy: each instance holds up to
 * max_candidate_sequences sequences (max(1, max_batch_size) without it) and batches the oldest ready ones.
 * New sequences beyond the capacity wait in a backlog until one ends or idles out
 * (max_sequence_idle_microseconds).
 *
 * A batch may wait for more ready sequences (see waitForMore), holds only requests whose shapes may be batched
 * together (see sameShapes), and a sequence whose next request was cancelled while queued ends there with all
 * its queued requests (see cancelSequence; the oldest strategy answers a request it had taken up alone, see
 * cancelTaken), all as in Triton's sequence_batch_scheduler.
 *
 * Unlike Triton's direct strategy, a batch holds only the sequences that have a request waiting (no rows with
 * READY false); models see the same values either way.
 *
 * With a sequence store (--sequence-state-store) a sequence lives in the store between its steps, so any
 * replica sharing it may run the next step: each step reads the sequence, runs, and is committed by
 * compare-and-set on the step number before its reply goes out (see sequence-shared.ts). Only what
 * the batcher sees moves with the sequence: implicit state, the step count, END, the last reply. A model that
 * keeps per-sequence memory inside its instance (the dyna_sequence models) gives correct outputs only while
 * its sequences stay on one replica.
 */
export class SequenceBatcher implements Scheduler {
  private readonly lanes: Lane[];
  private readonly sequences = new Map<string, Sequence>();
  private readonly backlog: Sequence[] = [];
  private readonly perLane: number;
  private readonly maxRows: number;
  private readonly oldest: boolean;
  /** How long a short batch may wait for more sequences (0: never waits), and the size that need not wait. */
  private readonly delayNs: bigint;
  private readonly fullRows: number;
  /** Inputs whose shapes keep requests out of one batch (undefined: any requests may share one). */
  private readonly shapeRule: BatchShapeRule | undefined;
  private readonly controls: readonly ControlPlan[];
  private readonly states: readonly SequenceState[];
  private readonly stateOutputs: ReadonlySet<string>;
  private readonly initial: ReadonlyMap<string, Tensor>;
  private readonly idleMs: number;
  private readonly reaper: NodeJS.Timeout;
  private queued = 0;
  private running = 0;
  private stopped = false;
  private drained: (() => void) | undefined;
  /** --sequence-state-store; decoupled models keep their sequences in the process: a stream's replies cannot be replayed as one. */
  private readonly shared: SharedSteps | undefined;
  /** Test hooks TRITONSERVER_DELAY_SCHEDULER / _BACKLOG_ (see test-hooks.ts): nothing runs while set. */
  private hold: SchedulerHold | undefined = schedulerHold();

  constructor(
    private readonly name: string,
    private readonly config: ModelConfig,
    /** The initial_state data files the states name, read at load (see models/loader.ts), by file name. */
    initialData: ReadonlyMap<string, Uint8Array>,
    instances: readonly BackendInstance[],
    private readonly onExecution: ExecutionListener,
    shared?: SharedSequences,
    private readonly logger?: Logger,
  ) {
    const sharedStore = config.model_transaction_policy?.decoupled ? undefined : shared;
    const sb = config.sequence_batching!;
    // preserve_ordering orders each instance's answers: Triton's oldest strategy gives every instance a dynamic
    // batcher of its own, made with that flag.
    const ordered = sb.oldest?.preserve_ordering === true && !config.model_transaction_policy?.decoupled && !sharedStore;
    this.lanes = instances.map((instance) => ({
      instance, sequences: new Set(), busy: false, deferred: false, delayTimer: undefined, order: ordered ? new AnswerOrder(this.answeredInOrder) : undefined,
    }));
    this.maxRows = Math.max(1, config.max_batch_size);
    this.oldest = sb.oldest !== undefined;
    const candidates = sb.oldest?.max_candidate_sequences ?? 0;
    // Places per instance, as Triton gives each instance's batcher max_candidate_sequences slots.
    this.perLane = this.oldest && candidates > 0 ? candidates : this.maxRows;
    ({ delayNs: this.delayNs, fullRows: this.fullRows } = batchWait(sb, this.maxRows));
    this.shapeRule = this.maxRows > 1 ? batchShapeRule(config) : undefined;
    this.controls = controlPlans(sb.control_input);
    this.states = sb.state;
    this.stateOutputs = new Set(sb.state.map((s) => s.output_name));
    this.initial = new Map(sb.state.map((s) => [s.output_name, initialState(s, config.max_batch_size > 0, initialData)]));
    this.idleMs = sb.max_sequence_idle_microseconds / 1000;
    this.reaper = setInterval(() => this.reap(), Math.max(10, Math.min(1000, this.idleMs / 2))).unref();
    this.shared = sharedStore ? new SharedSteps(name, sharedStore, this.idleMs, this.stateOutputs) : undefined;
    // Triton names a direct batcher's threads by index, an oldest one's (dynamic batchers) by model.
    announceHold(logger, this.lanes.map((_, i) => (this.oldest ? `batcher thread for ${name}` : `scheduler thread ${i}`)), true);
  }

  enqueue(job: Job): void {
    const id = job.sequenceId;
    if (this.stopped) return job.reject(stoppedScheduler(job, false));
    // Triton's order: the batch size first, then the correlation id.
    if (this.config.max_batch_size > 0 && job.rows !== 1) {
      return job.reject(invalidArg(`inference request to model '${this.name}' must specify batch-size 1 due to requirements of sequence batcher`));
    }
    if (id === undefined || id === 0 || id === 0n || id === '') {
      return job.reject(invalidArg(`inference request to model '${this.name}' must specify a non-zero or non-empty correlation ID`));
    }
    const key = typeof id === 'string' ? `s:${id}` : `n:${String(id)}`;
    let seq = this.sequences.get(key);
    if (job.sequenceStart) {
      // START on a live id: the earlier sequence is over; the new one starts from a fresh state when its
      // first request runs (see backendRequest).
      if (!seq) {
        seq = { id, key, lane: undefined, pending: [], running: false, state: undefined, lastUsedMs: Date.now(), createdNs: process.hrtime.bigint() };
        this.sequences.set(key, seq);
        this.place(seq);
      }
    } else if (!seq && this.shared) {
      // Another replica may hold it: the store decides when the step runs (see loadShared).
      seq = { id, key, lane: undefined, pending: [], running: false, state: undefined, lastUsedMs: Date.now(), createdNs: process.hrtime.bigint() };
      this.sequences.set(key, seq);
      this.place(seq);
    } else if (!seq) {
      return job.reject(invalidArg(`inference request for sequence ${String(id)} to model '${this.name}' must specify the START flag on the first request of the sequence`));
    }
    seq.pending.push(job);
    seq.lastUsedMs = Date.now();
    this.queued++;
    if (seq.lane) this.pump(seq.lane);
    // A held batcher also counts its backlog (see heldBack()).
    else if (this.oldest || this.hold) this.pumpAll();
  }

  waiting(): number {
    return this.queued;
  }

  liveSequences(): number {
    return this.sequences.size;
  }

  inflight(): number {
    return this.queued + this.running;
  }

  drain(): Promise<void> {
    this.stopped = true;
    if (this.hold) {
      this.hold = undefined;
      this.pumpAll();
    }
    // Batches waiting out a queue delay go now: nothing more is coming.
    for (const lane of this.lanes) {
      if (!lane.delayTimer) continue;
      clearTimeout(lane.delayTimer);
      lane.delayTimer = undefined;
      this.pump(lane);
    }
    if (this.inflight() === 0) {
      clearInterval(this.reaper);
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.drained = resolve;
    });
  }

  rejectQueued(error: NereidError): void {
    for (const seq of this.sequences.values()) {
      for (const job of seq.pending.splice(0)) {
        this.queued--;
        job.state = 'done';
        job.reject(error);
      }
    }
    this.checkDrained();
  }

  /** Gives a new sequence an instance with room (the least loaded), or puts it in the backlog. */
  private place(seq: Sequence): void {
    let best: Lane | undefined;
    for (const lane of this.lanes) {
      if (lane.sequences.size < this.perLane && (!best || lane.sequences.size < best.sequences.size)) best = lane;
    }
    if (!best) {
      this.backlog.push(seq);
      return;
    }
    seq.lane = best;
    best.sequences.add(seq);
  }

  private release(seq: Sequence): void {
    if (this.sequences.get(seq.key) !== seq) return;
    this.sequences.delete(seq.key);
    const lane = seq.lane;
    if (lane) lane.sequences.delete(seq);
    else {
      const i = this.backlog.indexOf(seq);
      if (i >= 0) this.backlog.splice(i, 1);
    }
    seq.lane = undefined;
    // A freed place goes to the oldest sequence in the backlog; one with a cancelled request ends instead, as
    // in Triton, and the place goes on to the next.
    const next = this.backlog.shift();
    if (next) {
      this.place(next);
      if (next.pending.some((j) => j.signal?.aborted)) this.cancelSequence(next);
      else if (next.lane) this.pump(next.lane);
    }
  }

  private pumpAll(): void {
    for (const lane of this.lanes) this.pump(lane);
  }

  /** Runs one request of each ready sequence of the lane, as one batch, if the lane's instance is free. */
  private pump(lane: Lane): void {
    if (lane.busy || lane.deferred) return;
    if (this.hold && this.heldBack()) return;
    // Requests read in this turn of the loop join one batch; an inline instance would otherwise run each the
    // moment it arrives and never batch.
    if (lane.instance.synchronous) {
      lane.deferred = true;
      setImmediate(() => {
        lane.deferred = false;
        this.startBatch(lane);
      });
      return;
    }
    this.startBatch(lane);
  }

  /**
   * Test hook: true while requests still collect (see stillHeld). Once enough wait the hold ends for good and
   * every lane is pumped (this one included), so the caller has nothing left to do.
   */
  private heldBack(): boolean {
    if (stillHeld(this.hold!, this.sequences.values(), this.oldest)) return true;
    this.hold = undefined;
    this.pumpAll();
    return true;
  }

  private startBatch(lane: Lane): void {
    if (lane.busy) return;
    const ready: Sequence[] = [];
    let cancelled: Sequence[] | undefined;
    for (const s of lane.sequences) {
      if (s.running || s.pending.length === 0) continue;
      if (s.pending[0]!.signal?.aborted) (cancelled ??= []).push(s);
      else ready.push(s);
    }
    if (cancelled) {
      for (const s of cancelled) {
        if (!this.oldest) this.cancelSequence(s);
        else if (this.cancelTaken(s)) ready.push(s);
      }
      // A freed place may have gone to a backlogged sequence, whose pump may have started this lane.
      if (lane.busy) return;
    }
    if (this.oldest) ready.sort((a, b) => (a.pending[0]!.enqueuedNs < b.pending[0]!.enqueuedNs ? -1 : 1));
    if (ready.length === 0 || this.waitForMore(lane, ready)) return;
    const batch = this.shapeRule ? this.sameShapes(ready) : ready.slice(0, this.maxRows);
    if (lane.delayTimer) clearTimeout(lane.delayTimer);
    lane.delayTimer = undefined;
    lane.busy = true;
    void this.execute(lane, batch);
  }

  /**
   * The sequences whose next requests may share a batch with the first one's (see equal-shapes.ts). Direct
   * strategy: any of them, as Triton leaves a slot whose request differs out of the batch; oldest strategy: up to
   * the first that differs, as Triton's dynamic batcher over the sequences ends a batch there. The others wait
   * for the next batch.
   */
  private sameShapes(ready: readonly Sequence[]): Sequence[] {
    const first = ready[0]!.pending[0]!.inputs;
    const batch = [ready[0]!];
    for (let i = 1; i < ready.length && batch.length < this.maxRows; i++) {
      if (sameBatchShapes(this.shapeRule!, first, ready[i]!.pending[0]!.inputs)) batch.push(ready[i]!);
      else if (this.oldest) break;
    }
    return batch;
  }

  /**
   * A batch with fewer sequences ready than it needs waits for more until its oldest request has waited the
   * queue delay (a timer, not the next arrival, ends the wait); never while stopping, when queued requests run
   * at once. Oldest strategy: below the largest preferred size (or max_batch_size without preferred sizes), as
   * Triton's dynamic batcher over the candidate sequences does. Direct strategy: below minimum_slot_utilization
   * of the instance's slots, as Triton's DirectSequenceBatch does.
   */
  private waitForMore(lane: Lane, ready: readonly Sequence[]): boolean {
    if (this.delayNs === 0n || ready.length >= this.fullRows || this.stopped) return false;
    let oldestNs = ready[0]!.pending[0]!.enqueuedNs;
    for (const s of ready) if (s.pending[0]!.enqueuedNs < oldestNs) oldestNs = s.pending[0]!.enqueuedNs;
    const waited = process.hrtime.bigint() - oldestNs;
    if (waited >= this.delayNs) return false;
    if (!lane.delayTimer) {
      lane.delayTimer = setTimeout(() => {
        lane.delayTimer = undefined;
        this.startBatch(lane);
      }, Math.ceil(Number(this.delayNs - waited) / 1e6));
    }
    return true;
  }

  /**
   * Oldest strategy: the sequence's next request, which the batcher had taken up, was cancelled while it waited
   * for a batch. As Triton's dynamic batcher over the sequences does, it alone is answered CANCELLED; the
   * request behind it is taken up now and ends the sequence if it was cancelled too. Returns whether the
   * sequence has a request ready.
   */
  private cancelTaken(seq: Sequence): boolean {
    const job = seq.pending.shift()!;
    this.queued--;
    job.state = 'done';
    job.reject(new NereidError('CANCELLED', 'request cancelled'), 'CANCELED');
    const next = seq.pending[0];
    if (next?.signal?.aborted) this.cancelSequence(seq);
    else if (!next && job.sequenceEnd) this.release(seq);
    this.checkDrained();
    return next !== undefined && !next.signal?.aborted;
  }

  /**
   * The sequence's next request was cancelled while it waited in the sequence (direct strategy: in the
   * sequence's slot): as Triton does, the sequence ends there. Its queued requests are answered CANCELLED and
   * its place is freed; a later request of it needs START again.
   */
  private cancelSequence(seq: Sequence): void {
    if (this.logger?.isVerbose(1)) this.logger.verbose(1, `Releasing canceled sequence CORRID ${String(seq.id)}`);
    const error = new NereidError('CANCELLED', 'request cancelled');
    for (const job of seq.pending.splice(0)) {
      this.queued--;
      job.state = 'done';
      job.reject(error, 'CANCELED');
    }
    this.release(seq);
    this.checkDrained();
  }

  private async execute(lane: Lane, batch: Sequence[]): Promise<void> {
    const jobs = batch.map((seq) => {
      seq.running = true;
      const job = seq.pending.shift()!;
      job.state = 'running';
      this.queued--;
      this.running++;
      return { seq, job };
    });
    const shared = this.shared;
    const run: readonly { seq: Sequence; job: Job; held?: HeldStep }[] = shared ? await shared.load(jobs) : jobs;
    const start = process.hrtime.bigint();
    let times = { inputNs: 0, inferNs: 0, outputNs: 0 };
    const order = lane.order;
    const slots = order ? run.map((r) => order.reserve(r.job)) : undefined;
    if (run.length > 0) {
      const requests = run.map((r, i) => this.backendRequest(r.seq, r.job, r.held, slots?.[i]));
      try {
        times = await lane.instance.execute(requests);
        this.onExecution(run.length, times, lane.instance);
      } catch (e) {
        const err = isNereidError(e) ? e : new NereidError('INTERNAL', (e as Error).message);
        run.forEach((r, i) => (slots?.[i] ?? r.job.sender).fail(err));
      }
      if (shared) await Promise.all(run.map((r) => shared.commit(r.held!)));
    }
    for (let i = 0; i < jobs.length; i++) {
      const { seq, job } = jobs[i]!;
      // Steps the store answered (a replayed reply, a refusal) were finished when answered. An ordered answer
      // leaves the running count when it goes out (see answeredInOrder).
      if (slots) slots[i]!.end(start, times);
      else {
        if (run === jobs || run.some((r) => r.job === job)) job.finish(start, times);
        this.running--;
      }
      seq.running = false;
      seq.lastUsedMs = Date.now();
      // Oldest strategy: the sequence's next request is taken up now; cancelled while it waited in the
      // sequence, it ends the sequence (see cancelTaken).
      if (this.oldest && seq.pending.length > 0 && seq.pending[0]!.signal?.aborted) this.cancelSequence(seq);
      // With the store a sequence lives there between its steps: its place here is freed after every step, so
      // that sequences spread over replicas do not hold places on each one until they idle out.
      if ((job.sequenceEnd || this.shared) && seq.pending.length === 0) this.release(seq);
    }
    lane.busy = false;
    if (this.oldest) this.pumpAll();
    else this.pump(lane);
    this.checkDrained();
  }

  /** The job's inputs plus the control and state inputs; state outputs are asked for and kept, not returned. */
  private backendRequest(seq: Sequence, job: Job, held?: HeldStep, out: ResponseSender = job.sender): BackendRequest {
    const batched = this.config.max_batch_size > 0;
    if (job.sequenceStart) seq.state = undefined;
    const inputs: Tensor[] = [...job.inputs];
    for (const c of this.controls) inputs.push(controlTensor(c, job, seq.id, batched));
    for (const st of this.states) {
      const t = seq.state?.get(st.output_name) ?? this.initial.get(st.output_name)!;
      inputs.push({ ...t, name: st.input_name } as Tensor);
    }
    const outputs = this.states.length > 0 ? [...job.outputs, ...this.states.map((s) => s.output_name)] : job.outputs;
    const sender = held ? this.shared!.holdingSender(held) : this.states.length === 0 ? out : stateKeepingSender(seq, job, out, this.stateOutputs);
    return {
      inputs, outputs, parameters: job.parameters, sender, id: job.id, sequenceId: seq.id,
      sequenceStart: job.sequenceStart, sequenceEnd: job.sequenceEnd, timeoutUs: job.timeoutUs, signal: job.signal,
    };
  }

  /** Ends sequences idle for longer than max_sequence_idle_microseconds, freeing their places. */
  private reap(): void {
    const now = Date.now();
    for (const seq of [...this.sequences.values()]) {
      if (!seq.running && seq.pending.length === 0 && now - seq.lastUsedMs > this.idleMs) this.release(seq);
    }
  }

  /** preserve_ordering: `n` answers held in order went out. */
  private readonly answeredInOrder = (n: number): void => {
    this.running -= n;
    this.checkDrained();
  };

  private checkDrained(): void {
    if (this.drained && this.inflight() === 0) {
      clearInterval(this.reaper);
      this.drained();
      this.drained = undefined;
    }
  }
}

/** How long a short batch may wait for more sequences (0: never), and the size that need not wait. */
function batchWait(sb: NonNullable<ModelConfig['sequence_batching']>, maxRows: number): { delayNs: bigint; fullRows: number } {
  if (sb.oldest) {
    const preferred = sb.oldest.preferred_batch_size.filter((n) => n <= maxRows);
    return { delayNs: BigInt(sb.oldest.max_queue_delay_microseconds) * 1000n, fullRows: preferred.length > 0 ? Math.max(...preferred) : maxRows };
  }
  // Direct: Triton holds a batch only when both the delay and the utilization are set.
  const utilization = sb.direct?.minimum_slot_utilization ?? 0;
  const delayNs = utilization > 0 ? BigInt(sb.direct?.max_queue_delay_microseconds ?? 0) * 1000n : 0n;
  return { delayNs, fullRows: slotsForUtilization(utilization, maxRows) };
}

/**
 * Test hook: whether requests still collect. Direct counts the requests queued in places and in the backlog
 * (Triton's DelayScheduler); oldest counts what Triton's per-instance dynamic batchers would hold, one request
 * per placed sequence, and no backlog.
 */
function stillHeld(hold: SchedulerHold, sequences: Iterable<Sequence>, oldest: boolean): boolean {
  let placed = 0;
  let backlog = 0;
  for (const seq of sequences) {
    if (seq.lane) placed += oldest ? Math.min(1, seq.pending.length) : seq.pending.length;
    else backlog += seq.pending.length;
  }
  return placed < hold.queued || (!oldest && backlog < hold.backlog);
}

/** The sender of a stateful step: its state outputs become the sequence's state; the client gets what it asked for. */
function stateKeepingSender(seq: Sequence, job: Job, out: ResponseSender, stateOutputs: ReadonlySet<string>): ResponseSender {
  return {
    send: (outs: readonly Tensor[], final: boolean, params?: Parameters): void => {
      // A final flag with no response (decoupled models) passes through as it is.
      if (outs === NO_RESPONSE) return out.send(outs, final, params);
      const state = new Map<string, Tensor>();
      const visible: Tensor[] = [];
      for (const t of outs) {
        if (stateOutputs.has(t.name)) state.set(t.name, t);
        if (job.outputs.includes(t.name)) visible.push(t);
      }
      seq.state = state;
      out.send(visible, final, params);
    },
    fail: (e: NereidError): void => out.fail(e),
    // A Python model that is not decoupled may answer through its response sender after execute() returns.
    ...(out.answerLater ? { answerLater: (): void => out.answerLater!() } : {}),
  };
}

/**
 * Direct strategy: the fewest ready sequences that reach minimum_slot_utilization of `slots`, compared in single
 * precision as Triton compares the float ratio (so 0.3 of 10 slots is 3, not 4).
 */
function slotsForUtilization(utilization: number, slots: number): number {
  const min = Math.fround(utilization);
  for (let n = 1; n <= slots; n++) if (Math.fround(n / slots) >= min) return n;
  return slots + 1; // above 1.0: never full enough, every batch waits out the delay
}
