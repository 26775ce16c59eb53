import { typedArrayCtor, byteSize, type DataType, type TypedArray } from './datatype.js';

/**
 * A typed array over a fixed-size tensor's bytes. A view when the bytes are aligned for the element size,
 * one copy when they are not (a typed array cannot start at a misaligned offset).
 */
export function typedView(dt: Exclude<DataType, 'BYTES'>, bytes: Uint8Array): TypedArray {
  const size = byteSize(dt);
  const Ctor = typedArrayCtor(dt);
  const length = bytes.byteLength;
  if (bytes.byteOffset % size === 0) return new Ctor(bytes.buffer, bytes.byteOffset, length / size);
  // The copy goes straight into the pooled Buffer, which is aligned (see pooledElements): no second view of
  // it to write through, one typed array fewer per input (most raw inputs sit at unaligned offsets).
  const b = Buffer.allocUnsafe(length);
  b.set(bytes);
  const offset = b.byteOffset;
  if (offset % size === 0) return new Ctor(b.buffer, offset, length / size);
  const own = new Ctor(length / size);
  new Uint8Array(own.buffer).set(bytes);
  return own;
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
