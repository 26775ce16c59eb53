/**
 * The `file:line` of the statement that wrote a log record, as Triton prints the `file.cc:line` of its LOG_*
 * call. The call site comes from V8's structured stack (one frame, no text formatted) and is mapped through the
 * compiled file's source map to the TypeScript line, once per call site. Reading the frame is the cost: a
 * record written to a file took about 10 µs instead of 3 (one process, the two loggers alternating). Only
 * records that are written pay it (a disabled level stays a noop), which on the request path means
 * --log-verbose 1 and up: two records, about 14 µs more per request. Printing no line number would cost
 * nothing but break Triton's log readers, which want `file:line` (qa/L0_logging/log_format_test.py).
 */
import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';

/** Enough for every log statement of the server; past it locations are still found, only not remembered. */
const MAX_SITES = 4096;

type Site = { getFileName(): string | null | undefined; getLineNumber(): number | null; getColumnNumber(): number | null };

const callSites = (_: Error, sites: Site[]): Site[] => sites;

/** Locations of log statements, per root logger (so nothing outlives the server that logged). */
export class LogLocations {
  private readonly sites = new Map<string, string>();
  private readonly maps = new Map<string, SourceMap | null>();

  /**
   * ` <pid> <file>:<line>] ` for the caller of `writer` (the level method the caller called), or `fallback`
   * when the stack holds no file (code run from a string).
   */
  tail(writer: Function, fallback: string): string {
    const site = callerOf(writer);
    const file = site?.getFileName();
    if (!file) return fallback;
    const key = `${file}:${site!.getLineNumber()}:${site!.getColumnNumber()}`;
    let tail = this.sites.get(key);
    if (tail === undefined) {
      tail = ` ${process.pid} ${this.locate(file, site!.getLineNumber() ?? 0, site!.getColumnNumber() ?? 0)}] `;
      if (this.sites.size < MAX_SITES) this.sites.set(key, tail);
    }
    return tail;
  }

  /** `folder_file.ts:line` from the source map, else the compiled file's own name and line. */
  private locate(file: string, line: number, column: number): string {
    const entry = this.sourceMap(file)?.findEntry(line - 1, column - 1);
    if (entry && 'originalSource' in entry && entry.originalSource) return `${shortName(entry.originalSource)}:${entry.originalLine + 1}`;
    return `${shortName(file)}:${line}`;
  }

  private sourceMap(file: string): SourceMap | null {
    let map = this.maps.get(file);
    if (map === undefined) {
      try {
        const path = file.startsWith('file:') ? fileURLToPath(file) : file;
        map = new SourceMap(JSON.parse(readFileSync(`${path}.map`, 'utf8')));
      } catch {
        map = null;
      }
      if (this.maps.size < MAX_SITES) this.maps.set(file, map);
    }
    return map;
  }
}

function callerOf(writer: Function): Site | undefined {
  const { prepareStackTrace, stackTraceLimit } = Error;
  Error.prepareStackTrace = callSites as typeof Error.prepareStackTrace;
  Error.stackTraceLimit = 1;
  try {
    const holder: { stack?: Site[] } = {};
    Error.captureStackTrace(holder, writer);
    return holder.stack?.[0];
  } finally {
    Error.prepareStackTrace = prepareStackTrace;
    Error.stackTraceLimit = stackTraceLimit;
  }
}

/**
 * The file's folder and name, `http_server.ts` for …/frontends/http/server.ts: the name alone is ambiguous
 * (several server.ts), and characters outside `[A-Za-z0-9_.]` become `_` so log readers split it cleanly.
 */
function shortName(path: string): string {
  const parts = path.split(/[/\\]/).filter(Boolean);
  return parts.slice(-2).join('_').replace(/[^\w.]/g, '_');
}
