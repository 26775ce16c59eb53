import { invalidArg } from '../../errors.js';
import type { InferenceRequest, Parameters, RequestedOutput, SharedMemoryInput } from '../../inference/index.js';
import type { Tensor } from '../../tensor/tensor.js';
import { int64ToNumber, int64Value, uint64Value } from './int64.js';
import type { InferParameterMsg, ModelInferRequestMsg, ParameterMap, RequestedOutputMsg } from './messages.js';
import { sharedMemoryOutput, sharedMemoryRef } from './shared-memory.js';
import { checkDataType, contentsTensor, decodeShape, RawCursor, rawTensor } from './tensor-codec.js';

/**
 * A ModelInferRequest → an InferenceRequest, checked as Triton's gRPC frontend checks it: the version string,
 * each input's data source (shared memory, typed contents or the next raw_input_contents entry), and the
 * reserved parameters with the oneof types Triton accepts for each.
 */

export interface DecodedGrpcInfer {
  readonly request: InferenceRequest;
  /** triton_enable_empty_final_response: a decoupled model's bare final flag becomes an empty response on a stream. */
  readonly emptyFinalResponse: boolean;
}

export function decodeInferRequest(
  msg: ModelInferRequestMsg,
  signal: AbortSignal | undefined,
  forwarded: Parameters | undefined,
  borrowOutputs = false,
  tenant?: string,
): DecodedGrpcInfer {
  if (msg.refused !== undefined) throw msg.refused;
  const model = msg.model_name;
  const version = parseVersion(msg.model_version);
  const raw = new RawCursor(msg.raw_input_contents);
  const inputs: Tensor[] = [];
  let shmInputs: SharedMemoryInput[] | undefined;
  for (const t of msg.inputs) {
    const datatype = checkDataType(t.datatype, t.name, model, msg.resolved?.inputs.get(t.name)?.datatype);
    const shape = decodeShape(t.shape, t.name);
    const shm = sharedMemoryRef(t.parameters, t.name);
    if (shm !== undefined) {
      if (t.contents !== null) throw invalidArg(`unexpected 'content' provided when using shared memory for input tensor '${t.name}' for model '${model}'`);
      (shmInputs ??= []).push({ name: t.name, datatype, shape, sharedMemory: shm });
    } else if (t.contents !== null) {
      if (msg.raw_input_contents.length > 0) {
        throw invalidArg(`contents field must not be specified when using raw_input_contents for '${t.name}' for model '${model}'`);
      }
      inputs.push(contentsTensor(t, datatype, shape, model));
    } else {
      inputs.push(rawTensor(t.name, datatype, shape, raw.take(t.name, model), model));
    }
  }
  raw.checkAllUsed(model);
  const outputs = decodeOutputs(msg.outputs);
  const p = decodeParameters(msg.parameters, forwarded);
  // Shared-memory inputs and outputs are read and written by the server's registry, which also refuses them
  // when client shared memory is disabled.
  const request: InferenceRequest = {
    model,
    version,
    id: msg.id,
    inputs,
    sharedMemoryInputs: shmInputs,
    outputs,
    parameters: p.custom,
    priority: p.priority,
    timeoutUs: p.timeoutUs,
    sequenceId: p.sequenceId,
    sequenceStart: p.sequenceStart,
    sequenceEnd: p.sequenceEnd,
    signal,
    borrowOutputs,
    tenant,
  };
  return { request, emptyFinalResponse: p.emptyFinalResponse };
}

/**
 * A version string as Triton's frontends read it (GetModelVersionFromString, which calls std::stol): '' is the
 * version the server's policy picks; otherwise leading white space, an optional sign and decimal digits,
 * with anything after the digits ignored, as stol ignores it ('2x' is version 2). No digits, or a number
 * beyond int64, fails with stol's exception text as the details; a negative number is refused after parsing.
 */
export function parseVersion(v: string): number | undefined {
  if (v === '') return undefined;
  const m = /^[ \t\n\v\f\r]*([+-]?[0-9]+)/.exec(v);
  const n = m ? BigInt(m[1]!) : undefined;
  if (n === undefined || n > 0x7fffffffffffffffn || n < -0x8000000000000000n) {
    throw invalidArg(`failed to get model version from specified version string '${v}' (details: stol), version should be an integral value > 0`);
  }
  if (n < 0n) throw invalidArg(`invalid model version specified '${v}' , version should be an integral value > 0`);
  // A version past 2^53 exists in no repository; its nearest double still finds none.
  return Number(n);
}

