import type { Tensor } from './tensor.js';

/**
 * Tensors as one self-describing byte string, for stores outside the process (the Redis response cache, the
 * sequence state store): a 4-byte little-endian header length, a JSON header (names, types, shapes, sizes)
 * and the tensors' bytes. BYTES elements keep their own sizes.
 */
interface Header { name: string; datatype: string; shape: number[]; sizes: number[] }

export function packTensors(tensors: readonly Tensor[]): Buffer {
  const parts: Uint8Array[] = [];
  const header: Header[] = tensors.map((t) => {
    const pieces = t.datatype === 'BYTES' ? t.data : [t.data];
    parts.push(...pieces);
    return { name: t.name, datatype: t.datatype, shape: [...t.shape], sizes: pieces.map((p) => p.byteLength) };
  });
  const head = Buffer.from(JSON.stringify(header));
  const len = Buffer.alloc(4);
  len.writeUInt32LE(head.byteLength);
  return Buffer.concat([len, head, ...parts]);
}

/** The tensors packTensors wrote, each over its own copy (the buffer may be reused by its reader). */
export function unpackTensors(b: Buffer): Tensor[] {
  const n = b.readUInt32LE(0);
  const header = JSON.parse(b.toString('utf8', 4, 4 + n)) as Header[];
  let at = 4 + n;
  return header.map((h) => {
    const pieces = h.sizes.map((size) => {
      const p = new Uint8Array(b.subarray(at, at + size));
      at += size;
      return p;
    });
    return (h.datatype === 'BYTES'
      ? { name: h.name, datatype: 'BYTES', shape: h.shape, data: pieces }
      : { name: h.name, datatype: h.datatype, shape: h.shape, data: pieces[0] ?? new Uint8Array(0) }) as Tensor;
  });
}
