import type { InferenceResponse, Parameters, ParameterValue } from '../../inference/index.js';
import type { InferOutputTensorOut, InferParameterOut, ModelInferResponseOut } from './messages.js';
import { outputBytes } from './tensor-codec.js';

/**
 * An InferenceResponse → a ModelInferResponse to encode: every output's data in raw_output_contents, in the
 * order of `outputs` (Triton never uses the typed contents in responses). Fixed-size outputs are the
 * backend's own buffers; protobufjs copies them once into the encoded message.
 */
export function encodeInferResponse(res: InferenceResponse, extra?: Record<string, InferParameterOut>): ModelInferResponseOut {
  const n = res.outputs.length;
  const outputs: InferOutputTensorOut[] = new Array(n);
  const raw: Uint8Array[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const t = res.outputs[i]!;
    outputs[i] = { name: t.name, datatype: t.datatype, shape: t.shape };
    raw[i] = outputBytes(t);
  }
  const out: ModelInferResponseOut = { model_name: res.model, model_version: String(res.version), id: res.id, outputs, raw_output_contents: raw };
  if (res.parameters !== undefined || extra !== undefined) out.parameters = { ...encodeParameters(res.parameters), ...extra };
  return out;
}

export function encodeParameters(p: Parameters | undefined): Record<string, InferParameterOut> {
  const out: Record<string, InferParameterOut> = {};
  if (p === undefined) return out;
  for (const k in p) out[k] = encodeParameter(p[k]!);
  return out;
}

const INT64_MAX = (1n << 63n) - 1n;

function encodeParameter(v: ParameterValue): InferParameterOut {
  switch (typeof v) {
    case 'boolean': return { bool_param: v };
    case 'string': return { string_param: v };
    case 'number': return Number.isInteger(v) ? { int64_param: v } : { double_param: v };
    case 'bigint': return v > INT64_MAX ? { uint64_param: v.toString() } : { int64_param: v.toString() };
  }
}
