/**
 * Reads server-sent events from a byte stream, chunk by chunk, synchronously: each event's `data` goes to the
 * callback the moment its blank line arrives, with no promise or async iterator per event (the gateway's
 * per-token path). An event's several `data:` lines join with newlines; comments (`:`) and other fields
 * (event, id, retry) are skipped, as OpenAI-compatible engines put everything in `data`. Line ends may be
 * \n, \r\n or \r.
 */
export class EventReader {
  private readonly decoder = new TextDecoder();
  private pending = '';
  private data: string[] = [];

  constructor(private readonly onData: (data: string) => void) {}

  push(chunk: Uint8Array): void {
    this.pending += this.decoder.decode(chunk, { stream: true });
    const s = this.pending;
    let start = 0;
    for (;;) {
      const end = lineEnd(s, start);
      if (end < 0) break;
      const line = s.slice(start, end);
      start = end + (s.charCodeAt(end) === 13 && s.charCodeAt(end + 1) === 10 ? 2 : 1);
      if (line === '') this.dispatch();
      else if (line.startsWith('data:')) this.data.push(line.slice(line.charCodeAt(5) === 32 ? 6 : 5));
    }
    this.pending = start === 0 ? s : s.slice(start);
  }

  /** The stream ended: a last event without its blank line still counts. */
  end(): void {
    const s = this.pending + this.decoder.decode();
    this.pending = '';
    if (s.startsWith('data:')) this.data.push(s.slice(s.charCodeAt(5) === 32 ? 6 : 5));
    this.dispatch();
  }

  private dispatch(): void {
    if (this.data.length === 0) return;
    const d = this.data.length === 1 ? this.data[0]! : this.data.join('\n');
    this.data = [];
    this.onData(d);
  }
}

/** Index of the next \n or \r at or after `from`; -1 when none (a lone \r at the end waits for more text). */
function lineEnd(s: string, from: number): number {
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 10) return i;
    if (c === 13) return i + 1 < s.length ? i : -1;
  }
  return -1;
}
