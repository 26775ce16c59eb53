import { NereidError, toNereidError } from '../errors.js';
import type { InferenceResponse } from './response.js';

/**
 * The responses of one request as an async iterator: one for an ordinary model, zero or more for a decoupled
 * one. The iterator ends after the final response; an error ends it by throwing (after the responses that
 * came before it). Responses the consumer has not asked for yet wait in order.
 *
 * Leaving a `for await` loop early (break, return, throw) cancels the request: the model sees it as
 * cancelled and responses still to come are dropped.
 *
 * ```ts
 * for await (const res of server.inferStream({ model: 'repeat_int32', inputs })) console.log(res.outputs);
 * ```
 */
export class ResponseStream implements AsyncIterableIterator<InferenceResponse> {
  private readonly buffered: InferenceResponse[] = [];
  private head = 0;
  private readonly waiters: { resolve(r: IteratorResult<InferenceResponse>): void; reject(e: unknown): void }[] = [];
  private ended = false;
  private endedAlone = false;
  private error: NereidError | undefined;
  private settle!: () => void;
  /** Resolves once the stream is over: ended, failed or cancelled. */
  readonly settled: Promise<void> = new Promise((resolve) => (this.settle = resolve));
  /** Called once if the consumer stops before the end. */
  onCancel: (() => void) | undefined;

  /** A stream of the one response (or the error) of a promise. */
  static from(p: Promise<InferenceResponse>): ResponseStream {
    const s = new ResponseStream();
    p.then(
      (r) => {
        s.push(r);
        s.end();
      },
      (e: unknown) => s.fail(toNereidError(e)),
    );
    return s;
  }

  /**
   * A stream whose request starts once `start` gives its stream (after its model loaded on demand): that
   * stream's responses, relayed as they come; a consumer that stops early stops it. A `start` that fails is a
   * refusal (see `refused`).
   */
  static later(start: Promise<ResponseStream>): ResponseStream {
    const s = new ResponseStream();
    start.then(async (inner) => {
      if (s.ended) return void inner.return();
      s.onCancel = () => void inner.return();
      try {
        for (let r = await inner.next(); !r.done; r = await inner.next()) {
          s.push(r.value);
          // The last response and the end in one go, as the inner stream had them (see `drained`).
          if (inner.drained) break;
        }
        s.end();
      } catch (e) {
        s.fail(toNereidError(e));
      }
    }, (e: unknown) => {
      s.refused = true;
      s.fail(toNereidError(e));
    });
    return s;
  }

  /** A stream refused before any model saw its request (see `refused`). */
  static failed(e: unknown): ResponseStream {
    const s = new ResponseStream();
    s.refused = true;
    s.fail(toNereidError(e));
    return s;
  }

  /**
   * True for a stream that failed before a model saw its request (a check, an unknown model); false once a
   * model has it, even when the model answers with an error before inferStream() has handed the stream back.
   */
  refused = false;

  /** True once end(), fail() or a cancel has happened: later pushes are dropped. */
  get closed(): boolean {
    return this.ended;
  }

  /**
   * True once the stream has ended without error, with its last response (not after it, see end()), and every
   * response has been read: the response just read was the last one. A consumer that must label the last response (gRPC's triton_final_response) reads it
   * here instead of waiting for the next response or the end.
   */
  get drained(): boolean {
    return this.ended && !this.endedAlone && this.error === undefined && this.head === this.buffered.length;
  }

  push(response: InferenceResponse): void {
    if (this.ended) return;
    const w = this.waiters.shift();
    if (w) w.resolve({ value: response, done: false });
    else this.buffered.push(response);
  }

  /**
   * `alone`: the end came as a final flag of its own, after the last response rather than with it (Triton's
   * FINAL flag sent without a response); `drained` then never calls a response the last one.
   */
  end(alone = false): void {
    if (this.ended) return;
    this.ended = true;
    this.endedAlone = alone;
    this.settle();
    if (this.head === this.buffered.length) for (const w of this.waiters.splice(0)) w.resolve({ value: undefined, done: true });
  }

  fail(error: NereidError): void {
    if (this.ended) return;
    this.ended = true;
    this.error = error;
    this.settle();
    if (this.head === this.buffered.length) {
      const [first, ...rest] = this.waiters.splice(0);
      first?.reject(error);
      this.error = first ? undefined : error;
      for (const w of rest) w.resolve({ value: undefined, done: true });
    }
  }

  next(): Promise<IteratorResult<InferenceResponse>> {
    if (this.head < this.buffered.length) {
      const value = this.buffered[this.head]!;
      this.buffered[this.head++] = undefined as unknown as InferenceResponse;
      if (this.head === this.buffered.length) {
        this.buffered.length = 0;
        this.head = 0;
      }
      return Promise.resolve({ value, done: false });
    }
    if (this.error) {
      const e = this.error;
      this.error = undefined; // thrown once; the iterator is done afterwards
      return Promise.reject(e);
    }
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  /**
   * Flags the request cancelled for the model while its responses keep coming, as Triton's request cancel does
   * (a BLS response iterator's cancel()): the model decides what it still sends.
   */
  cancelRequest(): void {
    const cancel = this.onCancel;
    this.onCancel = undefined;
    cancel?.();
  }

  /** The consumer is done: drop what is left and cancel the request if it is still running. */
  return(): Promise<IteratorResult<InferenceResponse>> {
    this.buffered.length = 0;
    this.head = 0;
    this.error = undefined;
    if (!this.ended) {
      this.ended = true;
      this.settle();
      for (const w of this.waiters.splice(0)) w.resolve({ value: undefined, done: true });
      const cancel = this.onCancel;
      this.onCancel = undefined;
      cancel?.();
    }
    return Promise.resolve({ value: undefined, done: true });
  }

  throw(e?: unknown): Promise<IteratorResult<InferenceResponse>> {
    void this.return();
    return Promise.reject(e);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
