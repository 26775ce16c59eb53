import type { NereidError } from '../errors.js';
import type { Tensor } from '../tensor/tensor.js';
import type { Parameters } from './request.js';

export interface InferenceResponse {
  readonly model: string;
  readonly version: number;
  readonly id: string;
  readonly outputs: readonly Tensor[];
  readonly parameters?: Parameters;
  /**
   * Outputs the server wrote into shared memory, as the request asked: their tensors keep name, datatype and
   * shape but carry no data, and frontends answer them without data (Triton's shared-memory outputs).
   */
  readonly sharedMemoryOutputs?: ReadonlySet<string>;
  /**
   * Present when the outputs' data is lent (the request asked with borrowOutputs): gives it back. The data must
   * not be read afterwards; calling it again does nothing.
   */
  readonly release?: () => void;
}

/**
 * How a backend answers one request: exactly one final send for ordinary models; zero or more sends and then
 * a final one for decoupled models. `fail` ends the request with an error. Whoever executes a request must
 * call exactly one of send(final=true) or fail, once.
 */
export interface ResponseSender {
  /**
   * `release`, only for a request whose BackendRequest.borrowOutputs is set: the outputs' data is lent, and
   * whoever ends up holding the response calls it once done with them (the backend's memory is reused after).
   */
  send(outputs: readonly Tensor[], final: boolean, parameters?: Parameters, release?: () => void): void;
  fail(error: NereidError): void;
  /**
   * The request of an ordinary model will be answered after its execution has ended (Triton's Python models
   * may answer through their response sender from another thread): its end waits for the final send or fail
   * instead of failing with no response. Senders that cannot wait leave this out.
   */
  answerLater?(): void;
}

/**
 * The `outputs` a decoupled backend sends with final=true to end a request without one more response (Triton's
 * FINAL flag sent alone). Recognised by identity; a sender that does not know it sees an empty response.
 */
export const NO_RESPONSE: readonly Tensor[] = Object.freeze([]);
