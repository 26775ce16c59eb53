import { NereidError } from '../../errors.js';
import type { InferenceResponse, Parameters } from '../../inference/index.js';
import { serializeBytes } from '../../tensor/bytes.js';
import type { Tensor } from '../../tensor/tensor.js';
import { typedView } from '../../tensor/view.js';

/**
 * An InferenceResponse → the KServe v2 JSON header and the binary blobs that follow it. The JSON is written
 * as a string directly (numbers joined from typed arrays), which is several times faster than building an
 * object for JSON.stringify. Binary outputs are the backend's own buffers, not copies.
 */
export interface EncodedInfer {
  /** The JSON header: text, or its UTF-8 bytes when it was written in the JSON worker. */
  readonly json: string | Uint8Array;
  readonly blobs: Uint8Array[];
}

/**
 * BYTES elements written as JSON strings must be UTF-8: an element that is not is refused (Triton's JSON writer
 * refuses a document it cannot write, with the words below) rather than altered with U+FFFD replacements. A
 * leading byte-order mark is kept as the element's first character, not dropped.
 */
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const INVALID_JSON = 'Failed to accept document, invalid JSON.';

function bytesText(b: Uint8Array): string {
  try {
    return decoder.decode(b);
  } catch {
    throw new NereidError('INTERNAL', INVALID_JSON);
  }
}

export function encodeInfer(res: InferenceResponse, binaryOutputs: ReadonlyMap<string, boolean>, binaryDefault: boolean): EncodedInfer {
  const blobs: Uint8Array[] = [];
  let json = res.id ? `{"id":${JSON.stringify(res.id)},` : '{';
  json += `"model_name":${JSON.stringify(res.model)},"model_version":"${res.version}"`;
  if (res.parameters) json += `,"parameters":${encodeParameters(res.parameters)}`;
  json += ',"outputs":[';
  for (let i = 0; i < res.outputs.length; i++) {
    const t = res.outputs[i]!;
    if (i > 0) json += ',';
    json += `{"name":${JSON.stringify(t.name)},"datatype":"${t.datatype}","shape":[${t.shape.join(',')}]`;
    // Written into shared memory: name, datatype and shape only, as Triton answers.
    if (res.sharedMemoryOutputs?.has(t.name)) {
      json += '}';
      continue;
    }
    // Half floats have no JSON form in Triton's protocol; they always travel as binary.
    const binary = binaryOutputs.get(t.name) ?? (binaryDefault || t.datatype === 'FP16' || t.datatype === 'BF16');
    if (binary) {
      const blob = t.datatype === 'BYTES' ? serializeBytes(t.data) : t.data;
      blobs.push(blob);
      json += `,"parameters":{"binary_data_size":${blob.byteLength}}}`;
    } else {
      json += `,"data":${jsonData(t)}}`;
    }
  }
  json += ']}';
  return { json, blobs };
}

export function jsonData(t: Tensor): string {
  if (t.datatype === 'BYTES') {
    let s = '[';
    for (let i = 0; i < t.data.length; i++) s += (i > 0 ? ',' : '') + JSON.stringify(bytesText(t.data[i]));
    return s + ']';
  }
  if (t.datatype === 'BOOL') {
    let s = '[';
    for (let i = 0; i < t.data.length; i++) s += (i > 0 ? ',' : '') + (t.data[i] ? 'true' : 'false');
    return s + ']';
  }
  const a = typedView(t.datatype, t.data);
  if (t.datatype === 'FP32' || t.datatype === 'FP64') {
    // JSON has no NaN or infinity; write them as null rather than produce invalid JSON.
    for (let i = 0; i < a.length; i++) if (!Number.isFinite(a[i] as number)) return `[${Array.from(a as Float32Array, (v) => (Number.isFinite(v) ? v : 'null')).join(',')}]`;
  }
  return `[${a.join(',')}]`;
}

export function encodeParameters(p: Parameters): string {
  let s = '{';
  let first = true;
  for (const [k, v] of Object.entries(p)) {
    s += `${first ? '' : ','}${JSON.stringify(k)}:${typeof v === 'bigint' ? v.toString() : JSON.stringify(v)}`;
    first = false;
  }
  return s + '}';
}
