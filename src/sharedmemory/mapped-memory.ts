import type { NativeShm } from './native.js';
import { OpenError, type RegionMemory } from './memory.js';

/**
 * A region mmap'ed by the addon: reads are views (no copy), writes one memcpy into the client's memory. A shrunk
 * object cannot crash the server through it, whoever touches the views: the addon's SIGBUS handler swaps the
 * whole mapping for zero pages and marks it faulted (see native/shm.c), which intact() reports.
 */
export class MappedMemory implements RegionMemory {
  readonly mapped = true;
  private readonly bytes: Uint8Array;

  private constructor(private readonly addon: NativeShm, private readonly buffer: ArrayBuffer, private readonly handle: unknown) {
    this.bytes = new Uint8Array(buffer);
  }

  static open(addon: NativeShm, key: string, offset: number, byteSize: number): MappedMemory {
    let mapping: [ArrayBuffer, unknown];
    try {
      mapping = addon.map(key, offset, byteSize);
    } catch (e) {
      const message = (e as Error).message;
      const code = (e as { code?: string }).code;
      throw new OpenError(code === 'EBOUNDS' ? 'bounds' : message.startsWith('shm_open') ? 'open' : 'map', message);
    }
    return new MappedMemory(addon, mapping[0], mapping[1]);
  }

  read(offset: number, length: number): Uint8Array {
    return this.bytes.subarray(offset, offset + length);
  }

  write(offset: number, data: Uint8Array): void {
    this.bytes.set(data, offset);
  }

  intact(): boolean {
    return !this.addon.faulted(this.handle);
  }

  close(): void {
    this.addon.unmap(this.buffer, this.handle);
  }
}
