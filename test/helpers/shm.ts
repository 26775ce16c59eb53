import { rmSync, writeFileSync } from 'node:fs';

let next = 0;

/**
 * A POSIX shared-memory object made the way shm_open + ftruncate make it: a file in /dev/shm. Returns its
 * shm_open key ("/name") and a remover.
 */
export function createShmObject(bytes: number | Uint8Array): { key: string; path: string; remove(): void } {
  const name = `nereid_test_${process.pid}_${next++}`;
  const path = `/dev/shm/${name}`;
  writeFileSync(path, typeof bytes === 'number' ? Buffer.alloc(bytes) : bytes);
  return { key: `/${name}`, path, remove: () => rmSync(path, { force: true }) };
}

/** INT32 values as little-endian bytes. */
export function int32Bytes(values: number[]): Buffer {
  return Buffer.from(new Int32Array(values).buffer);
}
