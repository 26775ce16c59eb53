import type { InferenceResponse, Parameters, ParameterValue } from '../../inference/index.js';
import type { InferOutputTensorOut, InferParameterOut, ModelInferResponseOut } from './messages.js';
import { bigVarintSize, delimitedSize, ResponseWriter, utf8Length, varintSize } from './response-writer.js';
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

/**
 * The ModelInferResponse of `res` encoded straight into one buffer with gRPC's 5-byte prefix: the same bytes
 * protobufjs writes for encodeInferResponse's object (whose string fields are all set, so written even when
 * empty); `streamed` wraps it as a ModelStreamInferResponse's
 * infer_response, with an empty error_message. Outputs are copied once, from the backend's buffers into the
 * message.
 */
export function inferResponseFrame(res: InferenceResponse, extra?: Record<string, InferParameterOut>, streamed = false): Buffer {
  const version = String(res.version);
  const nameLength = utf8Length(res.model);
  const versionLength = utf8Length(version);
  const idLength = utf8Length(res.id);
  const params = res.parameters !== undefined ? { ...encodeParameters(res.parameters), ...extra } : extra;
  const n = res.outputs.length;
  const raw: Uint8Array[] = new Array(n);
  const tensorSizes: number[] = new Array(n);
  let size = delimitedSize(nameLength) + delimitedSize(versionLength) + delimitedSize(idLength);
  if (params !== undefined) for (const k in params) size += delimitedSize(entrySize(k, params[k]!));
  for (let i = 0; i < n; i++) {
    const t = res.outputs[i]!;
    raw[i] = outputBytes(t);
    const ts = tensorSize(t.name, t.datatype, t.shape);
    tensorSizes[i] = ts;
    size += delimitedSize(ts) + delimitedSize(raw[i]!.byteLength);
  }
  // The stream's empty error_message is written out, as protobufjs writes a field that is set.
  const total = streamed ? 2 + delimitedSize(size) : size;
  const w = new ResponseWriter(Buffer.allocUnsafe(5 + total), 5);
  w.buf[0] = 0;
  w.buf.writeUInt32BE(total, 1);
  if (streamed) {
    w.tag(1, 2);
    w.varint(0);
    w.tag(2, 2);
    w.varint(size);
  }
  w.string(1, res.model, nameLength);
  w.string(2, version, versionLength);
  w.string(3, res.id, idLength);
  if (params !== undefined) for (const k in params) writeEntry(w, k, params[k]!);
  for (let i = 0; i < n; i++) {
    const t = res.outputs[i]!;
    w.tag(5, 2);
    w.varint(tensorSizes[i]!);
    writeTensor(w, t.name, t.datatype, t.shape);
  }
  for (let i = 0; i < n; i++) w.bytes(6, raw[i]!);
  return w.buf;
}

function tensorSize(name: string, datatype: string, shape: readonly number[]): number {
  let dims = 0;
  for (const d of shape) dims += varintSize(d);
  return delimitedSize(utf8Length(name)) + delimitedSize(utf8Length(datatype)) + (shape.length > 0 ? delimitedSize(dims) : 0);
}

function writeTensor(w: ResponseWriter, name: string, datatype: string, shape: readonly number[]): void {
  w.string(1, name, utf8Length(name));
  w.string(2, datatype, utf8Length(datatype));
  if (shape.length === 0) return;
  let dims = 0;
  for (const d of shape) dims += varintSize(d);
  w.tag(3, 2);
  w.varint(dims);
  for (const d of shape) w.varint(d);
}

/** A map entry: the key (field 1) and the InferParameter (field 2). */
function entrySize(key: string, v: InferParameterOut): number {
  return delimitedSize(utf8Length(key)) + delimitedSize(parameterSize(v));
}

function writeEntry(w: ResponseWriter, key: string, v: InferParameterOut): void {
  w.tag(4, 2);
  w.varint(entrySize(key, v));
  w.string(1, key, utf8Length(key));
  w.tag(2, 2);
  w.varint(parameterSize(v));
  writeParameter(w, v);
}

const int64Size = (v: number | string): number => (typeof v === 'number' ? varintSize(v) : bigVarintSize(BigInt(v)));

function parameterSize(v: InferParameterOut): number {
  if ('bool_param' in v) return 2;
  if ('int64_param' in v) return 1 + int64Size(v.int64_param);
  if ('uint64_param' in v) return 1 + int64Size(v.uint64_param);
  if ('string_param' in v) return delimitedSize(utf8Length(v.string_param));
  return 9;
}

function writeParameter(w: ResponseWriter, v: InferParameterOut): void {
  if ('bool_param' in v) {
    w.tag(1, 0);
    w.varint(v.bool_param ? 1 : 0);
  } else if ('int64_param' in v) {
    w.tag(2, 0);
    writeInt64(w, v.int64_param);
  } else if ('uint64_param' in v) {
    w.tag(5, 0);
    writeInt64(w, v.uint64_param);
  } else if ('string_param' in v) {
    w.string(3, v.string_param, utf8Length(v.string_param));
  } else {
    w.double(4, v.double_param);
  }
}

function writeInt64(w: ResponseWriter, v: number | string): void {
  if (typeof v === 'number') w.varint(v);
  else w.bigVarint(BigInt(v));
}
