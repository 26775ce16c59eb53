/** Tensors in the shared memory of a Python stub: inputs written into an arena block, outputs read back. */
import type { DataType } from '../../tensor/datatype.js';
import { wireByteLength, type Tensor } from '../../tensor/tensor.js';
import { splitElements } from './calls.js';
import type { ArenaBlock, InputArena, Mapping, StubRegions } from './shm.js';
import type { TensorDesc } from './wire.js';

/** Writes one input tensor into the batch's block; BYTES in the serialized form (4-byte LE length, bytes). */
export function writeInput(block: ArenaBlock, at: number, t: Tensor): TensorDesc {
  const mapping = block.region.mapping;
  if (t.datatype !== 'BYTES') {
    mapping.write(at, t.data);
    return { n: t.name, d: t.datatype, s: t.shape, r: mapping.name, o: at, b: t.data.byteLength };
  }
  const length = wireByteLength(t);
  const direct = mapping.view(at, length);
  const target = direct ?? new Uint8Array(length);
  const view = new DataView(target.buffer, target.byteOffset, target.byteLength);
  let p = 0;
  for (const e of t.data) {
    view.setUint32(p, e.byteLength, true);
    target.set(e, p + 4);
    p += 4 + e.byteLength;
  }
  if (!direct) mapping.write(at, target);
  return { n: t.name, d: 'BYTES', s: t.shape, r: mapping.name, o: at, b: length, c: t.data.length };
}

/**
 * Reads a response's tensors out of shared memory: copies, so the stub may reuse the block at once, or, when
 * `lent` is given, views of the stub's region (names starting with `stubPrefix`) where it is mapped, each
 * mapping pushed to `lent`.
 */
export function readOutputs(arena: InputArena, regions: StubRegions, stubPrefix: string, descs: readonly TensorDesc[], lent: Mapping[] | undefined): Tensor[] {
  return descs.map((d): Tensor => {
    const region = d.r;
    let bytes: Uint8Array | undefined;
    if (region === undefined) {
      // A tensor of no bytes (zero elements, as np.array([])) has no block.
      bytes = new Uint8Array(0);
    } else if (region.startsWith(stubPrefix)) {
      const view = lent ? regions.lend(region, d.o, d.b) : undefined;
      if (view) lent!.push(view.mapping);
      bytes = view ? view.data : regions.copy(region, d.o, d.b);
    } else {
      // An output that is a view of an input: the input block is freed once the execution ends.
      bytes = arena.copy(region, d.o, d.b);
    }
    if (!bytes) throw new Error(`output '${d.n}' names an unknown region`);
    if (d.d === 'BYTES') return { name: d.n, datatype: 'BYTES', shape: d.s, data: splitElements(bytes, d.c ?? 0) };
    return { name: d.n, datatype: d.d as Exclude<DataType, 'BYTES'>, shape: d.s, data: bytes };
  });
}
