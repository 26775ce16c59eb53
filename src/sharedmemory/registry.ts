import { NereidError, internal, invalidArg, limitExceeded, notFound, unsupported } from '../errors.js';
import { FileMemory } from './file-memory.js';
import { MappedMemory } from './mapped-memory.js';
import { OpenError, type RegionMemory } from './memory.js';
import { nativeShm } from './native.js';
import { Region } from './region.js';
import { ReservedKeys } from './reserved-keys.js';

/** A system region as the status calls report it (Triton's JSON keys). */
export interface SystemRegionStatus {
  name: string;
  key: string;
  offset: number;
  byte_size: number;
}

/** A CUDA region as the status calls report it; Nereid has no GPUs, so there are never any. */
export interface CudaRegionStatus {
  name: string;
  device_id: number;
  byte_size: number;
}

export type OpenMemory = (key: string, offset: number, byteSize: number) => RegionMemory;

/** mmap through the addon when it is built, positional file I/O otherwise. */
export const openRegionMemory: OpenMemory = nativeShm
  ? (key, offset, byteSize) => MappedMemory.open(nativeShm!, key, offset, byteSize)
  : (key, offset, byteSize) => FileMemory.open(key, offset, byteSize);

/** Mappings are made of whole pages; without the addon, regions are counted as if they were mapped. */
const PAGE_SIZE = nativeShm?.pageSize ?? 4096;

/** --shm-max-regions: regions the server holds at once (each one mapping, or one open file without the addon). */
export const DEFAULT_MAX_REGIONS = 4096;
/** --shm-max-mapped-bytes: bytes of client objects the server maps at once (64 GiB). */
export const DEFAULT_MAX_MAPPED_BYTES = 64 * 1024 ** 3;

export interface SharedMemoryRegistryOptions {
  /** How a region reaches its object; mmap through the addon by default. */
  readonly open?: OpenMemory;
  /** Regions held at once, the unregistered ones that requests still use included; DEFAULT_MAX_REGIONS by default. */
  readonly maxRegions?: number;
  /** Bytes mapped at once, in whole pages, counted as maxRegions is; DEFAULT_MAX_MAPPED_BYTES by default. */
  readonly maxMappedBytes?: number;
  /** The server's own objects, which clients may not register. */
  readonly reserved?: ReservedKeys;
}

export const SHM_DISABLED = "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable.";

/**
 * The server's registered shared-memory regions by name (Triton's SharedMemoryManager). System regions map
 * POSIX objects; CUDA regions answer as a Triton build without GPUs. Registering and unregistering need
 * `allowed` (--allow-client-shm); status always answers.
 */
export class SharedMemoryRegistry {
  private readonly regions = new Map<string, Region>();
  private readonly open: OpenMemory;
  private readonly maxRegions: number;
  private readonly maxMappedBytes: number;
  private readonly reserved: ReservedKeys;
  /** What the regions still mapped hold, the unregistered ones that requests still use included. */
  private heldRegions = 0;
  private heldBytes = 0;

  constructor(readonly allowed: boolean, options: SharedMemoryRegistryOptions = {}) {
    this.open = options.open ?? openRegionMemory;
    this.maxRegions = options.maxRegions ?? DEFAULT_MAX_REGIONS;
    this.maxMappedBytes = options.maxMappedBytes ?? DEFAULT_MAX_MAPPED_BYTES;
    this.reserved = options.reserved ?? new ReservedKeys();
  }

  /** Throws Triton's UNSUPPORTED error when clients may not use shared memory. */
  checkAllowed(): void {
    if (!this.allowed) throw unsupported(SHM_DISABLED);
  }

