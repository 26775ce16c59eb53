/**
 * The messages between the server and a Python stub (python/nereid_stub.py), framed as frames.ts describes.
 * Short keys on the tensor descriptors because one is written per tensor per request.
 */

/** Where one tensor's bytes are: region name, offset and byte length (BYTES: serialized, `c` elements). */
export interface TensorDesc {
  readonly n: string;
  readonly d: string;
  readonly s: readonly number[];
  /** Region name (exec and responses); absent for tensors carried in a frame's tail (BLS). */
  readonly r?: string;
  readonly o: number;
  readonly b: number;
  readonly c?: number | null;
}

/** A block of a region, as [region name, offset]. */
export type Block = readonly [string, number];

export interface WireRequest {
  readonly rid: number;
  readonly id: string;
  readonly corr: number | bigint | string;
  readonly flags: number;
  readonly timeout: number;
  /** The request's parameters as a JSON string, as pb_utils' parameters() returns them. */
  readonly params: string;
  readonly outputs: readonly string[];
  readonly inputs: readonly TensorDesc[];
  readonly cancelled?: boolean;
  /** A traced request: its trace context for request.trace(), whose BLS requests then become child traces. */
  readonly tr?: string;
}

export interface StubInit {
  readonly t: 'init';
  readonly mode: 'instance' | 'autocomplete';
  readonly modelFile: string;
  readonly modelDir: string;
  readonly modelName: string;
  readonly decoupled: boolean;
  readonly args: Readonly<Record<string, string>>;
  /** autocomplete: the config in Triton's JSON form, as text. */
  readonly config?: string;
  /** How long the stub polls its pipe for the next execution before it sleeps, in microseconds (instances). */
  readonly spinUs?: number;
  /** A built-in module the stub imports instead of the model file (the TorchScript runner). */
  readonly runner?: string;
  /**
   * `prefix` names the stub's own regions; every region of the instance (the server's too) starts with
   * `instancePrefix`, which the stub removes if the server goes away without closing it.
   */
  readonly shm: { readonly prefix: string; readonly instancePrefix: string; readonly defaultBytes: number; readonly growthBytes: number };
}

export interface ErrorInfo {
  readonly code: number;
  readonly message: string;
}

export type FromStub =
  | { readonly t: 'ready' }
  | { readonly t: 'init-error'; readonly message: string }
  | {
      readonly t: 'resp';
      readonly rid: number;
      readonly final: boolean;
      /** Absent: a FINAL flag sent without a response. */
      readonly outputs?: readonly TensorDesc[];
      /** The block of the stub's region holding the outputs, to release once read. */
      readonly k?: Block;
      /** Stub regions retired since the last response: unmap them. */
      readonly drop?: readonly string[];
      readonly params?: string;
      readonly error?: ErrorInfo;
    }
  | { readonly t: 'done'; readonly batch: number; readonly inferNs: number; readonly error?: string; readonly unanswered?: readonly number[]; readonly running?: boolean; readonly cancelled?: boolean;
      /** Requests of a model that is not decoupled that its response senders may still answer. */
      readonly later?: readonly number[] }
  | { readonly t: 'ended'; readonly batch: number; readonly error?: string; readonly unanswered?: readonly number[] }
  | { readonly t: 'log'; readonly level: number; readonly message: string }
  | { readonly t: 'finalized'; readonly error?: string }
  | { readonly t: 'autocomplete'; readonly config?: string; readonly error?: string }
  | BlsCall
  | { readonly t: 'bls-cancel'; readonly call: number }
  | ModelCall
  | MetricCall;

/** A BLS request: its input tensors are in the frame's tail. */
export interface BlsCall {
  readonly t: 'bls';
  readonly call: number;
  readonly model: string;
  readonly version: number;
  readonly id: string;
  readonly corr: number | string;
  readonly flags: number;
  readonly timeout: number;
  readonly params: string;
  readonly outputs: readonly string[];
  readonly stream: boolean;
  readonly inputs: readonly TensorDesc[];
  /** The request (its rid) whose trace() the BLS request was given: the call is traced as its child. */
  readonly trace?: number;
}

/** load_model / unload_model / is_model_ready. A load's files are in the tail, `sizes` long, in `files` order. */
export interface ModelCall {
  readonly t: 'model';
  readonly call: number;
  readonly op: 'load' | 'unload' | 'ready';
  readonly name: string;
  readonly config?: string;
  readonly files?: readonly string[];
  readonly sizes?: readonly number[];
  readonly version?: string;
  readonly unload_dependents?: boolean;
}

/** Custom metrics: `call` present when the stub waits for a reply (creating families and metrics, value()). */
export interface MetricCall {
  readonly t: 'metric';
  readonly call?: number;
  readonly op: 'family' | 'metric' | 'increment' | 'set' | 'observe' | 'value';
  readonly name?: string;
  readonly description?: string;
  readonly kind?: number;
  readonly family?: number;
  readonly labels?: Readonly<Record<string, string>>;
  readonly buckets?: readonly number[] | null;
  readonly metric?: number;
  readonly value?: number;
}

/** Triton's error codes (TRITONSERVER_Error_Code), as a TritonError carries them. */
export const ERROR_CODE_NAMES = ['UNKNOWN', 'INTERNAL', 'NOT_FOUND', 'INVALID_ARG', 'UNAVAILABLE', 'UNSUPPORTED', 'ALREADY_EXISTS', 'CANCELLED'] as const;
