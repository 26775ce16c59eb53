import type { NereidError } from '../../errors.js';
import type { ResolvedModel } from '../../server/inference-server.js';

/**
 * The shapes of grpc_service.proto's messages as this frontend reads and writes them. Requests are protobufjs
 * messages: unset scalars read as their proto3 defaults, unset messages as null, 64-bit integers as Long, and
 * a oneof's set member is named by its virtual `parameter_choice` field. Responses are plain objects that
 * protobufjs encodes as they are (64-bit fields accept numbers or decimal strings).
 */

/** protobufjs's Long: the two 32-bit halves of a 64-bit integer. */
export interface Long {
  readonly low: number;
  readonly high: number;
  readonly unsigned: boolean;
  toString(): string;
}

export type Int64 = Long | number;

export interface InferParameterMsg {
  readonly parameter_choice?: 'bool_param' | 'int64_param' | 'string_param' | 'double_param' | 'uint64_param';
  readonly bool_param: boolean;
  readonly int64_param: Int64;
  readonly string_param: string;
  readonly double_param: number;
  readonly uint64_param: Int64;
}

export type ParameterMap = Readonly<Record<string, InferParameterMsg>>;

export interface TensorContentsMsg {
  readonly bool_contents: readonly boolean[];
  readonly int_contents: readonly number[];
  readonly int64_contents: readonly Int64[];
  readonly uint_contents: readonly number[];
  readonly uint64_contents: readonly Int64[];
  readonly fp32_contents: readonly number[];
  readonly fp64_contents: readonly number[];
  readonly bytes_contents: readonly Uint8Array[];
}

export interface InferInputTensorMsg {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly Int64[];
  readonly parameters: ParameterMap;
  readonly contents: TensorContentsMsg | null;
}

export interface RequestedOutputMsg {
  readonly name: string;
  readonly parameters: ParameterMap;
}

export interface ModelInferRequestMsg {
  readonly model_name: string;
  readonly model_version: string;
  readonly id: string;
  readonly parameters: ParameterMap;
  readonly inputs: readonly InferInputTensorMsg[];
  readonly outputs: readonly RequestedOutputMsg[];
  readonly raw_input_contents: readonly Buffer[];
  /** Set (by request-bounds.ts) instead of decoding a request whose counts were refused; the other fields are then empty but for id, model_name and model_version. */
  readonly refused?: NereidError;
  /** Set (by request-bounds.ts) on a request whose counts were checked: its model, looked up for that check. */
  readonly resolved?: ResolvedModel;
}

/** An InferParameter to encode: exactly one member set. */
export type InferParameterOut =
  | { bool_param: boolean }
  | { int64_param: number | string }
  | { uint64_param: number | string }
  | { string_param: string }
  | { double_param: number };

export interface InferOutputTensorOut {
  name: string;
  datatype: string;
  shape: readonly number[];
}

export interface ModelInferResponseOut {
  model_name: string;
  model_version: string;
  id: string;
  parameters?: Record<string, InferParameterOut>;
  outputs: InferOutputTensorOut[];
  raw_output_contents: Uint8Array[];
}

export interface ModelStreamInferResponseOut {
  error_message: string;
  infer_response: ModelInferResponseOut | null;
}

/** Requests that name a model and an optional version (ModelReady, ModelMetadata, ModelConfig, ModelStatistics). */
export interface ModelRefMsg {
  readonly name: string;
  readonly version: string;
}

export interface RepositoryParameterMsg {
  readonly parameter_choice?: 'bool_param' | 'int64_param' | 'string_param' | 'bytes_param';
  readonly bool_param: boolean;
  readonly int64_param: Int64;
  readonly string_param: string;
  readonly bytes_param: Uint8Array;
}

export interface RepositoryIndexRequestMsg {
  readonly repository_name: string;
  readonly ready: boolean;
}

export interface RepositoryModelRequestMsg {
  readonly repository_name: string;
  readonly model_name: string;
  readonly parameters: Readonly<Record<string, RepositoryParameterMsg>>;
}

export interface NameMsg {
  readonly name: string;
}

export interface SystemShmRegisterMsg {
  readonly name: string;
  readonly key: string;
  readonly offset: Int64;
  readonly byte_size: Int64;
}

export interface CudaShmRegisterMsg {
  readonly name: string;
  readonly raw_handle: Uint8Array;
  readonly device_id: Int64;
  readonly byte_size: Int64;
}

export interface LogSettingValueMsg {
  readonly parameter_choice?: 'bool_param' | 'uint32_param' | 'string_param';
  readonly bool_param: boolean;
  readonly uint32_param: number;
  readonly string_param: string;
}

export interface LogSettingsRequestMsg {
  readonly settings: Readonly<Record<string, LogSettingValueMsg>>;
}

export interface TraceSettingRequestMsg {
  readonly settings?: Readonly<Record<string, { readonly value: readonly string[] }>>;
  readonly model_name?: string;
}
