import type * as ort from 'onnxruntime-node';
import { NereidError } from '../../errors.js';
import type { ControlKind, DataType, ModelConfig, ModelInput, ModelOutput, SequenceControl } from '../../config/types.js';
import { configTypeOfOrt } from './convert.js';

/**
 * The checks Triton's onnxruntime backend makes when an instance loads (`ValidateBooleanSequenceControl`,
 * `ValidateTypedSequenceControl`, `ValidateInputs`, `ValidateOutputs` and `CompareDimsSupported`), in its order
 * and words, so that a config that does not fit the model is refused at load rather than per request.
 *
 * One difference: onnxruntime-node does not list a model's overridable initializers, which Triton accepts as
 * optional inputs, so an optional input the model does not list is let through here.
 */
export function checkConfigAgainstModel(config: ModelConfig, inputs: readonly Meta[], outputs: readonly Meta[], model: string): void {
  const byInput = new Map(inputs.map((m) => [m.name, m]));
  let expected = config.input.filter((i) => !i.optional).length + config.batch_input.length;
  const sb = config.sequence_batching;
  if (sb) {
    for (const kind of BOOLEAN_CONTROLS) if (checkControl(config, kind, byInput, model)) expected++;
    if (checkControl(config, 'CONTROL_SEQUENCE_CORRID', byInput, model)) expected++;
    expected += sb.state.length;
  }
  if (inputs.length !== expected) fail(`unable to load model '${model}', configuration expects ${expected} inputs, model provides ${inputs.length}`);
  for (const io of config.input) checkInput(config, io, byInput, model);
  const byOutput = new Map(outputs.map((m) => [m.name, m]));
  const batchOutputs = new Set(config.batch_output.flatMap((b) => b.target_name));
  for (const io of config.output) checkOutput(config, io, byOutput, batchOutputs.has(io.name), model);
  for (const s of sb?.state ?? []) {
    const m = byOutput.get(s.output_name) ?? notAllowed('output', s.output_name, byOutput);
    checkType(s.data_type, m, 'output state', s.output_name, model);
  }
}

export type Meta = ort.InferenceSession.ValueMetadata;

const BOOLEAN_CONTROLS = ['CONTROL_SEQUENCE_START', 'CONTROL_SEQUENCE_END', 'CONTROL_SEQUENCE_READY'] as const;

const fail = (message: string, code: 'INVALID_ARG' | 'INTERNAL' = 'INVALID_ARG'): never => {
  throw new NereidError(code, message);
};

/** The model's dims, a symbolic or unknown dim read as -1 as ONNX Runtime's C API reports it. */
function modelDims(m: Meta): number[] {
  return m.isTensor ? m.shape.map((d) => (typeof d === 'number' && d >= 0 ? d : -1)) : [];
}

const shapeText = (dims: readonly number[]): string => `[${dims.join(',')}]`;

/** Core's `CheckAllowedModelInput` / `CheckAllowedModelOutput`: the model's names, sorted, in the message. */
function notAllowed(kind: 'input' | 'output', name: string, known: Map<string, Meta>): never {
  return fail(`unexpected inference ${kind} '${name}', allowed ${kind}s are: ${[...known.keys()].sort().join(', ')}`);
}

/** A control the config names must be a model input of dims [1] (after the batch dim) and the control's type. */
function checkControl(config: ModelConfig, kind: ControlKind, byInput: Map<string, Meta>, model: string): boolean {
  const found = config.sequence_batching!.control_input.flatMap((ci) => ci.control.filter((c) => c.kind === kind).map((c) => ({ name: ci.name, c })))[0];
  if (!found) return false;
  const m = byInput.get(found.name);
  if (!m) fail(`configuration specified sequence control '${found.name}', but model does not provide that input`, 'INTERNAL');
  const dims = modelDims(m!).slice(config.max_batch_size > 0 ? 1 : 0);
  if (dims.length !== 1 || dims[0] !== 1) {
    fail(`unable to load model '${model}', sequence control '${found.name}' in model has dims ${shapeText(dims)} but dims [1] is expected`);
  }
  const type = kind === 'CONTROL_SEQUENCE_CORRID' ? found.c.data_type : booleanControlType(found.c);
  if (!m!.isTensor || type !== configTypeOfOrt(m!.type)) {
    fail(`unable to load model '${model}', sequence control '${found.name}', the model expects data-type ${onnxTypeName(m!)} but the model configuration specifies data-type ${type}`);
  }
  return true;
}

function booleanControlType(c: SequenceControl): DataType {
  if (c.int32_false_true.length > 0) return 'TYPE_INT32';
  if (c.fp32_false_true.length > 0) return 'TYPE_FP32';
  return 'TYPE_BOOL';
}

