import { NereidError, toNereidError } from '../errors.js';
import { TRACE, type RequestTrace } from '../inference/trace.js';
import type { ExecutionTimes } from '../backends/backend.js';
import { NO_RESPONSE, type InferenceRequest, type Parameters } from '../inference/index.js';
import type { ResponseStream } from '../inference/stream.js';
import type { ModelStatistics } from '../observability/statistics.js';
import type { Job } from '../scheduler/scheduler.js';
import type { Tensor } from '../tensor/tensor.js';
import { classify } from './classification.js';
import { countTokens } from './token-counts.js';
import type { ModelContext } from './context.js';
import type { LiveLinks } from './live-jobs.js';

/**
 * A request to a decoupled model between enqueue and its final response; it is also the ResponseSender the
 * backend answers through. Every response goes to the stream as it arrives, and may come after the
 * execution that started it has ended (the instance is then free for other requests).
 *
 * Statistics count the request once, when both its final response and the end of its execution have been
 * seen, whichever comes last; a failure counts when it happens.
 */
export class StreamJob implements Job {
  /** Its links on its model version's LiveJobs list. */
  livePrev: LiveLinks | null = null;
  liveNext: LiveLinks | null = null;
  readonly enqueuedNs: bigint;
  readonly signal: AbortSignal;
  readonly parameters: Parameters | undefined;
  readonly id: string;
  readonly priority: number | undefined;
  readonly timeoutUs: number | undefined;
  readonly tenant: string | undefined;
  readonly sequenceId: number | bigint | string | undefined;
  readonly sequenceStart: boolean;
  readonly sequenceEnd: boolean;
  readonly trace: RequestTrace | undefined;
  state: 'queued' | 'running' | 'done' = 'queued';
  private readonly abortController = new AbortController();
  private readonly onClientAbort: (() => void) | undefined;
  private closed = false;
  private finalSeen = false;
  private responded = false;
  private execution: { startNs: bigint; times: ExecutionTimes } | undefined;

  constructor(
    private readonly context: ModelContext,
    private readonly stats: ModelStatistics,
    private readonly request: InferenceRequest,
    readonly inputs: readonly Tensor[],
    readonly outputs: readonly string[],
    readonly rows: number,
    start: bigint,
    private readonly stream: ResponseStream,
    /** Told once, when the stream is over (its final response, or a failure). */
    private readonly settled: (job: StreamJob) => void = () => undefined,
  ) {
    this.enqueuedNs = start;
    this.signal = this.abortController.signal;
    this.parameters = request.parameters;
    this.id = request.id ?? '';
    this.priority = request.priority;
    this.timeoutUs = request.timeoutUs;
    this.tenant = request.tenant;
    this.sequenceId = request.sequenceId;
    this.sequenceStart = request.sequenceStart ?? false;
    this.sequenceEnd = request.sequenceEnd ?? false;
    this.trace = request.trace;
    // The backend sees one signal: aborted when the consumer stops reading, or when the client's own signal
    // fires, which also ends the stream with CANCELLED.
    stream.onCancel = () => this.abortController.abort();
    const client = request.signal;
    if (client) {
      this.onClientAbort = () => {
        this.abortController.abort();
        this.fail(new NereidError('CANCELLED', 'request cancelled'));
      };
      client.addEventListener('abort', this.onClientAbort, { once: true });
    }
  }

  get sender(): this {
    return this;
  }

  send(outputs: readonly Tensor[], final: boolean, parameters?: Parameters): void {
    if (this.closed) return;
    if (outputs !== NO_RESPONSE) {
      if (!this.responded) this.firstResponse();
      let shaped: Tensor[];
      try {
        shaped = this.shapeOutputs(outputs);
      } catch (e) {
        this.fail(toNereidError(e));
        return;
      }
      const ctx = this.context;
      this.stream.push({ model: ctx.name, version: ctx.version, id: this.id, outputs: shaped, ...(parameters ? { parameters } : {}) });
    }
    if (!final) return;
    countTokens(this.stats, parameters);
    this.close();
    this.stream.end(outputs === NO_RESPONSE);
    this.finalSeen = true;
    this.recordSuccess();
  }

  fail(error: NereidError): void {
    if (this.closed) return;
    this.close();
    const now = process.hrtime.bigint();
    this.stats.recordFailure(Number(now - this.enqueuedNs), error.code === 'CANCELLED' ? this.context.cancelledFailure : 'OTHER');
    this.trace?.stamp(TRACE.REQUEST_END, now);
    this.stream.fail(error);
  }

  finish(execStartNs: bigint, times: ExecutionTimes): void {
    this.state = 'done';
    this.execution = { startNs: execStartNs, times };
    this.recordSuccess();
  }

  reject(error: NereidError): void {
    this.state = 'done';
    this.fail(error);
  }

  /** Time to the first response, for nv_inference_first_response_histogram_ms when metrics record it. */
  private firstResponse(): void {
    this.responded = true;
    const observer = this.stats.observer;
    if (observer !== null) observer.firstResponse(Number(process.hrtime.bigint() - this.enqueuedNs));
  }

  private recordSuccess(): void {
    const e = this.execution;
    if (!this.finalSeen || !e) return;
    this.finalSeen = false;
    const now = process.hrtime.bigint();
    this.stats.recordSuccess(Number(now - this.enqueuedNs), Number(e.startNs - this.enqueuedNs), e.times.inputNs, e.times.inferNs, e.times.outputNs);
    const trace = this.trace;
    if (trace !== undefined) {
      trace.stamp(TRACE.COMPUTE_START, e.startNs);
      trace.stamp(TRACE.COMPUTE_END, e.startNs + BigInt(Math.round(e.times.inputNs + e.times.inferNs + e.times.outputNs)));
      trace.stamp(TRACE.REQUEST_END, now);
    }
  }

  /** Answers now with `error` (shutdown past the exit timeout); later responses are dropped. */
  abort(error: NereidError): void {
    this.abortController.abort();
    this.fail(error);
  }

  private close(): void {
    this.closed = true;
    this.settled(this);
    this.stream.onCancel = undefined;
    if (this.onClientAbort) this.request.signal!.removeEventListener('abort', this.onClientAbort);
  }

  /** Backend shapes back to config dims, then classification where the client asked for it. */
  private shapeOutputs(outs: readonly Tensor[]): Tensor[] {
    const ctx = this.context;
    let result = ctx.reshapes ? outs.map((t) => ctx.fromBackend(t)) : [...outs];
    const requested = this.request.outputs;
    if (requested && requested.some((o) => o.classCount)) {
      result = result.map((t) => {
        const count = requested.find((o) => o.name === t.name)?.classCount;
        return count ? classify(t, count, ctx.outputs.get(t.name)!, ctx.maxBatchSize > 0) : t;
      });
    }
    return result;
  }
}

