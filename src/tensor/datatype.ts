/**
 * Triton's tensor data types: the wire names (KServe v2 / Triton protocol), their sizes, the model-config enum
 * names (TYPE_*), and the typed arrays that hold them. Everything here is a constant lookup; nothing allocates.
 */

export type DataType =
  | 'BOOL' | 'UINT8' | 'UINT16' | 'UINT32' | 'UINT64'
  | 'INT8' | 'INT16' | 'INT32' | 'INT64'
  | 'FP16' | 'FP32' | 'FP64' | 'BYTES' | 'BF16';

export const DATA_TYPES: readonly DataType[] = [
  'BOOL', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', 'INT32', 'INT64',
  'FP16', 'FP32', 'FP64', 'BYTES', 'BF16',
];

const SIZES: Record<DataType, number> = {
  BOOL: 1, UINT8: 1, UINT16: 2, UINT32: 4, UINT64: 8, INT8: 1, INT16: 2, INT32: 4, INT64: 8,
  FP16: 2, FP32: 4, FP64: 8, BYTES: 0, BF16: 2,
};

/** Bytes per element; 0 for BYTES, whose elements have their own lengths. */
export function byteSize(dt: DataType): number {
  return SIZES[dt];
}

export function isDataType(s: unknown): s is DataType {
  return typeof s === 'string' && Object.prototype.hasOwnProperty.call(SIZES, s);
}

/** Model-config enum name (TYPE_FP32) → wire name (FP32). TYPE_STRING is BYTES on the wire. */
export function fromConfigType(t: string): DataType | undefined {
  if (t === 'TYPE_STRING') return 'BYTES';
  if (!t.startsWith('TYPE_')) return undefined;
  const s = t.slice(5);
  return isDataType(s) && s !== 'BYTES' ? s : undefined;
}

export function toConfigType(dt: DataType): string {
  return dt === 'BYTES' ? 'TYPE_STRING' : `TYPE_${dt}`;
}

export type TypedArray =
  | Uint8Array | Int8Array | Uint16Array | Int16Array | Uint32Array | Int32Array
  | BigUint64Array | BigInt64Array | Float32Array | Float64Array;

type TypedArrayCtor = { new (buffer: ArrayBufferLike, byteOffset: number, length: number): TypedArray; new (length: number): TypedArray };

const CTORS: Record<Exclude<DataType, 'BYTES'>, TypedArrayCtor> = {
  BOOL: Uint8Array, UINT8: Uint8Array, UINT16: Uint16Array, UINT32: Uint32Array, UINT64: BigUint64Array,
  INT8: Int8Array, INT16: Int16Array, INT32: Int32Array, INT64: BigInt64Array,
  // Half floats are carried as their raw 16-bit patterns.
  FP16: Uint16Array, FP32: Float32Array, FP64: Float64Array, BF16: Uint16Array,
};

export function typedArrayCtor(dt: Exclude<DataType, 'BYTES'>): TypedArrayCtor {
  return CTORS[dt];
}

/** Inclusive value range of integer types, for checking JSON input. */
export const INT_RANGES: Partial<Record<DataType, readonly [number, number]>> = {
  UINT8: [0, 0xff], UINT16: [0, 0xffff], UINT32: [0, 0xffffffff],
  INT8: [-0x80, 0x7f], INT16: [-0x8000, 0x7fff], INT32: [-0x80000000, 0x7fffffff],
};
