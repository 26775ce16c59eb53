/**
 * Keeps a load on the server: closed-loop (N requests in flight, the next sent as one ends) or open-loop (requests
 * sent at a rate, constant or Poisson, whatever the answers). Every request is pre-encoded; each completion lands in
 * the current measurement window's histograms, and `rotate` starts the next window without pausing the load.
 */
import { performance } from 'node:perf_hooks';
import { newHistogram, recordUs, type LatencyHistogram } from './latency-histogram.js';
import type { Completion, Prepared, SequenceStep, Transport } from './transport.js';

export interface RequestRecord {
  readonly startMs: number;
  readonly responseMs: number[];
  readonly sequenceId: number | undefined;
}

export interface Window {
  readonly startMs: number;
  endMs: number;
  completed: number;
  errors: number;
  firstError: string | null;
  responses: number;
  readonly latency: LatencyHistogram;
  readonly first: LatencyHistogram;
  readonly inter: LatencyHistogram;
  readonly records: RequestRecord[] | undefined;
}

export interface LoadPlan {
  readonly mode: 'concurrency' | 'request_rate';
  readonly value: number;
  readonly distribution: 'constant' | 'poisson';
}

export interface SequencePlan {
  readonly length: number;
  readonly idStart: number;
  readonly idEnd: number;
}

function newWindow(startMs: number, keepRecords: boolean): Window {
  return {
    startMs,
    endMs: 0,
    completed: 0,
    errors: 0,
    firstError: null,
    responses: 0,
    latency: newHistogram(),
    first: newHistogram(),
    inter: newHistogram(),
    records: keepRecords ? [] : undefined,
  };
}

/** Where one stream of requests is: which data, which sequence. */
class Lane {
  stream = 0;
  pos = 0;
  seqId = 0;
  seqLeft = 0;
}

/** One request in flight; reused by its slot in closed-loop mode. */
class Flight implements Completion {
  startMs = 0;
  firstMs = 0;
  lastMs = 0;
  n = 0;
  seqId: number | undefined = undefined;
  times: number[] | undefined = undefined;
  constructor(private readonly gen: LoadGenerator, readonly lane: Lane) {}
  response(): void {
    const t = performance.now();
    if (this.n === 0) this.firstMs = t;
    else this.gen.interval(t - this.lastMs);
    this.lastMs = t;
    this.n++;
    this.times?.push(t);
  }
  done(error: string | null): void {
    this.gen.finished(this, error);
  }
}

export class LoadGenerator {
  private window: Window;
  private running = false;
  private inflight = 0;
  private idle: (() => void) | undefined;
  private rr = 0;
  private nextSeqId: number;
  private timer: NodeJS.Timeout | undefined;
  private countTarget = 0;
  private countReached: (() => void) | undefined;
  private closedLoop = true;
  /** Every step of every stream, for models that are not sequence models. */
  private readonly flat: readonly Prepared[];

  constructor(
    private readonly transport: Transport,
    /** Pre-encoded requests: streams of steps. */
    private readonly data: readonly (readonly Prepared[])[],
    private readonly sequence: SequencePlan | undefined,
    private readonly keepRecords: boolean,
  ) {
    this.window = newWindow(performance.now(), keepRecords);
    this.nextSeqId = sequence?.idStart ?? 0;
    this.flat = data.flat();
  }

  start(plan: LoadPlan): void {
    this.running = true;
    this.closedLoop = plan.mode === 'concurrency';
    this.window = newWindow(performance.now(), this.keepRecords);
    if (plan.mode === 'concurrency') {
      for (let k = 0; k < plan.value; k++) this.issue(new Flight(this, new Lane()));
      return;
    }
    const lanes = Array.from({ length: this.sequence ? 16 : 1 }, () => new Lane());
    let laneAt = 0;
    const gapMs = 1000 / plan.value;
    const gap = plan.distribution === 'poisson' ? () => -Math.log(1 - Math.random()) * gapMs : () => gapMs;
    let nextAt = performance.now();
    const tick = (): void => {
      if (!this.running) return;
      const now = performance.now();
      // Catch up on every send that fell due while the timer slept, within a bound on requests in flight.
      while (nextAt <= now) {
        nextAt += gap();
        if (this.inflight < 100_000) this.issue(new Flight(this, lanes[laneAt++ % lanes.length]!));
      }
      this.timer = setTimeout(tick, Math.max(0, nextAt - performance.now()));
    };
    tick();
  }

  /** Ends the current window at now and starts the next; returns the one that ended. */
  rotate(): Window {
    const now = performance.now();
    const w = this.window;
    w.endMs = now;
    this.window = newWindow(now, this.keepRecords);
    return w;
  }

  /** Resolves once the current window has `n` completions. */
  untilCount(n: number): Promise<void> {
    if (this.window.completed >= n) return Promise.resolve();
    this.countTarget = n;
    return new Promise((r) => (this.countReached = r));
  }

  current(): Window {
    return this.window;
  }

  /** Stops sending and waits for the requests in flight. */
  stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    if (this.inflight === 0) return Promise.resolve();
    return new Promise((r) => (this.idle = r));
  }

  interval(ms: number): void {
    recordUs(this.window.inter, ms * 1000);
  }

  finished(f: Flight, error: string | null): void {
    this.inflight--;
    const w = this.window;
    if (error !== null) {
      w.errors++;
      w.firstError ??= error;
    } else {
      w.completed++;
      w.responses += f.n;
      recordUs(w.latency, ((f.n > 0 ? f.lastMs : performance.now()) - f.startMs) * 1000);
      if (f.n > 0) recordUs(w.first, (f.firstMs - f.startMs) * 1000);
      if (w.records) w.records.push({ startMs: f.startMs, responseMs: f.times ?? [], sequenceId: f.seqId });
      if (this.countReached && w.completed >= this.countTarget) {
        const r = this.countReached;
        this.countReached = undefined;
        r();
      }
    }
    if (this.running && this.closedLoop) this.issue(f);
    else if (!this.running && this.inflight === 0) this.idle?.();
  }

  private issue(f: Flight): void {
    const lane = f.lane;
    let prepared: Prepared;
    let seq: SequenceStep | undefined;
    if (this.sequence) {
      if (lane.seqLeft === 0) {
        lane.seqId = this.nextSeqId;
        this.nextSeqId = this.nextSeqId >= this.sequence.idEnd ? this.sequence.idStart : this.nextSeqId + 1;
        lane.stream = this.rr++ % this.data.length;
        lane.pos = 0;
        const s = this.data[lane.stream]!;
        lane.seqLeft = this.data.length > 1 || s.length > 1 ? s.length : this.sequence.length;
        seq = { id: lane.seqId, start: true, end: lane.seqLeft === 1 };
      } else {
        seq = { id: lane.seqId, start: false, end: lane.seqLeft === 1 };
      }
      lane.seqLeft--;
      const s = this.data[lane.stream]!;
      prepared = s[lane.pos++ % s.length];
      f.seqId = lane.seqId;
    } else {
      prepared = this.flat[this.rr++ % this.flat.length];
    }
    f.n = 0;
    f.times = this.keepRecords ? [] : undefined;
    this.inflight++;
    f.startMs = performance.now();
    this.transport.send(prepared, seq, f);
  }
}
