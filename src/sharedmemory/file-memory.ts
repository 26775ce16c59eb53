import { closeSync, constants, fstatSync, openSync, readSync, writeSync } from 'node:fs';
import { OpenError, type RegionMemory } from './memory.js';

/**
 * A region reached by positional reads and writes on its /dev/shm file, for when the mmap addon is not built:
 * every input is copied out and every output copied in, through a system call each. Positional I/O cannot
 * fault: a shrunk object gives short reads, which read as zeros and mark the region no longer intact.
 */
export class FileMemory implements RegionMemory {
  readonly mapped = false;
  private shrunk = false;

  private constructor(private readonly fd: number, private readonly start: number, private readonly byteSize: number) {}

  /** `key` is the shm_open name ("/name"); its object lives at /dev/shm/name. */
  static open(key: string, offset: number, byteSize: number): FileMemory {
    const name = key.replace(/^\/+/, '');
    // shm_open refuses a name with a slash after the leading ones; refusing it here too keeps `..` and paths out.
    if (name === '' || name.includes('/') || name === '.' || name === '..') throw new OpenError('open', `invalid shared-memory key '${key}'`);
    let fd: number;
    try {
      // As shm_open opens: never through a symbolic link (a client's link to a file of the server's), and without
      // waiting on a FIFO.
      fd = openSync(`/dev/shm/${name}`, constants.O_RDWR | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (e) {
      throw new OpenError('open', (e as Error).message);
    }
    const st = fstatSync(fd);
    if (!st.isFile()) {
      closeSync(fd);
      throw new OpenError('open', `'${key}' is not a shared-memory object`);
    }
    if (offset + byteSize > st.size) {
      closeSync(fd);
      throw new OpenError('bounds', 'offset + byteSize is past the end of the shared-memory object');
    }
    return new FileMemory(fd, offset, byteSize);
  }

  read(offset: number, length: number): Uint8Array {
    const out = Buffer.allocUnsafe(length);
    let done = 0;
    while (done < length) {
      const n = readSync(this.fd, out, done, length - done, this.start + offset + done);
      if (n === 0) {
        // The client shrank the object after registering it.
        this.shrunk = true;
        return out.fill(0, done);
      }
      done += n;
    }
    return out;
  }

  write(offset: number, data: Uint8Array): void {
    // A write past the end of a shrunk object would grow it again behind the client's back: drop it instead. (The
    // object can still shrink after this check; the write then grows it, which harms no one.)
    if (fstatSync(this.fd).size < this.start + this.byteSize) {
      this.shrunk = true;
      return;
    }
    let done = 0;
    while (done < data.byteLength) done += writeSync(this.fd, data, done, data.byteLength - done, this.start + offset + done);
  }

  intact(): boolean {
    return !this.shrunk;
  }

  close(): void {
    closeSync(this.fd);
  }
}
