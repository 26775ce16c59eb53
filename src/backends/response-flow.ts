import { setTimeout as sleep } from 'node:timers/promises';
import { NereidError } from '../errors.js';
import { NO_RESPONSE } from '../inference/response.js';
import type { Tensor } from '../tensor/tensor.js';
import type { BackendRequest } from './backend.js';

/**
 * The responses of one request to a backend that answers after its execution may have ended (Triton's
 * repeat and square backends, which answer from a thread of their own through a response factory).
 *
 * In a decoupled model every response goes out as it comes, then the final flag alone. A model that is not
 * decoupled gets only its first response, as the final one: Triton's frontends keep the first response of
 * such a model and drop the rest (qa L0_grpc_state_cleanup), and its execution is not over before that
 * response (or the end, when there is none) since Nereid answers an ordinary request when its execution ends.
 *
 * The flow stops when the request is cancelled (its signal) or the instance is killed: `signal` then aborts,
 * which ends the waits of the loop producing the responses. A cancelled request is then answered CANCELLED
 * (counted as a cancelled request): without that last word a request whose reader had left (an ensemble's
 * step after another step failed, a generate_stream client that went away) was never over, neither counted
 * in the statistics nor let go by its model.
 */
export class ResponseFlow {
  private readonly abort = new AbortController();
  private done = false;
  private settle!: () => void;
  /** Resolves once nothing more will be sent: the end, a failure, a cancel, or (not decoupled) the answer. */
  readonly settled: Promise<void> = new Promise((resolve) => (this.settle = resolve));
  private readonly onCancel: (() => void) | undefined;

  constructor(private readonly request: BackendRequest, private readonly decoupled: boolean) {
    const client = request.signal;
    if (client) {
      this.onCancel = () => this.fail(new NereidError('CANCELLED', 'request cancelled'));
      if (client.aborted) this.onCancel();
      else client.addEventListener('abort', this.onCancel, { once: true });
    }
  }

  /** Aborts when the flow is over early; pass it to the waits between responses. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  get stopped(): boolean {
    return this.done;
  }

  /** Whether the request asked for this output (every output when it named none). */
  wants(name: string): boolean {
    return this.request.outputs.includes(name);
  }

  send(outputs: readonly Tensor[]): void {
    if (this.done) return;
    if (this.decoupled) {
      this.request.sender.send(outputs, false);
      return;
    }
    this.request.sender.send(outputs, true);
    this.stop();
  }

  /** No more responses: the final flag alone. */
  end(): void {
    if (this.done) return;
    // An ordinary request that got no response is failed by whoever ran it, when its execution ends.
    if (this.decoupled) this.request.sender.send(NO_RESPONSE, true);
    this.stop();
  }

  fail(error: NereidError): void {
    if (this.done) return;
    this.request.sender.fail(error);
    this.stop();
  }

  /** Waits `ms` milliseconds unless the flow stops first; false when it stopped. */
  async wait(ms: number): Promise<boolean> {
    if (ms > 0) await sleep(ms, undefined, { signal: this.abort.signal }).catch(() => undefined);
    return !this.done;
  }

  private stop(): void {
    if (this.done) return;
    this.done = true;
    if (this.onCancel) this.request.signal!.removeEventListener('abort', this.onCancel);
    this.abort.abort();
    this.settle();
  }
}

/** The flows an instance has under way, so that kill() can end them and close() can wait for them. */
export class FlowSet {
  private readonly flows = new Set<ResponseFlow>();

  add(flow: ResponseFlow): void {
    this.flows.add(flow);
    void flow.settled.then(() => this.flows.delete(flow));
  }

  failAll(error: NereidError): void {
    for (const f of this.flows) f.fail(error);
  }

  async settled(): Promise<void> {
    await Promise.all([...this.flows].map((f) => f.settled));
  }
}
