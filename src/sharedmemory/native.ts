import { createRequire } from 'node:module';

/**
 * The project's own N-API addon (native/shm.c, built by `npm install` through node-gyp): shm_open + mmap of a
 * region, returned as an ArrayBuffer over the mapping. Absent when the build failed or was skipped; the
 * registry then falls back to positional reads and writes on the /dev/shm file (file-memory.ts).
 */
export interface NativeShm {
  /** Maps [offset, offset + byteSize) of the POSIX object `key`. Throws an Error whose code is an errno name or EBOUNDS. */
  map(key: string, offset: number, byteSize: number): [ArrayBuffer, unknown];
  /** Detaches the ArrayBuffer (every view of it becomes empty), then unmaps. */
  unmap(buffer: ArrayBuffer, handle: unknown): void;
  /**
   * True once an access to the mapping found its object shrunk (the SIGBUS it raised was caught): the mapping
   * then holds zeros, not the object's bytes, and stays so.
   */
  faulted(handle: unknown): boolean;
  /** True when the addon's SIGBUS handler is in place, so that a shrunk object cannot end the process. */
  readonly guarded: boolean;
  /** The system's page size: mappings are made of whole pages. */
  readonly pageSize: number;
}

/** Where node-gyp puts the addon, from dist/src/sharedmemory/ (the compiled location of this file). */
const ADDON = '../../../build/Release/nereid_shm.node';

function load(): { addon: NativeShm | undefined; reason: string } {
  if (process.platform !== 'linux' && process.platform !== 'darwin') return { addon: undefined, reason: `no POSIX shared memory on ${process.platform}` };
  try {
    const addon = createRequire(import.meta.url)(ADDON) as NativeShm;
    // An addon built before the SIGBUS guard would let a client crash the server: better not to map at all.
    if (typeof addon.faulted !== 'function' || addon.guarded !== true) return { addon: undefined, reason: 'the addon cannot guard its mappings against SIGBUS (rebuild it)' };
    return { addon, reason: '' };
  } catch (e) {
    return { addon: undefined, reason: (e as Error).message.split('\n')[0]! };
  }
}

const loaded = load();

export const nativeShm: NativeShm | undefined = loaded.addon;
/** Why the addon is not there, for the startup log; '' when it is. */
export const nativeShmMissing: string = loaded.reason;
