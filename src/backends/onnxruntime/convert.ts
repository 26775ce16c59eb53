import type { Tensor as OrtTensor } from 'onnxruntime-node';
import type { DataType } from '../../tensor/datatype.js';
import type { DataType as ConfigDataType, ModelConfig } from '../../config/types.js';
import type { Tensor } from '../../tensor/tensor.js';
import { typedView, bytesOf } from '../../tensor/view.js';
import { invalidArg, type NereidError } from '../../errors.js';
import { bytesToOrtString, firstNul, ortStringToBytes } from './strings.js';
import type { OrtFeed } from './session.js';

/** Triton data types ⇄ ONNX Runtime tensor types. BF16 has no ORT CPU tensor type in Node. */
const TO_ORT: Partial<Record<DataType, OrtTensor.Type>> = {
  BOOL: 'bool', UINT8: 'uint8', UINT16: 'uint16', UINT32: 'uint32', UINT64: 'uint64',
  INT8: 'int8', INT16: 'int16', INT32: 'int32', INT64: 'int64',
  FP16: 'float16', FP32: 'float32', FP64: 'float64', BYTES: 'string',
};

const FROM_ORT = new Map<string, DataType>(Object.entries(TO_ORT).map(([k, v]) => [v as string, k as DataType]));

export function ortType(dt: DataType): OrtTensor.Type | undefined {
  return TO_ORT[dt];
}

/** ORT type name → Triton config enum name, as the onnxruntime backend's auto-complete reports it. */
export function configTypeOfOrt(t: string): ConfigDataType {
  if (t === 'string') return 'TYPE_STRING';
  if (t === 'bfloat16') return 'TYPE_BF16';
  const dt = FROM_ORT.get(t);
  return dt ? (`TYPE_${dt}` as ConfigDataType) : 'TYPE_INVALID';
}

/**
 * A Nereid tensor as an ORT input over the same memory (strings are converted: ORT takes JS strings, see
 * strings.ts). An element with a NUL byte, which ORT would cut short, is refused: requests are checked before
 * they are queued (nulFreeCheck), so this only guards other paths.
 */
export function toOrt(t: Tensor, type: OrtTensor.Type, dims: readonly number[]): OrtFeed {
  if (t.datatype === 'BYTES') {
    const nul = firstNul(t.data);
    if (nul !== -1) throw nulError(t.name, nul);
    const strings = new Array<string>(t.data.length);
    for (let i = 0; i < t.data.length; i++) strings[i] = bytesToOrtString(t.data[i]!);
    return { location: 'cpu', type: 'string', dims, data: strings };
  }
  // ORT wants its own typed array per type; BOOL rides in a Uint8Array, FP16 in a Uint16Array.
  return { location: 'cpu', type, dims, data: typedView(t.datatype, t.data) as Float32Array };
}

/** An ORT output (a tensor, or its dims and data from a worker) as a Nereid tensor over the same memory. */
export function fromOrt(name: string, datatype: DataType, o: { readonly dims: readonly number[]; readonly data: unknown }): Tensor {
  const shape = o.dims;
  if (datatype === 'BYTES') {
    const strings = o.data as string[];
    const data = new Array<Uint8Array>(strings.length);
    for (let i = 0; i < strings.length; i++) data[i] = ortStringToBytes(strings[i]!);
    return { name, datatype, shape, data };
  }
  return { name, datatype, shape, data: bytesOf(o.data as ArrayBufferView) };
}

/** The refusal of a BYTES element with a NUL byte, naming the input and the element (its index in the tensor). */
export function nulError(input: string, element: number, model?: string): NereidError {
  const where = model === undefined ? `input '${input}'` : `input '${input}' for model '${model}'`;
  return invalidArg(`element ${element} of ${where} contains a NUL byte, which ONNX Runtime string tensors cannot carry (the element would end there)`);
}

/**
 * The check of a request's BYTES inputs for NUL bytes, run before the request is queued so that one bad
 * request never fails a batch; undefined when the model has no BYTES input (nothing to check).
 */
export function nulFreeCheck(config: ModelConfig): ((inputs: readonly Tensor[]) => void) | undefined {
  const names = new Set(config.input.filter((i) => i.data_type === 'TYPE_STRING').map((i) => i.name));
  if (names.size === 0) return undefined;
  return (inputs) => {
    for (const t of inputs) {
      if (t.datatype !== 'BYTES' || !names.has(t.name)) continue;
      const nul = firstNul(t.data);
      if (nul !== -1) throw nulError(t.name, nul, config.name);
    }
  };
}
