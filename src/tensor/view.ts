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
  const copy = pooledElements(dt, n);
  bytesOf(copy).set(bytes);
  return copy;
}

/**
 * A typed array of `count` elements whose contents the caller writes (they start as whatever was there),
 * carved from Buffer's pool when small. A small typed array of its own lives inside V8's heap, and the first
 * time its memory is asked for (a bytes view, ONNX Runtime's binding) V8 moves it out: an allocation and a
 * copy. Not for memory that is transferred to another thread: the pool cannot move.
 */
export function pooledElements(dt: Exclude<DataType, 'BYTES'>, count: number): TypedArray {
  const size = byteSize(dt);
  const Ctor = typedArrayCtor(dt);
  const b = Buffer.allocUnsafe(count * size);
  // Pool slices are 8-byte aligned; a larger buffer is one of its own, at offset 0.
  if (b.byteOffset % size === 0) return new Ctor(b.buffer, b.byteOffset, count);
  return new Ctor(count);
}

/** The bytes of a typed array, as a view. */
export function bytesOf(a: ArrayBufferView): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}