const ONNX_TYPE_NAMES: Record<string, string> = {
  float32: 'FLOAT', uint8: 'UINT8', int8: 'INT8', uint16: 'UINT16', int16: 'INT16', int32: 'INT32', int64: 'INT64',
  string: 'STRING', bool: 'BOOL', float16: 'FLOAT16', float64: 'DOUBLE', uint32: 'UINT32', uint64: 'UINT64', bfloat16: 'BFLOAT16',
};

const onnxTypeName = (m: Meta): string => (m.isTensor ? ONNX_TYPE_NAMES[m.type] ?? 'UNDEFINED' : 'UNDEFINED');

/** Triton names the model's type by its server data type, so an ONNX string tensor reads TYPE_BYTES. */
function providedType(m: Meta): string {
  if (!m.isTensor) return 'TYPE_<invalid>';
  if (m.type === 'string') return 'TYPE_BYTES';
  const t = configTypeOfOrt(m.type);
  return t === 'TYPE_INVALID' || t === 'TYPE_BF16' ? 'TYPE_<invalid>' : t;
}

function checkType(dataType: DataType, m: Meta, kind: string, name: string, model: string): void {
  if (dataType === 'TYPE_INVALID' || dataType === 'TYPE_BF16') {
    fail(`unsupported datatype ${dataType} for ${kind} '${name}' for model '${model}'`, 'INTERNAL');
  }
  if (!m.isTensor || configTypeOfOrt(m.type) !== dataType) {
    fail(`unable to load model '${model}', configuration expects datatype ${dataType} for ${kind} '${name}', model provides ${providedType(m)}`);
  }
}

function checkInput(config: ModelConfig, io: ModelInput, byInput: Map<string, Meta>, model: string): void {
  if (io.optional && config.max_batch_size !== 0) {
    fail(`unable to load model '${model}', optional input '${io.name}' is not supported for models that support batching`);
  }
  const m = byInput.get(io.name);
  if (!m) {
    if (io.optional) return;
    notAllowed('input', io.name, byInput);
  }
  checkType(io.data_type, m!, 'input', io.name, model);
  const dims = io.reshape ? io.reshape.shape : io.dims;
  if (io.optional && io.allow_ragged_batch) {
    fail(`unable to load model '${model}', configuration expects model provides input with shape [-1] for ragged input '${io.name}', which is not supported for optional input`);
  }
  const shape = modelDims(m!);
  if (io.allow_ragged_batch) {
    if (shape.length !== 1 || shape[0] !== -1) {
      fail(`unable to load model '${model}', configuration expects model provides input with shape [-1]  for ragged input '${io.name}', model provides ${shapeText(shape)}`);
    }
    return;
  }
  checkDims(config, io.name, shape, dims, false, model);
}

function checkOutput(config: ModelConfig, io: ModelOutput, byOutput: Map<string, Meta>, isBatchOutput: boolean, model: string): void {
  const m = byOutput.get(io.name) ?? notAllowed('output', io.name, byOutput);
  checkType(io.data_type, m, 'output', io.name, model);
  // A batch output's shape need not match the model's.
  if (!isBatchOutput) checkDims(config, io.name, modelDims(m), io.reshape ? io.reshape.shape : io.dims, true, model);
}

/**
 * `CompareDimsSupported`: with batching the model's first dim must be -1 and the rest match the config's dims;
 * a -1 in the model matches anything for an input, while an output's dims must match exactly. A scalar model
 * tensor takes only 1s in the config.
 */
function checkDims(config: ModelConfig, name: string, shape: readonly number[], dims: readonly number[], exact: boolean, model: string): void {
  if (shape.length === 0) {
    if (dims.some((d) => d !== 1)) {
      fail(`unable to load model '${model}', scalar tensor '${name}', should only provide 1 in the model configuration when the model doesn't support batching. Model configuration provided: ${shapeText(dims)}.`);
    }
    return;
  }
  const batching = config.max_batch_size > 0;
  const where = `model '${model}', tensor '${name}'`;
  if (batching && shape[0] !== -1) {
    fail(`${where}: for the model to support batching the shape should have at least 1 dimension and the first dimension must be -1; but shape expected by the model is ${shapeText(shape)}`);
  }
  const full = batching ? [-1, ...dims] : [...dims];
  const fits = shape.length === full.length && shape.every((d, i) => (!exact && d === -1) || d === full[i]);
  if (fits) return;
  const configured = batching
    ? `${full.length} dimensions (an initial batch dimension because max_batch_size > 0 followed by the explicit tensor shape, making complete shape ${shapeText(full)})`
    : `${full.length} dimensions (shape ${shapeText(full)})`;
  fail(`${where}: the model expects ${shape.length} dimensions (shape ${shapeText(shape)}) but the model configuration specifies ${configured}`);
}
