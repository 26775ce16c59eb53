import type { DataType } from '../tensor/datatype.js';
import type { Tensor } from '../tensor/tensor.js';
import type { RequestTrace } from './trace.js';

/** A request or response parameter value: JSON scalars, with 64-bit integers as bigint when they do not fit. */
export type ParameterValue = string | number | boolean | bigint;
export type Parameters = Record<string, ParameterValue>;

/**
 * Where a tensor's bytes are in a registered system shared-memory region: Triton's shared_memory_region,
 * shared_memory_offset (from the start of the region) and shared_memory_byte_size tensor parameters.
 */
export interface SharedMemoryRef {
  readonly region: string;
  readonly offset: number;
  readonly byteSize: number;
}

/** An input whose bytes the server reads from shared memory (BYTES in their length-prefixed serialized form). */
export interface SharedMemoryInput {
  readonly name: string;
  readonly datatype: DataType;
  readonly shape: readonly number[];
  readonly sharedMemory: SharedMemoryRef;
}

/**
 * The most a request to one model can hold and still be valid, fixed when the model loads. Frontends refuse
 * a request past these before decoding the rest of it, so its cost stays bounded by what the model accepts
 * (the model's own checks come later and give the exact reasons). `decoupled` rides along: frontends that
 * cannot stream refuse such a model before reading the body.
 */
export interface RequestBounds {
  readonly model: string;
  readonly decoupled: boolean;
  /** Inputs in the config (optional ones included): more means an unknown or repeated input. */
  readonly inputs: number;
  /** Inputs that are not optional. */
  readonly requiredInputs: number;
  /** Outputs in the config: more requested means an unknown or repeated output. */
  readonly outputs: number;
  /** The most dimensions any input has, the batch dimension included. */
  readonly rank: number;
  /**
   * The most elements any one input can hold: its dims' product times the batch limit, the largest over the
   * inputs; Infinity when a dim is variable.
   */
  readonly inputElements: number;
}

export interface RequestedOutput {
  readonly name: string;
  /** The classification extension: return the top-N classes as "score:index[:label]" strings. 0 = off. */
  readonly classCount?: number;
  /** Write this output into shared memory instead of returning its data (BYTES serialized). */
  readonly sharedMemory?: SharedMemoryRef;
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
  /** Inputs in shared memory; the server turns them into tensors that view the regions before the model sees them. */
  readonly sharedMemoryInputs?: readonly SharedMemoryInput[];
  /** Undefined asks for every output of the model. */
  readonly outputs?: readonly RequestedOutput[];
  /** Custom parameters passed through to the model (reserved keys removed by the frontend). */
  readonly parameters?: Parameters;
  /** Scheduling parameters of Triton's schedule_policy extension. */
  readonly priority?: number;
  readonly timeoutUs?: number;
  /**
   * Who the request is for: the id of the API key it presented, when the server checks keys. A model's
   * scheduler shares its queue fairly among tenants when it is contended (scheduler/tenant-queue.ts).
   */
  readonly tenant?: string;
  /** Triton's sequence extension: the correlation id (0 or '' for none) and the sequence's START / END flags. */
  readonly sequenceId?: number | bigint | string;
  readonly sequenceStart?: boolean;
  readonly sequenceEnd?: boolean;
  /** Aborts a request that has not finished: a disconnected client or an expired deadline. */
  readonly signal?: AbortSignal;
  /**
   * The caller calls the response's release() once it is done with the outputs' data. Until then a backend
   * may lend it memory of its own rather than copy each output into a fresh buffer (a Python stub's shared
   * memory: Triton's response allocator, whose buffers live until the response is deleted). The outputs of a
   * response with no release() are the caller's to keep.
   */
  readonly borrowOutputs?: boolean;
  /** The request's trace when tracing sampled it (a frontend's, or a child of an ensemble's or a BLS caller's). */
  readonly trace?: RequestTrace | undefined;
}
