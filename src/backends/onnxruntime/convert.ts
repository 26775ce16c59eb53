import type { Tensor as OrtTensor } from 'onnxruntime-node';
import type { DataType } from '../../tensor/datatype.js';
import type { DataType as ConfigDataType } from '../../config/types.js';
import type { Tensor } from '../../tensor/tensor.js';
import { typedView, bytesOf } from '../../tensor/view.js';

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

const decoder = new TextDecoder();
const encoder = new TextEncoder();

type OrtTensorCtor = typeof import('onnxruntime-node').Tensor;

/** A Nereid tensor as an ORT tensor over the same memory (strings are decoded: ORT takes JS strings). */
export function toOrt(Ctor: OrtTensorCtor, t: Tensor, type: OrtTensor.Type, dims: readonly number[]): OrtTensor {
  if (t.datatype === 'BYTES') {
    const strings = new Array<string>(t.data.length);
    for (let i = 0; i < t.data.length; i++) strings[i] = decoder.decode(t.data[i]);
    return new Ctor('string', strings, dims);
  }
  // ORT wants its own typed array per type; BOOL rides in a Uint8Array, FP16 in a Uint16Array.
  return new Ctor(type as 'float32', typedView(t.datatype, t.data) as Float32Array, dims);
}

/** An ORT output (a tensor, or its dims and data from a worker) as a Nereid tensor over the same memory. */
export function fromOrt(name: string, datatype: DataType, o: { readonly dims: readonly number[]; readonly data: unknown }): Tensor {
  const shape = o.dims;
  if (datatype === 'BYTES') {
    const strings = o.data as string[];
    const data = new Array<Uint8Array>(strings.length);
    for (let i = 0; i < strings.length; i++) data[i] = encoder.encode(strings[i]);
    return { name, datatype, shape, data };
  }
  return { name, datatype, shape, data: bytesOf(o.data as ArrayBufferView) };
}
