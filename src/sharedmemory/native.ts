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
}

/** Where node-gyp puts the addon, from dist/src/sharedmemory/ (the compiled location of this file). */
const ADDON = '../../../build/Release/nereid_shm.node';

function load(): { addon: NativeShm | undefined; reason: string } {
  if (process.platform !== 'linux' && process.platform !== 'darwin') return { addon: undefined, reason: `no POSIX shared memory on ${process.platform}` };
  try {
    return { addon: createRequire(import.meta.url)(ADDON) as NativeShm, reason: '' };
  } catch (e) {
    return { addon: undefined, reason: (e as Error).message.split('\n')[0]! };
  }
}

const loaded = load();

export const nativeShm: NativeShm | undefined = loaded.addon;
/** Why the addon is not there, for the startup log; '' when it is. */
export const nativeShmMissing: string = loaded.reason;
