import type { Logger } from '../../observability/logger.js';

/** Longest line logged; the rest of a longer one is cut (an engine may print a whole prompt or a progress bar). */
const MAX_LINE = 1000;
/** Lines logged per window; past that they are counted, and the count logged when the window ends. */
const LINES_PER_WINDOW = 200;
const WINDOW_MS = 10_000;
/** Lines kept for the error of an engine that failed to start. */
const TAIL_LINES = 20;
/** Longest partial line held while waiting for its end. */
const MAX_PENDING = 64 * 1024;

/**
 * An engine's stdout and stderr into Nereid's log, one record per line under `tag` (the logger escapes what
 * the engine wrote): lines cut at MAX_LINE, at most LINES_PER_WINDOW per WINDOW_MS, so that a chatty or
 * looping engine can neither flood the log nor hold memory. The last lines are kept for a start's error.
 */
export class EngineOutput {
  private pending = '';
  private readonly last: string[] = [];
  private windowStart = 0;
  private logged = 0;
  private dropped = 0;

  constructor(private readonly logger: Logger, private readonly tag: string) {}

  push(chunk: Buffer): void {
    let s = this.pending + chunk.toString('utf8');
    let nl = s.search(/[\r\n]/);
    while (nl >= 0) {
      this.line(s.slice(0, nl));
      s = s.slice(nl + 1);
      nl = s.search(/[\r\n]/);
    }
    if (s.length <= MAX_PENDING) this.pending = s;
    else {
      this.line(s);
      this.pending = '';
    }
  }

  /** The process ended: its last partial line, and the count of lines dropped. */
  flush(): void {
    if (this.pending !== '') this.line(this.pending);
    this.pending = '';
    this.reportDropped();
  }

  /** The last lines, for an error message: '' when there were none. */
  tail(): string {
    this.flush();
    return this.last.length === 0 ? '' : `; its last output: ${this.last.join(' | ')}`;
  }

  private line(raw: string): void {
    const text = raw.trimEnd();
    if (text === '') return;
    const cut = text.length > MAX_LINE ? `${text.slice(0, MAX_LINE)}…` : text;
    this.last.push(cut.length > 300 ? `${cut.slice(0, 300)}…` : cut);
    if (this.last.length > TAIL_LINES) this.last.shift();
    const now = Date.now();
    if (now - this.windowStart >= WINDOW_MS) {
      this.reportDropped();
      this.windowStart = now;
      this.logged = 0;
    }
    if (this.logged >= LINES_PER_WINDOW) {
      this.dropped++;
      return;
    }
    this.logged++;
    this.logger.info(`${this.tag}: ${cut}`);
  }

  private reportDropped(): void {
    if (this.dropped === 0) return;
    this.logger.warn(`${this.tag}: ${this.dropped} lines of its output were not logged (more than ${LINES_PER_WINDOW} in ${WINDOW_MS / 1000} s)`);
    this.dropped = 0;
  }
}
