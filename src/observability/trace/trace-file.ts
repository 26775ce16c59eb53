import { appendFile, writeFile } from 'node:fs/promises';

/**
 * Triton's trace file: traces written as they are collected either into the file itself (one JSON array,
 * opened with '[' on the first write, closed with ']' when the server stops) or, with log_frequency or count,
 * into numbered files `<file>.0`, `<file>.1`, … each a whole JSON array. Writes are queued and done in order
 * off the request path; a file that cannot be written is reported once and its traces dropped.
 */
export class TraceFile {
  private index = 0;
  private opened = false;
  private tail: Promise<void> = Promise.resolve();
  private failed = false;
  /** Closed with the server: a trace that finishes later is not written (the array is closed). */
  private closed = false;

  constructor(readonly path: string, private readonly onError: (message: string) => void) {}

  /** Traces (comma-separated records) added to the file's array. */
  append(records: string): void {
    const first = !this.opened;
    this.opened = true;
    this.queue(() => (first ? writeFile(this.path, `[${records}`) : appendFile(this.path, `,${records}`)));
  }

  /** Traces as a whole array in the next numbered file. */
  writeNumbered(records: string): void {
    const path = `${this.path}.${this.index++}`;
    this.queue(() => writeFile(path, `[${records}]`));
  }

  /** Closes the array of the file itself and resolves once every write queued has been done. */
  close(): Promise<void> {
    if (this.opened) this.queue(() => appendFile(this.path, ']'));
    this.closed = true;
    return this.tail;
  }

  private queue(write: () => Promise<void>): void {
    if (this.closed) return;
    this.tail = this.tail.then(() => (this.failed ? undefined : write())).catch((e: NodeJS.ErrnoException) => {
      if (this.failed) return;
      this.failed = true;
      this.onError(`failed creating trace file: ${e.code ?? ''} ${e.message}; traces are not written`.replace('  ', ' '));
    });
  }
}
