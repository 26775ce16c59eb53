import type { Tensor } from '../tensor/tensor.js';

/** A request or response parameter value: JSON scalars, with 64-bit integers as bigint when they do not fit. */
export type ParameterValue = string | number | boolean | bigint;
export type Parameters = Record<string, ParameterValue>;

export interface RequestedOutput {
  readonly name: string;
  /** The classification extension: return the top-N classes as "score:index[:label]" strings. 0 = off. */
  readonly classCount?: number;
}

/**
 * One inference request as every frontend hands it to the server. Frontends decode their wire format into
 * this; the server never sees HTTP or gRPC.
 */
export interface InferenceRequest {
  readonly model: string;
  /** A specific version; undefined lets the server pick the highest ready one. */
  readonly version?: number;
  /** The client's request id, echoed in the response; '' when none. */
  readonly id?: string;
  readonly inputs: readonly Tensor[];
  /** Undefined asks for every output of the model. */
  readonly outputs?: readonly RequestedOutput[];
  /** Custom parameters passed through to the model (reserved keys removed by the frontend). */
  readonly parameters?: Parameters;
  /** Scheduling parameters of Triton's schedule_policy extension. */
  readonly priority?: number;
  readonly timeoutUs?: number;
  /** Triton's sequence extension: the correlation id (0 or '' for none) and the sequence's START / END flags. */
  readonly sequenceId?: number | bigint | string;
  readonly sequenceStart?: boolean;
  readonly sequenceEnd?: boolean;
  /** Aborts a request that has not finished: a disconnected client or an expired deadline. */
  readonly signal?: AbortSignal;
}