function decodeOutputs(list: readonly RequestedOutputMsg[]): RequestedOutput[] | undefined {
  if (list.length === 0) return undefined;
  const outputs: RequestedOutput[] = new Array(list.length);
  for (let i = 0; i < list.length; i++) {
    const o = list[i]!;
    const classCount = classification(o.parameters['classification'], o.name);
    const shm = sharedMemoryRef(o.parameters, o.name);
    if (shm !== undefined) {
      if (classCount > 0) throw invalidArg(`output can't set both 'shared_memory_region' and 'classification' (output '${o.name}')`);
      outputs[i] = sharedMemoryOutput(o.name, shm);
    } else {
      outputs[i] = classCount > 0 ? { name: o.name, classCount } : { name: o.name };
    }
  }
  return outputs;
}

function classification(p: InferParameterMsg | undefined, output: string): number {
  if (p === undefined) return 0;
  if (p.parameter_choice !== 'int64_param') throw invalidArg(`invalid value type for 'classification' parameter, expected int64_param (output '${output}')`);
  const n = int64ToNumber(p.int64_param);
  if (n === undefined || n <= 0) throw invalidArg(`invalid value for 'classification' parameter, expected >= 0 (output '${output}')`);
  return n;
}

interface DecodedParameters {
  custom: Parameters | undefined;
  priority: number | undefined;
  timeoutUs: number | undefined;
  sequenceId: number | bigint | string | undefined;
  sequenceStart: boolean | undefined;
  sequenceEnd: boolean | undefined;
  emptyFinalResponse: boolean;
}

function decodeParameters(params: ParameterMap, forwarded: Parameters | undefined): DecodedParameters {
  const out: DecodedParameters = {
    custom: forwarded, priority: undefined, timeoutUs: undefined, sequenceId: undefined,
    sequenceStart: undefined, sequenceEnd: undefined, emptyFinalResponse: false,
  };
  for (const key in params) {
    const p = params[key]!;
    switch (key) {
      case 'sequence_id': out.sequenceId = sequenceId(p); break;
      case 'sequence_start': out.sequenceStart = bool(p, key); break;
      case 'sequence_end': out.sequenceEnd = bool(p, key); break;
      case 'priority': out.priority = priority(p); break;
      case 'timeout': out.timeoutUs = timeout(p); break;
      case 'triton_enable_empty_final_response': out.emptyFinalResponse = bool(p, key); break;
      // Triton's gRPC frontend always answers in raw_output_contents, so the HTTP-only binary flag means nothing.
      case 'binary_data_output': break;
      // Filled from request headers by --grpc-header-forward-pattern, never by the client.
      case 'headers': break;
      default:
        if (key.startsWith('triton_')) throw invalidArg(`parameter keys starting with 'triton_' are reserved for Triton usage. Only the following keys starting with 'triton_' are allowed: triton_enable_empty_final_response (got '${key}')`);
        // Forwarded headers are shared by the stream's requests: copy before adding the request's own.
        if (out.custom === forwarded) out.custom = { ...forwarded };
        out.custom![key] = custom(p, key);
    }
  }
  return out;
}

function sequenceId(p: InferParameterMsg): number | bigint | string {
  if (p.parameter_choice === 'int64_param') return uint64Value(p.int64_param);
  if (p.parameter_choice === 'string_param') return p.string_param;
  throw invalidArg("invalid value type for 'sequence_id' parameter, expected int64_param or string_param.");
}

function bool(p: InferParameterMsg, key: string): boolean {
  if (p.parameter_choice !== 'bool_param') throw invalidArg(`invalid value type for '${key}' parameter, expected bool_param.`);
  return p.bool_param;
}

function priority(p: InferParameterMsg): number {
  let v: number | bigint | undefined;
  if (p.parameter_choice === 'int64_param') {
    v = int64Value(p.int64_param);
    if (v < 0) throw invalidArg("invalid value for 'priority', expected value >= 0.");
  } else if (p.parameter_choice === 'uint64_param') {
    v = uint64Value(p.uint64_param);
  } else {
    throw invalidArg("invalid value type for 'priority' parameter, expected int64_param or uint64_param.");
  }
  // A level beyond 2^53 is beyond any model's priority_levels: the lowest level, as any number past it would be.
  return typeof v === 'bigint' ? Number.MAX_SAFE_INTEGER : v;
}

function timeout(p: InferParameterMsg): number {
  if (p.parameter_choice !== 'int64_param') throw invalidArg("invalid value type for 'timeout' parameter, expected int64_param.");
  const v = int64ToNumber(p.int64_param);
  if (v === undefined || v < 0) throw invalidArg("invalid value for 'timeout' parameter: it must be a non-negative number of microseconds.");
  return v;
}

function custom(p: InferParameterMsg, key: string): string | number | boolean | bigint {
  switch (p.parameter_choice) {
    case 'bool_param': return p.bool_param;
    case 'string_param': return p.string_param;
    case 'double_param': return p.double_param;
    case 'int64_param': return int64Value(p.int64_param);
    default: throw invalidArg(`invalid value type for '${key}' parameter, expected int64_param, bool_param, or string_param. (double_param is taken too)`);
  }
}
