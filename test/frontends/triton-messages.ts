/**
 * Triton's words for its refusals of inference requests, as Nereid must give them over HTTP and gRPC: parsing
 * of the request (JSON, the binary tensor extension, generate, protobuf), the checks of a request against its
 * model's config, model and version lookup, and the schedulers' refusals. Each row says how to make the
 * refusal happen; triton-messages.test.ts sends it to a real server and checks the answer holds the words.
 * Where a row has both triggers the words are the same on both protocols.
 */
import type { TritonMessage } from '../helpers/triton-messages.js';
import { int32Bytes } from '../helpers/grpc.js';

export interface HttpTrigger {
  /** Default: the model's infer path. */
  readonly path?: string;
  /** Sent as JSON unless `body` is given. */
  readonly json?: unknown;
  readonly body?: string | Buffer;
  readonly headers?: Record<string, string>;
}

export interface RequestRow extends TritonMessage {
  /** The model the request goes to: default `simple` (INT32 INPUT0 and INPUT1 of [16], max_batch_size 8). */
  readonly model?: string;
  readonly http?: HttpTrigger;
  /** ModelInferRequest fields besides model_name, as @grpc/proto-loader takes them. */
  readonly grpc?: Record<string, unknown>;
  /**
   * Copies of the request sent at once, for refusals that depend on what else is queued: the first refusal
   * among them is checked, and at least one must be refused.
   */
  readonly concurrent?: number;
}

const RANGE16 = Array.from({ length: 16 }, (_, i) => i);
const RAW16 = int32Bytes(RANGE16);

const jsonIn = (name: string, shape: number[] = [1, 16], data: unknown = RANGE16, datatype = 'INT32') => ({ name, datatype, shape, data });
const good = () => [jsonIn('INPUT0'), jsonIn('INPUT1')];
const grpcIn = (name: string, shape: number[] = [1, 16], datatype = 'INT32') => ({ name, datatype, shape });
const grpcGood = (extra: Record<string, unknown> = {}) => ({ inputs: [grpcIn('INPUT0'), grpcIn('INPUT1')], raw_input_contents: [RAW16, RAW16], ...extra });
const params = (parameters: Record<string, unknown>) => ({ inputs: good(), parameters });

/** The infer header of a binary-extension body, with its length header, followed by `blobs`. */
function binary(header: unknown, blobs: Buffer[], headerLength?: string): HttpTrigger {
  const json = Buffer.from(JSON.stringify(header));
  return { body: Buffer.concat([json, ...blobs]), headers: { 'Inference-Header-Content-Length': headerLength ?? String(json.byteLength) } };
}
const binIn = (name: string, size: number) => ({ name, datatype: 'INT32', shape: [1, 16], parameters: { binary_data_size: size } });
/** BYTES elements as the binary extension and raw_input_contents carry them: each a 4-byte length, then its bytes. */
const serialized = (values: string[]) => Buffer.concat(values.flatMap((v) => [Buffer.from(Uint32Array.of(v.length).buffer), Buffer.from(v)]));
const STRINGS16 = serialized(RANGE16.map(String));
const STRINGS17 = serialized([...RANGE16.map(String), '']);

const HTTP = 'server http_server.cc';
const GRPC = 'server grpc/infer_handler.cc';
const CORE = 'core infer_request.cc';

