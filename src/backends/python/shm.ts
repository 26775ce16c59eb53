import { closeSync, fstatSync, ftruncateSync, openSync, readdirSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { nativeShm } from '../../sharedmemory/native.js';

/**
 * Shared memory between the server and one Python stub: POSIX objects under /dev/shm, mapped by both sides.
 *
 * The server owns the input regions (InputArena): each execution's input tensors are written into one block of
 * a region, the stub maps the region and views them in place, and the block is freed once the stub is done
 * with them. The stub owns the output regions; the server maps them (StubRegions), copies a response's tensors
 * out (or lends views of them until the caller gives them back) and tells the stub to free the block. Mapping
 * is the shared-memory addon's (sharedmemory/native.ts); without it, positional reads and writes on the
 * /dev/shm file reach the same pages.
 */

const SHM_DIR = '/dev/shm';
export const ALIGN = 64;
export const align = (n: number): number => Math.ceil(n / ALIGN) * ALIGN;

/** One mapped (or, without the addon, opened) region. */
export class Mapping {
  private readonly bytes: Uint8Array | undefined;
  private readonly handle: unknown;

  constructor(readonly name: string, readonly size: number, private readonly fd: number) {
    if (nativeShm) {
      const [buffer, handle] = nativeShm.map(`/${name}`, 0, size);
      this.bytes = new Uint8Array(buffer);
      this.handle = handle;
    }
  }

  write(offset: number, data: Uint8Array): void {
    if (this.bytes) this.bytes.set(data, offset);
    else if (data.byteLength > 0) writeAll(this.fd, data, offset);
  }

  /** A view to write into directly when mapped, else undefined. */
  view(offset: number, length: number): Uint8Array | undefined {
    return this.bytes?.subarray(offset, offset + length);
  }

  /**
   * A copy of [offset, offset + length): the caller may keep it after the block is freed. Throws when the object
   * turned out smaller than the region (shrunk by the stub's process: the addon's SIGBUS guard kept the server
   * alive, but the bytes are gone).
   */
  copy(offset: number, length: number): Uint8Array {
    const out = Buffer.allocUnsafe(length);
    if (this.bytes) {
      out.set(this.bytes.subarray(offset, offset + length));
      if (nativeShm!.faulted(this.handle)) throw new Error(`shared memory region '${this.name}' shrank while the server read it`);
      return new Uint8Array(out.buffer, out.byteOffset, length);
    }
    let done = 0;
    while (done < length) {
      const n = readSync(this.fd, out, done, length - done, offset + done);
      if (n === 0) throw new Error(`shared memory region '${this.name}' shrank while the server read it`);
      done += n;
    }
    return new Uint8Array(out.buffer, out.byteOffset, length);
  }

  close(): void {
    if (this.bytes && nativeShm) nativeShm.unmap(this.bytes.buffer as ArrayBuffer, this.handle);
    closeSync(this.fd);
  }
}

function writeAll(fd: number, data: Uint8Array, position: number): void {
  let done = 0;
  while (done < data.byteLength) done += writeSync(fd, data, done, data.byteLength - done, position + done);
}

/** A region of the server's with a first-fit free list. */
export class ArenaRegion {
  /** [offset, length], sorted by offset. */
  private free: [number, number][];
  private readonly used = new Map<number, number>();

  constructor(readonly mapping: Mapping) {
    this.free = [[0, mapping.size]];
  }

  alloc(n: number): number | undefined {
    for (let i = 0; i < this.free.length; i++) {
      const [off, len] = this.free[i]!;
      if (len < n) continue;
      if (len === n) this.free.splice(i, 1);
      else this.free[i] = [off + n, len - n];
      this.used.set(off, n);
      return off;
    }
    return undefined;
  }

  release(off: number): void {
    const n = this.used.get(off);
    if (n === undefined) return;
    this.used.delete(off);
    this.free.push([off, n]);
    this.free.sort((a, b) => a[0] - b[0]);
    const merged: [number, number][] = [];
    for (const f of this.free) {
      const last = merged[merged.length - 1];
      if (last && last[0] + last[1] === f[0]) last[1] += f[1];
      else merged.push([f[0], f[1]]);
    }
    this.free = merged;
  }

  get idle(): boolean {
    return this.used.size === 0;
  }
}

export interface ArenaBlock {
  readonly region: ArenaRegion;
  readonly offset: number;
}

/**
 * The input regions of one instance. Starts with one region of shm-default-byte-size; a block that fits
 * nowhere adds a region big enough (rounded up to shm-growth-byte-size), retiring regions that are then idle
 * and smaller, so a steady load settles on one region.
 */
export class InputArena {
  private readonly regions: ArenaRegion[] = [];
  private generation = 0;

  constructor(
    private readonly prefix: string,
    private readonly defaultBytes: number,
    private readonly growthBytes: number,
    /** Told the names of retired regions, so the stub unmaps them too. */
    private readonly onRetire: (name: string) => void,
  ) {}

  alloc(n: number): ArenaBlock {
    for (const region of this.regions) {
      const offset = region.alloc(n);
      if (offset !== undefined) return { region, offset };
    }
    const size = Math.max(this.defaultBytes, Math.ceil(n / this.growthBytes) * this.growthBytes);
    for (let i = this.regions.length - 1; i >= 0; i--) {
      const r = this.regions[i]!;
      if (!r.idle || r.mapping.size >= size) continue;
      this.regions.splice(i, 1);
      this.onRetire(r.mapping.name);
      closeAndUnlink(r.mapping);
    }
    const region = new ArenaRegion(createRegion(`${this.prefix}in${++this.generation}`, size));
    this.regions.push(region);
    return { region, offset: region.alloc(n)! };
  }

  free(block: ArenaBlock): void {
    block.region.release(block.offset);
  }

  /** Reads back bytes the stub left in an input region (an output that is a view of an input). */
  copy(name: string, offset: number, length: number): Uint8Array | undefined {
    return this.regions.find((r) => r.mapping.name === name)?.mapping.copy(offset, length);
  }

  close(): void {
    for (const r of this.regions.splice(0)) closeAndUnlink(r.mapping);
  }
}

function createRegion(name: string, size: number): Mapping {
  const fd = openSync(`${SHM_DIR}/${name}`, 'wx+', 0o600);
  try {
    ftruncateSync(fd, size);
    return new Mapping(name, size, fd);
  } catch (e) {
    closeSync(fd);
    unlinkQuietly(name);
    throw e;
  }
}

function closeAndUnlink(m: Mapping): void {
  m.close();
  unlinkQuietly(m.name);
}

function unlinkQuietly(name: string): void {
  try {
    unlinkSync(`${SHM_DIR}/${name}`);
  } catch {
    // already gone
  }
}

/**
 * The stub's output regions, mapped on first sight of each name. Outputs are copied out of them, or lent as
 * views to a caller that gives them back (InferenceRequest.borrowOutputs); a region with views out stays
 * mapped until the last comes back, even after the stub dropped it or stopped.
 */
export class StubRegions {
  private readonly mapped = new Map<string, Mapping>();
  /** Views out, per mapping. */
  private readonly lent = new Map<Mapping, number>();
  /** Dropped or closed while views were out: closed when the last comes back. */
  private readonly retired = new Set<Mapping>();

  copy(name: string, offset: number, length: number): Uint8Array {
    return this.map(name).copy(offset, length);
  }

  /** A view of the bytes, lent until giveBack(mapping); undefined when the region is not mapped (no addon). */
  lend(name: string, offset: number, length: number): { data: Uint8Array; mapping: Mapping } | undefined {
    const mapping = this.map(name);
    const data = mapping.view(offset, length);
    if (!data) return undefined;
    this.lent.set(mapping, (this.lent.get(mapping) ?? 0) + 1);
    return { data, mapping };
  }

  giveBack(mapping: Mapping): void {
    const n = (this.lent.get(mapping) ?? 1) - 1;
    if (n > 0) {
      this.lent.set(mapping, n);
      return;
    }
    this.lent.delete(mapping);
    if (this.retired.delete(mapping)) mapping.close();
  }

  drop(name: string): void {
    const m = this.mapped.get(name);
    if (!m) return;
    this.mapped.delete(name);
    this.retire(m);
  }

  close(): void {
    for (const m of this.mapped.values()) this.retire(m);
    this.mapped.clear();
  }

  private retire(m: Mapping): void {
    if (this.lent.has(m)) this.retired.add(m);
    else m.close();
  }

  private map(name: string): Mapping {
    let m = this.mapped.get(name);
    if (m) return m;
    const fd = openSync(`${SHM_DIR}/${name}`, 'r+');
    try {
      m = new Mapping(name, fstatSync(fd).size, fd);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
    this.mapped.set(name, m);
    return m;
  }
}

/** Removes every object whose name starts with `prefix` (a stub that died leaves its regions behind). */
export function unlinkAll(prefix: string): void {
  let names: string[];
  try {
    names = readdirSync(SHM_DIR);
  } catch {
    return;
  }
  for (const n of names) if (n.startsWith(prefix)) unlinkQuietly(n);
}
