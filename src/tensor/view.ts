import { typedArrayCtor, byteSize, type DataType, type TypedArray } from './datatype.js';

/**
 * A typed array over a fixed-size tensor's bytes. A view when the bytes are aligned for the element size,
 * one copy when they are not (a typed array cannot start at a misaligned offset).
 */
export function typedView(dt: Exclude<DataType, 'BYTES'>, bytes: Uint8Array): TypedArray {
  const size = byteSize(dt);
  const Ctor = typedArrayCtor(dt);
  const n = bytes.byteLength / size;
  if (bytes.byteOffset % size === 0) return new Ctor(bytes.buffer, bytes.byteOffset, n);
  // The copy comes from Buffer's pool when small (its slices are 8-byte aligned): a small typed array of its
  // own would live in V8's heap and be moved out, an allocation and a second copy, when its buffer is taken.
  const copy = Buffer.allocUnsafe(bytes.byteLength);
  copy.set(bytes);
  if (copy.byteOffset % size === 0) return new Ctor(copy.buffer, copy.byteOffset, n);
  const own = new Uint8Array(bytes.byteLength);
  own.set(bytes);
  return new Ctor(own.buffer, 0, n);
}

/** The bytes of a typed array, as a view. */
export function bytesOf(a: ArrayBufferView): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}
