import { closeSync, fstatSync, openSync, readSync, writeSync } from 'node:fs';
import { OpenError, type RegionMemory } from './memory.js';

/**
 * A region reached by positional reads and writes on its /dev/shm file, for when the mmap addon is not built:
 * every input is copied out and every output copied in, through a system call each.
 */
export class FileMemory implements RegionMemory {
  readonly mapped = false;

  private constructor(private readonly fd: number, private readonly start: number) {}

  /** `key` is the shm_open name ("/name"); its object lives at /dev/shm/name. */
  static open(key: string, offset: number, byteSize: number): FileMemory {
    const name = key.replace(/^\/+/, '');
    // shm_open refuses a name with a slash after the leading ones; refusing it here too keeps `..` and paths out.
    if (name === '' || name.includes('/') || name === '.' || name === '..') throw new OpenError('open', `invalid shared-memory key '${key}'`);
    let fd: number;
    try {
      fd = openSync(`/dev/shm/${name}`, 'r+');
    } catch (e) {
      throw new OpenError('open', (e as Error).message);
    }
    const size = fstatSync(fd).size;
    if (offset + byteSize > size) {
      closeSync(fd);
      throw new OpenError('bounds', 'offset + byteSize is past the end of the shared-memory object');
    }
    return new FileMemory(fd, offset);
  }

  read(offset: number, length: number): Uint8Array {
    const out = Buffer.allocUnsafe(length);
    let done = 0;
    while (done < length) {
      const n = readSync(this.fd, out, done, length - done, this.start + offset + done);
      // The client shrank the object after registering it: the missing tail reads as zeros rather than failing.
      if (n === 0) return out.fill(0, done);
      done += n;
    }
    return out;
  }

  write(offset: number, data: Uint8Array): void {
    let done = 0;
    while (done < data.byteLength) done += writeSync(this.fd, data, done, data.byteLength - done, this.start + offset + done);
  }

  close(): void {
    closeSync(this.fd);
  }
}