export const REQUEST_MESSAGES: readonly RequestRow[] = [
  // The HTTP request body: JSON and the binary tensor data extension.
  { source: `${HTTP} EVBufferToJson (TritonJson Parse)`, refusal: 'a body that is not JSON', words: 'failed to parse the request JSON buffer', http: { body: '{"inputs": [' } },
  { source: `${HTTP} ParseJsonTritonIO`, refusal: "a request without 'inputs'", words: "Unable to parse 'inputs'", http: { json: {} } },
  { source: `${HTTP} ParseJsonTritonIO`, refusal: 'a request that is not a JSON object', words: "Unable to parse 'inputs'", http: { json: [] } },
  { source: `${HTTP} ParseJsonTritonRequestID`, refusal: "an 'id' that is not a string", words: "Unable to parse 'id'", http: { json: { id: 5, inputs: good() } } },
  { source: `${HTTP} ParseJsonTritonIO`, refusal: "an input 'name' that is not a string", words: "Unable to parse 'name'", http: { json: { inputs: [{ ...jsonIn('INPUT0'), name: 3 }, jsonIn('INPUT1')] } } },
  { source: `${HTTP} ParseJsonTritonIO`, refusal: "an input 'datatype' that is not a string", words: "Unable to parse 'datatype'", http: { json: { inputs: [{ ...jsonIn('INPUT0'), datatype: 7 }, jsonIn('INPUT1')] } } },
  { source: `${HTTP} ReadDataFromJson`, refusal: 'an unknown datatype with JSON data', words: 'invalid datatype for input INPUT0', http: { json: { inputs: [jsonIn('INPUT0', [1, 16], RANGE16, 'INT33'), jsonIn('INPUT1')] } } },
  { source: `${HTTP} ParseJsonTritonIO`, refusal: "a 'shape' that is not an array", words: "Unable to parse 'shape'", http: { json: { inputs: [jsonIn('INPUT0', 16 as unknown as number[]), jsonIn('INPUT1')] } } },
  { source: `${HTTP} ParseJsonTritonIO`, refusal: 'a negative dimension', words: "Unable to parse 'shape'", http: { json: { inputs: [jsonIn('INPUT0', [-1, 16]), jsonIn('INPUT1')] } } },
  {
    source: `${HTTP} ValidateInputContentType`, refusal: 'an input with no data',
    words: "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'. But no field is set",
    http: { json: { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, jsonIn('INPUT1')] } },
  },
  {
    source: `${HTTP} ValidateInputContentType`, refusal: 'an input with both data and binary_data_size',
    words: "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'. But set 'data' 'binary_data_size'",
    http: { json: { inputs: [{ ...jsonIn('INPUT0'), parameters: { binary_data_size: 64 } }, jsonIn('INPUT1')] } },
  },
  { source: `${HTTP} CheckBinaryInputData`, refusal: 'a negative binary_data_size', words: "Unable to parse 'binary_data_size'", http: binary({ inputs: [binIn('INPUT0', -64), binIn('INPUT1', 64)] }, [RAW16, RAW16]) },
  {
    source: `${HTTP} ParseJsonTritonIO`, refusal: 'binary data shorter than binary_data_size',
    words: "unexpected size for input 'INPUT1', expecting 64 additional bytes for model 'simple'", http: binary({ inputs: [binIn('INPUT0', 64), binIn('INPUT1', 64)] }, [RAW16]),
  },
  {
    source: `${HTTP} ParseJsonTritonIO`, refusal: 'binary data left over after the inputs',
    words: "unexpected additional input data for model 'simple'", http: binary({ inputs: [binIn('INPUT0', 64), binIn('INPUT1', 64)] }, [RAW16, RAW16, RAW16]),
  },
  {
    source: `${HTTP} GetInferenceHeaderLength`, refusal: 'an Inference-Header-Content-Length past the body',
    words: 'inference header size should be in range (0, ', http: binary({ inputs: good() }, [], '100000'),
  },
  { source: `${HTTP} ParseJsonTritonIO`, refusal: "a 'data' that is not an array", words: "Unable to parse 'data'", http: { json: { inputs: [jsonIn('INPUT0', [1, 16], 5), jsonIn('INPUT1')] } } },
  {
    source: `${HTTP} ReadDataFromJson`, refusal: "fewer 'data' elements than the shape holds",
    words: "Unable to parse 'data': Shape does not match true shape of 'data' field", http: { json: { inputs: [jsonIn('INPUT0', [1, 16], RANGE16.slice(1)), jsonIn('INPUT1')] } },
  },
  { source: `${HTTP} ReadDataFromJsonHelper (TritonJson AsInt)`, refusal: 'a JSON value that is not of the datatype', words: "Unable to parse 'data'", http: { json: { inputs: [jsonIn('INPUT0', [1, 16], [...RANGE16.slice(1), 'x']), jsonIn('INPUT1')] } } },
  {
    source: `${HTTP} ReadDataFromJson`, refusal: 'FP16 data in JSON', model: 'identity_fp16',
    words: 'receiving FP16 data via JSON is not supported. Please use the binary data format for input INPUT0', http: { json: { inputs: [jsonIn('INPUT0', [1, 2], [1, 2], 'FP16')] } },
  },
  { source: `${HTTP} ParseJsonTritonParams`, refusal: "a 'parameters' that is not an object", words: 'failed to get request params.', http: { json: { inputs: good(), parameters: [1] } } },
  { source: `${HTTP} ParseJsonTritonParams`, refusal: "a 'priority' that is not an unsigned integer", words: "Unable to parse 'priority'", http: { json: params({ priority: -1 }) } },
  { source: `${HTTP} ParseJsonTritonParams`, refusal: "a 'timeout' that is not an unsigned integer", words: "Unable to parse 'timeout'", http: { json: params({ timeout: 'soon' }) } },
  { source: `${HTTP} ParseJsonTritonParams`, refusal: "a 'sequence_start' that is not a boolean", words: "Unable to parse 'sequence_start'", http: { json: params({ sequence_start: 1 }) } },
  { source: `${HTTP} ParseJsonTritonParams`, refusal: "a 'binary_data_output' that is not a boolean", words: "Unable to parse 'binary_data_output'", http: { json: params({ binary_data_output: 'yes' }) } },
  { source: `${HTTP} ParseJsonTritonParams`, refusal: "a 'sequence_id' that is neither an unsigned integer nor a string", words: "Unable to parse 'sequence_id'", http: { json: params({ sequence_id: true }) } },
  {
    source: `${HTTP} SetTritonParameterFromJsonParameter`, refusal: 'a request parameter of an object value',
    words: "parameter 'x' has invalid type. It should be either 'int', 'bool', or 'string'.", http: { json: params({ x: { a: 1 } }) },
  },
  {
    source: `${HTTP} ParseJsonTritonParams; ${GRPC} SetInferenceRequestMetadata (qa/L0_parameters)`, refusal: "a request parameter named 'triton_…'",
    words: "parameter keys starting with 'triton_' are reserved for Triton usage", http: { json: params({ triton_x: 1 }) }, grpc: grpcGood({ parameters: { triton_x: { bool_param: true } } }),
  },
  { source: `${HTTP} ParseJsonTritonIO`, refusal: "an 'outputs' that is not an array", words: "Unable to parse 'outputs'", http: { json: { inputs: good(), outputs: { name: 'OUTPUT0' } } } },
  { source: `${HTTP} CheckBinaryOutputData`, refusal: "an output 'binary_data' that is not a boolean", words: "Unable to parse 'binary_data'", http: { json: { inputs: good(), outputs: [{ name: 'OUTPUT0', parameters: { binary_data: 1 } }] } } },
  { source: `${HTTP} CheckClassificationOutput`, refusal: "an output 'classification' that is not an unsigned integer", words: "Unable to set 'classification'", http: { json: { inputs: good(), outputs: [{ name: 'OUTPUT0', parameters: { classification: -2 } }] } } },
  {
    source: `${HTTP} ValidateOutputParameter`, refusal: 'an output in shared memory and classified',
    words: "Output can't set both 'shared_memory_region' and 'classification'", http: { json: { inputs: good(), outputs: [{ name: 'OUTPUT0', parameters: { shared_memory_region: 'r', shared_memory_byte_size: 64, classification: 2 } }] } },
  },
  {
    source: `${HTTP} ValidateOutputParameter`, refusal: 'an output in shared memory and binary',
    words: "Output can't set both 'shared_memory_region' and 'binary_data'", http: { json: { inputs: good(), outputs: [{ name: 'OUTPUT0', parameters: { shared_memory_region: 'r', shared_memory_byte_size: 64, binary_data: true } }] } },
  },
  {
    source: `${HTTP} CheckSharedMemoryData`, refusal: "a 'shared_memory_region' that is not a string",
    words: "Unable to parse 'shared_memory_region'", http: { json: { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: { shared_memory_region: 7 } }, jsonIn('INPUT1')] } },
  },
  {
    source: `${HTTP} CheckSharedMemoryData`, refusal: "a 'shared_memory_offset' that is not an unsigned integer",
    words: "Unable to parse 'shared_memory_offset'", http: { json: { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: { shared_memory_region: 'r', shared_memory_offset: -1 } }, jsonIn('INPUT1')] } },
  },
  { source: `${HTTP} DecompressBuffer`, refusal: 'a Content-Encoding the server cannot decode', words: 'Unsupported compression type', http: { body: '{}', headers: { 'Content-Encoding': 'br' } } },
  {
    source: `${HTTP} HandleInfer (qa/L0_http infer_size_limit_test.py)`, refusal: 'a body over --http-max-input-size',
    words: 'exceeds the maximum allowed value of 1048576. Use --http-max-input-size to increase the limit.', http: { body: `{"inputs":[],"pad":"${'x'.repeat(1 << 20)}"}` },
  },
  { source: `${HTTP} CheckTransactionPolicy`, refusal: 'HTTP infer on a decoupled model', model: 'repeat_int32', words: "HTTP end point doesn't support models with decoupled transaction policy", http: { json: { inputs: [] } } },
  {
    source: `${CORE} Normalize`, refusal: 'a raw binary body for a model of two inputs',
    words: "Raw request must only have 1 input (found 1) to be deduced but got 2 inputs in 'simple' model configuration", http: { body: RAW16, headers: { 'Inference-Header-Content-Length': '0' } },
  },
  // The generate extension.
  {
    source: `${HTTP} HandleGenerate`, refusal: 'generate with a compressed body',
    words: "Unsupported content-encoding, only 'identity' is supported.", http: { path: '/v2/models/simple/generate', body: '{}', headers: { 'Content-Encoding': 'gzip' } },
  },
  {
    source: `${HTTP} GenerateRequestClass::ExactMappingInput`, refusal: "generate values that do not fit the input's shape",
    words: "The schema can not convert input 'INPUT0' to tensor with proper shape", http: { path: '/v2/models/simple/generate', json: { INPUT0: [1, 2, 3], INPUT1: RANGE16 } },
  },
  {
    source: `${HTTP} GenerateRequestClass::ConvertGenerateRequest`, refusal: "generate 'parameters' that are not an object",
    words: "Expected JSON object for keyword: 'parameters'", http: { path: '/v2/models/simple/generate', json: { INPUT0: RANGE16, INPUT1: RANGE16, parameters: 3 } },
  },
  {
    source: `${CORE} AddOriginalInput (generate)`, refusal: 'generate naming an input twice',
    words: "input 'INPUT0' already exists in request", http: { path: '/v2/models/simple/generate', body: `{"INPUT0":${JSON.stringify(RANGE16)},"INPUT1":${JSON.stringify(RANGE16)},"parameters":{"INPUT0":${JSON.stringify(RANGE16)}}}` },
  },
  // The gRPC request message.
  {
    source: 'server common.cc GetModelVersionFromString', refusal: 'a model version that is not a number',
    words: "failed to get model version from specified version string 'abc'", grpc: grpcGood({ model_version: 'abc' }),
  },
  {
    source: `${GRPC} InferGRPCToInput`, refusal: 'contents and raw_input_contents together',
    words: "contents field must not be specified when using raw_input_contents for 'INPUT0' for model 'simple'",
    grpc: { inputs: [{ ...grpcIn('INPUT0'), contents: { int_contents: RANGE16 } }, grpcIn('INPUT1')], raw_input_contents: [RAW16] },
  },
  {
    source: `${GRPC} InferGRPCToInput`, refusal: 'an input with neither contents nor raw_input_contents', words: "unable to find data for input tensor 'INPUT1' for model 'simple' in request.",
    grpc: { inputs: [grpcIn('INPUT0'), grpcIn('INPUT1')], raw_input_contents: [RAW16] },
  },
  {
    source: `${GRPC} InferGRPCToInputHelper`, refusal: 'contents of another datatype',
    words: "unexpected explicit tensor data for input tensor 'INPUT0' for model 'simple' of type 'FP32', expected datatype 'INT32'",
    grpc: { inputs: [{ ...grpcIn('INPUT0'), contents: { fp32_contents: RANGE16 } }, { ...grpcIn('INPUT1'), contents: { int_contents: RANGE16 } }] },
  },
  {
    source: `${GRPC} SetInferenceRequestMetadata (TRITONSERVER_StringToDataType), then ${CORE} Normalize`, refusal: 'an unknown datatype over gRPC',
    words: "inference input 'INPUT0' data-type is 'INVALID', but model 'simple' expects 'INT32'", grpc: grpcGood({ inputs: [grpcIn('INPUT0', [1, 16], 'INT33'), grpcIn('INPUT1')] }),
  },
  { source: `${GRPC} SetInferenceRequestMetadata`, refusal: 'a negative priority', words: "invalid value for 'priority', expected value >= 0.", grpc: grpcGood({ parameters: { priority: { int64_param: '-1' } } }) },
  {
    source: `${GRPC} SetInferenceRequestMetadata`, refusal: 'a priority of another type', words: "invalid value type for 'priority' parameter, expected int64_param or uint64_param.",
    grpc: grpcGood({ parameters: { priority: { string_param: 'high' } } }),
  },
  { source: `${GRPC} SetInferenceRequestMetadata`, refusal: 'a timeout of another type', words: "invalid value type for 'timeout' parameter, expected int64_param.", grpc: grpcGood({ parameters: { timeout: { bool_param: true } } }) },
  {
    source: `${GRPC} SetInferenceRequestMetadata`, refusal: 'a sequence_start of another type', words: "invalid value type for 'sequence_start' parameter, expected bool_param.",
    grpc: grpcGood({ parameters: { sequence_start: { int64_param: '1' } } }),
  },
  {
    source: `${GRPC} SetInferenceRequestMetadata`, refusal: 'a sequence_id of another type', words: "invalid value type for 'sequence_id' parameter, expected int64_param or string_param.",
    grpc: grpcGood({ parameters: { sequence_id: { bool_param: true } } }),
  },
  {
    source: `${GRPC} SetInferenceRequestMetadata`, refusal: 'a custom parameter of another type', words: "invalid value type for 'x' parameter, expected int64_param, bool_param, or string_param.",
    grpc: grpcGood({ parameters: { x: { uint64_param: '1' } } }),
  },
  {
    source: `${GRPC} SetInferenceRequestMetadata`, refusal: "a 'triton_' parameter that is not one of the allowed ones",
    words: "Only the following keys starting with 'triton_' are allowed: triton_enable_empty_final_response", grpc: grpcGood({ parameters: { triton_x: { bool_param: true } } }),
  },
  {
    source: `${GRPC} ParseClassificationParams`, refusal: 'a classification count of another type', words: "invalid value type for 'classification' parameter, expected int64_param",
    grpc: grpcGood({ outputs: [{ name: 'OUTPUT0', parameters: { classification: { string_param: '2' } } }] }),
  },
  {
    source: `${GRPC} ParseClassificationParams`, refusal: 'a classification count below 1', words: "invalid value for 'classification' parameter, expected >= 0",
    grpc: grpcGood({ outputs: [{ name: 'OUTPUT0', parameters: { classification: { int64_param: '0' } } }] }),
  },
  {
    source: `${GRPC} InferAllocatorPayload`, refusal: 'a classified output in shared memory, over gRPC', words: "output can't set both 'shared_memory_region' and 'classification'",
    grpc: grpcGood({ outputs: [{ name: 'OUTPUT0', parameters: { shared_memory_region: { string_param: 'r' }, shared_memory_byte_size: { int64_param: '64' }, classification: { int64_param: '2' } } }] }),
  },
  // Model and version lookup, and the request checked against the model's config (both protocols).
  {
    source: 'core model_repository_manager.cc ModelRepositoryManager::FindModelIdentifier', refusal: 'an unknown model', model: 'nope',
    words: "Request for unknown model: 'nope' is not found", http: { json: { inputs: good() } }, grpc: grpcGood(),
  },
  {
    source: "core model_lifecycle.cc ModelLifeCycle::GetModel, with model_repository_manager.cc's 'Request for unknown model: ' in front", refusal: 'a version the model does not have',
    words: "Request for unknown model: 'simple' version 7 is not found", http: { path: '/v2/models/simple/versions/7/infer', json: { inputs: good() } }, grpc: grpcGood({ model_version: '7' }),
  },
  {
    source: `${CORE} Normalize (qa/L0_input_validation)`, refusal: 'a required input missing',
    words: "expected 2 inputs but got 1 inputs for model 'simple'. Got input(s) ['INPUT0'], but missing required input(s) ['INPUT1']. Please provide all required input(s).",
    http: { json: { inputs: [jsonIn('INPUT0')] } }, grpc: { inputs: [grpcIn('INPUT0')], raw_input_contents: [RAW16] },
  },
  {
    source: `${CORE} Normalize (qa/L0_input_validation)`, refusal: 'a required input missing where others are optional', model: 'optional_in',
    words: "expected number of inputs between 1 and 2 but got 0 inputs for model 'optional_in'. Got input(s) [], but missing required input(s) ['X']. Please provide all required input(s).",
    http: { json: { inputs: [] } }, grpc: { inputs: [] },
  },
  {
    source: `${CORE} Normalize (LogRequest)`, refusal: "a refused request's id in front of the message",
    words: "[request id: my-id] expected 2 inputs but got 1 inputs for model 'simple'",
    http: { json: { id: 'my-id', inputs: [jsonIn('INPUT0')] } }, grpc: { id: 'my-id', inputs: [grpcIn('INPUT0')], raw_input_contents: [RAW16] },
  },
  {
    source: 'core model.cc Model::GetInput', refusal: 'an input the model does not have', words: "unexpected inference input 'INPUTX' for model 'simple'",
    http: { json: { inputs: [jsonIn('INPUT0'), jsonIn('INPUTX')] } }, grpc: { inputs: [grpcIn('INPUT0'), grpcIn('INPUTX')], raw_input_contents: [RAW16, RAW16] },
  },
  {
    source: `${CORE} AddOriginalInput`, refusal: 'an input given twice', words: "input 'INPUT0' already exists in request",
    http: { json: { inputs: [jsonIn('INPUT0'), jsonIn('INPUT0')] } }, grpc: { inputs: [grpcIn('INPUT0'), grpcIn('INPUT0')], raw_input_contents: [RAW16, RAW16] },
  },
  {
    source: 'core model.cc Model::GetOutput', refusal: 'an output the model does not have', words: "unexpected inference output 'NOPE' for model 'simple'",
    http: { json: { inputs: good(), outputs: [{ name: 'NOPE' }] } }, grpc: grpcGood({ outputs: [{ name: 'NOPE' }] }),
  },
  {
    source: `${CORE} Normalize`, refusal: 'an input of another datatype', words: "inference input 'INPUT0' data-type is 'FP32', but model 'simple' expects 'INT32'",
    http: { json: { inputs: [jsonIn('INPUT0', [1, 16], RANGE16, 'FP32'), jsonIn('INPUT1')] } }, grpc: { inputs: [grpcIn('INPUT0', [1, 16], 'FP32'), grpcIn('INPUT1')], raw_input_contents: [RAW16, RAW16] },
  },
  {
    source: `${CORE} Normalize`, refusal: 'an input without the batch dimension', words: "input 'INPUT0' has no shape but model requires batch dimension for 'simple'",
    http: { json: { inputs: [jsonIn('INPUT0', [], [1]), jsonIn('INPUT1')] } }, grpc: { inputs: [grpcIn('INPUT0', []), grpcIn('INPUT1')], raw_input_contents: [int32Bytes([1]), RAW16] },
  },
  {
    source: `${CORE} Normalize`, refusal: 'inputs of different batch sizes', words: "input 'INPUT1' batch size does not match other inputs for 'simple'",
    http: { json: { inputs: [jsonIn('INPUT0'), jsonIn('INPUT1', [2, 16], [...RANGE16, ...RANGE16])] } },
    grpc: { inputs: [grpcIn('INPUT0'), grpcIn('INPUT1', [2, 16])], raw_input_contents: [RAW16, Buffer.concat([RAW16, RAW16])] },
  },
  {
    source: `${CORE} Normalize`, refusal: 'a batch larger than max_batch_size', words: "inference request batch-size must be <= 8 for 'simple'",
    http: binary({ inputs: [{ ...binIn('INPUT0', 576), shape: [9, 16] }, { ...binIn('INPUT1', 576), shape: [9, 16] }] }, [Buffer.alloc(576), Buffer.alloc(576)]),
    grpc: { inputs: [grpcIn('INPUT0', [9, 16]), grpcIn('INPUT1', [9, 16])], raw_input_contents: [Buffer.alloc(576), Buffer.alloc(576)] },
  },
  {
    source: `${CORE} Normalize`, refusal: 'an input of the wrong shape', words: "unexpected shape for input 'INPUT0' for model 'simple'. Expected [-1,16], got [1,8]",
    http: { json: { inputs: [jsonIn('INPUT0', [1, 8], RANGE16.slice(0, 8)), jsonIn('INPUT1')] } }, grpc: { inputs: [grpcIn('INPUT0', [1, 8]), grpcIn('INPUT1')], raw_input_contents: [int32Bytes(RANGE16.slice(0, 8)), RAW16] },
  },
  {
    source: `${CORE} ValidateRequestInputs (qa/L0_input_validation)`, refusal: 'tensor bytes that do not fill the shape', words: "input byte size mismatch for input 'INPUT0' for model 'simple'. Expected 64, got 60",
    http: binary({ inputs: [binIn('INPUT0', 60), binIn('INPUT1', 64)] }, [RAW16.subarray(4), RAW16]), grpc: { inputs: [grpcIn('INPUT0'), grpcIn('INPUT1')], raw_input_contents: [RAW16.subarray(4), RAW16] },
  },
  {
    source: `${CORE} ValidateBytesInputs (qa/L0_input_validation)`, refusal: 'fewer BYTES elements than the shape holds', model: 'simple_string',
    words: "expected 16 string elements for inference input 'INPUT0' for model 'simple_string', got 15",
    grpc: { inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [1, 16], contents: { bytes_contents: RANGE16.slice(1).map((i) => Buffer.from(String(i))) } }, { name: 'INPUT1', datatype: 'BYTES', shape: [1, 16], contents: { bytes_contents: RANGE16.map((i) => Buffer.from(String(i))) } }] },
  },
  // The dynamic batcher's queue policy: the models wait IN milliseconds per request on one instance.
  {
    source: 'core scheduler_utils.cc PriorityQueue::PolicyQueue::Enqueue (qa/L0_queue_policy)', refusal: 'a request past max_queue_size', model: 'wait_queue', concurrent: 4,
    words: 'Exceeds maximum queue size', http: { json: { inputs: [jsonIn('IN', [1, 1], [300])] } }, grpc: { inputs: [grpcIn('IN', [1, 1])], raw_input_contents: [int32Bytes([300])] },
  },
  {
    source: 'core scheduler_utils.cc PriorityQueue::PolicyQueue::ApplyPolicy (qa/L0_queue_policy)', refusal: 'a request whose queue timeout expires', model: 'wait_timeout', concurrent: 3,
    words: 'Request timeout expired', http: { json: { inputs: [jsonIn('IN', [1, 1], [300])] } }, grpc: { inputs: [grpcIn('IN', [1, 1])], raw_input_contents: [int32Bytes([300])] },
  },
  // The classification extension.
  {
    source: 'server classification.cc TopkClassifications', refusal: 'classification of a BYTES output', model: 'simple_string',
    words: "class result not available for output due to unsupported type 'BYTES'",
    http: { json: { inputs: [jsonIn('INPUT0', [1, 16], RANGE16.map(String), 'BYTES'), jsonIn('INPUT1', [1, 16], RANGE16.map(String), 'BYTES')], outputs: [{ name: 'OUTPUT0', parameters: { classification: 2 } }] } },
    grpc: {
      inputs: [0, 1].map((i) => ({ name: `INPUT${i}`, datatype: 'BYTES', shape: [1, 16], contents: { bytes_contents: RANGE16.map((v) => Buffer.from(String(v))) } })),
      outputs: [{ name: 'OUTPUT0', parameters: { classification: { int64_param: '2' } } }],
    },
  },
  {
    source: `${CORE} ValidateBytesInputs (qa/L0_input_validation)`, refusal: 'more BYTES elements than the shape holds', model: 'simple_string',
    words: "unexpected number of string elements 17 for inference input 'INPUT0' for model 'simple_string', expecting 16",
    http: binary({ inputs: [0, 1].map((i) => ({ name: `INPUT${i}`, datatype: 'BYTES', shape: [1, 16], parameters: { binary_data_size: i === 0 ? STRINGS17.byteLength : STRINGS16.byteLength } })) }, [STRINGS17, STRINGS16]),
    grpc: { inputs: [0, 1].map((i) => ({ name: `INPUT${i}`, datatype: 'BYTES', shape: [1, 16] })), raw_input_contents: [STRINGS17, STRINGS16] },
  },
  // The sequence batcher.
  {
    source: 'core sequence_batch_scheduler/sequence_utils.h Sequencer::SetupSequenceRequest (qa/L0_sequence_batcher)', refusal: 'a sequence model without a correlation id', model: 'simple_sequence',
    words: "inference request to model 'simple_sequence' must specify a non-zero or non-empty correlation ID",
    http: { json: { inputs: [jsonIn('INPUT', [1, 1], [1])] } }, grpc: { inputs: [grpcIn('INPUT', [1, 1])], raw_input_contents: [int32Bytes([1])] },
  },
  {
    source: 'core sequence_batch_scheduler.cc SequenceBatchScheduler::Enqueue (qa/L0_sequence_batcher)', refusal: 'a sequence that was not started', model: 'simple_sequence',
    words: "inference request for sequence 77 to model 'simple_sequence' must specify the START flag on the first request of the sequence",
    http: { json: { inputs: [jsonIn('INPUT', [1, 1], [1])], parameters: { sequence_id: 77 } } },
    grpc: { inputs: [grpcIn('INPUT', [1, 1])], raw_input_contents: [int32Bytes([1])], parameters: { sequence_id: { int64_param: '77' } } },
  },
  {
    source: 'core sequence_batch_scheduler.cc SequenceBatchScheduler::Enqueue', refusal: 'a batch of more than one to a sequence model', model: 'simple_sequence',
    words: "inference request to model 'simple_sequence' must specify batch-size 1 due to requirements of sequence batcher",
    http: { json: { inputs: [jsonIn('INPUT', [2, 1], [1, 2])], parameters: { sequence_id: 78, sequence_start: true } } },
    grpc: { inputs: [grpcIn('INPUT', [2, 1])], raw_input_contents: [int32Bytes([1, 2])], parameters: { sequence_id: { int64_param: '78' }, sequence_start: { bool_param: true } } },
  },
  {
    source: 'core sequence_batch_scheduler.cc SequenceBatchScheduler::Enqueue (the batch size is checked before the correlation id)',
    refusal: 'a batch of more than one without a correlation id', model: 'simple_sequence',
    words: "inference request to model 'simple_sequence' must specify batch-size 1 due to requirements of sequence batcher",
    http: { json: { inputs: [jsonIn('INPUT', [2, 1], [1, 2])] } }, grpc: { inputs: [grpcIn('INPUT', [2, 1])], raw_input_contents: [int32Bytes([1, 2])] },
  },
];