  registerSystem(name: string, key: string, offset: number, byteSize: number): void {
    this.checkAllowed();
    this.reserved.check(name, key);
    if (this.regions.has(name)) throw new NereidError('ALREADY_EXISTS', `shared memory region '${name}' already in manager`);
    // Triton's mmap of zero bytes fails (EINVAL), in these words; Nereid says why.
    if (byteSize === 0) throw invalidArg(`failed to register shared memory region '${name}': unable to process address space (byte_size must be greater than 0)`);
    const mappedBytes = Math.ceil(((offset % PAGE_SIZE) + byteSize) / PAGE_SIZE) * PAGE_SIZE;
    if (this.heldRegions >= this.maxRegions) {
      throw limitExceeded('RESOURCE_EXHAUSTED', 'shm-max-regions',
        `failed to register shared memory region '${name}': the server already maps ${this.heldRegions} shared memory regions, the most it allows (--shm-max-regions=${this.maxRegions}); unregister regions first`);
    }
    let memory: RegionMemory;
    try {
      memory = this.open(key, offset, byteSize);
    } catch (e) {
      throw openFailure(e, name, key);
    }
    // Checked once the object is known to hold the range, so that a range past its end gets Triton's error.
    if (this.heldBytes + mappedBytes > this.maxMappedBytes) {
      memory.close();
      throw limitExceeded('RESOURCE_EXHAUSTED', 'shm-max-mapped-bytes',
        `failed to register shared memory region '${name}': mapping its ${mappedBytes} bytes (whole pages) would take the server's mapped shared memory to ${this.heldBytes + mappedBytes} bytes, past --shm-max-mapped-bytes=${this.maxMappedBytes}; unregister regions first`);
    }
    this.heldRegions++;
    this.heldBytes += mappedBytes;
    this.regions.set(name, new Region(name, key, offset, byteSize, memory, mappedBytes));
  }

  systemStatus(name?: string): SystemRegionStatus[] {
    const status = (r: Region): SystemRegionStatus => ({ name: r.name, key: r.key, offset: r.offset, byte_size: r.byteSize });
    if (name === undefined) return [...this.regions.values()].map(status);
    const r = this.regions.get(name);
    if (!r) throw notFound(`Unable to find system shared memory region: '${name}'`);
    return [status(r)];
  }

  /**
   * Unregisters one region, or all of them. Unknown names succeed, as in Triton. A region some request is
   * using stays registered (and usable) until the last such request finishes, then goes.
   */
  unregisterSystem(name?: string): void {
    this.checkAllowed();
    if (name !== undefined) {
      const r = this.regions.get(name);
      if (r) this.unregister(r);
      return;
    }
    for (const r of [...this.regions.values()]) this.unregister(r);
  }

  registerCuda(name: string): never {
    this.checkAllowed();
    throw invalidArg(`failed to register CUDA shared memory region: '${name}', GPUs not supported`);
  }

  cudaStatus(name?: string): CudaRegionStatus[] {
    if (name === undefined) return [];
    if (this.regions.has(name)) throw notFound(`The region named '${name}' is registered as system shared memory, not CUDA shared memory`);
    throw notFound(`Unable to find cuda shared memory region: '${name}'`);
  }

  /** There are never CUDA regions to unregister: succeeds, as Triton's unregister of an unknown name. */
  unregisterCuda(): void {
    this.checkAllowed();
  }

  /** Takes a region for a request; give it back with release() when the request is over. */
  acquire(name: string): Region {
    const r = this.regions.get(name);
    if (!r) throw notFound(`Unable to find shared memory region: '${name}'`);
    r.users++;
    return r;
  }

  release(r: Region): void {
    if (--r.users === 0 && r.unregistered) this.remove(r);
  }

  /** Releases every region, in use or not (the server is stopping and its requests are over). */
  close(): void {
    for (const r of [...this.regions.values()]) this.remove(r);
  }

  private unregister(r: Region): void {
    r.unregistered = true;
    if (r.users === 0) this.remove(r);
  }

  private remove(r: Region): void {
    if (this.regions.get(r.name) === r) this.regions.delete(r.name);
    if (r.release()) {
      this.heldRegions--;
      this.heldBytes -= r.mappedBytes;
    }
  }
}

/** Triton's errors for a region that cannot be registered: bounds are the client's mistake, the rest the server's. */
function openFailure(e: unknown, name: string, key: string): NereidError {
  if (!(e instanceof OpenError)) return internal(`failed to register shared memory region '${name}': ${(e as Error).message}`);
  switch (e.reason) {
    case 'bounds': return invalidArg(`failed to register shared memory region '${name}': invalid args`);
    case 'open': return internal(`Unable to open shared memory region: '${key}'`);
    case 'map': return invalidArg(`failed to register shared memory region '${name}': unable to process address space: ${e.message}`);
  }
}
