import { invalidArg } from '../errors.js';
import type { RegionMemory } from './memory.js';

const UINT64_MAX = (1n << 64n) - 1n;

/**
 * One registered system shared-memory region: `byteSize` bytes of the object `key` starting at `offset`.
 * Tensor offsets are relative to the region's start. Requests hold it while they run (`users`); an
 * unregistered region with users is released by the last of them.
 */
export class Region {
  users = 0;
  unregistered = false;
  private released = false;

  constructor(
    readonly name: string,
    readonly key: string,
    readonly offset: number,
    readonly byteSize: number,
    private readonly memory: RegionMemory,
    /** What the region holds of the server's limits: one mapping (or open file) of this many bytes, whole pages. */
    readonly mappedBytes: number,
  ) {}

  /** True when reads are views of the client's memory, false when they are copies. */
  get mapped(): boolean {
    return this.memory.mapped;
  }

  /**
   * Throws the error a request gets when the client shrank the region's object under it (an access found bytes
   * missing). The region stays so: its mapping no longer reaches the object; registering it again does.
   */
  checkIntact(): void {
    if (!this.memory.intact()) {
      throw invalidArg(`shared memory region '${this.name}' is smaller than registered: its object '${this.key}' no longer holds ${this.byteSize} bytes from offset ${this.offset} (it was truncated after the region was registered, or the system had no memory left to back a page of it); unregister the region and register it again`);
    }
  }

  /**
   * Checks that [offset, offset + byteSize) lies inside the region, with Triton's messages. Values may be
   * beyond 2^53 (JSON numbers, gRPC int64): the overflow test is done exactly, in bigint.
   */
  check(offset: number, byteSize: number): void {
    if (offset >= this.byteSize) throw invalidArg(`Invalid offset for shared memory region: '${this.name}'`);
    if (!Number.isSafeInteger(offset + byteSize)) {
      const o = BigInt(offset);
      const b = BigInt(byteSize);
      if (b > UINT64_MAX - o) {
        throw invalidArg(`Integer overflow detected: byte_size (${b}) + offset (${o}) exceeds maximum value (${UINT64_MAX}) for region '${this.name}'`);
      }
    }
    if (offset + byteSize > this.byteSize) throw invalidArg(`Invalid offset + byte size for shared memory region: '${this.name}'`);
  }

  /** Bytes [offset, offset + byteSize) of the region; check() first. */
  read(offset: number, byteSize: number): Uint8Array {
    return this.memory.read(offset, byteSize);
  }

  /** Writes data at `offset` of the region; check() the range first. */
  write(offset: number, data: Uint8Array): void {
    this.memory.write(offset, data);
  }

  /** Unmaps (or closes) the region's memory, once; true the time it does. */
  release(): boolean {
    if (this.released) return false;
    this.released = true;
    this.memory.close();
    return true;
  }
}
