/**
 * Nereid's log, in tritonserver's line formats so existing log scrapers keep working:
 *
 *   default   I0523 14:03:07.123456 4242 http_server.ts:412] Started HTTPService at 0.0.0.0:8000
 *   ISO8601   2024-05-23T14:03:07Z I 4242 http_server.ts:412] Started HTTPService at 0.0.0.0:8000
 *
 * Triton prints the `file.cc:line` of the log statement; log readers (Triton's own L0_logging log_format_test
 * among them) want a `[\w.]+:\d+` there. Nereid prints the TypeScript file and line of the statement that
 * wrote the record (log-location.ts; a written record costs about 7 µs more for it, a disabled level nothing).
 * Times are UTC, as in Triton. Levels: E (error), W (warning), I (info), V (verbose, numbered: `verbose(2, …)` prints when the
 * verbose level is 2 or more).
 *
 * Messages are escaped as Triton escapes them: written as a JSON string (`] "Started HTTPService at …"`), so
 * client-chosen text (a model or input name, a header) can neither break a record over several lines nor
 * forge one. TRITON_SERVER_ESCAPE_LOG_MESSAGES=0 turns the quoting off, as in Triton; unlike Triton, control
 * characters (newlines, terminal escape sequences) are still escaped then, so a record stays one line.
 *
 * Cost when disabled: each level method is swapped for one shared `noop` whenever the settings change (pino's
 * `setLevel`), so a disabled `info(...)` is one empty call. A caller whose message is expensive to build should
 * test `isVerbose(n)` first.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { NereidError } from '../errors.js';
import { LogLocations } from './log-location.js';

export type LogFormat = 'default' | 'ISO8601';

/** The logging flags of `tritonserver` (--log-info, --log-warning, --log-error, --log-verbose, --log-format, --log-file). */
export interface LogSettings {
  info: boolean;
  warning: boolean;
  error: boolean;
  /** 0 disables verbose logging; N prints `verbose(level ≤ N, …)`. */
  verbose: number;
  format: LogFormat;
  /** '' logs to stderr; otherwise a file opened once, in append mode. */
  file: string;
}

/** The body of `GET /v2/logging` (and gRPC `LogSettings`): always the full set, under Triton's key names. */
export interface LogSettingsJson {
  log_file: string;
  log_info: boolean;
  log_warning: boolean;
  log_error: boolean;
  log_verbose_level: number;
  log_format: LogFormat;
}

export interface Logger {
  error(msg: string): void;
  warn(msg: string): void;
  /** Same as `warn`; the level is called "warning" in Triton's flags and settings. */
  warning(msg: string): void;
  info(msg: string): void;
  verbose(level: number, msg: string): void;
  /** True when `verbose(level, …)` would print: guard messages that are costly to build. */
  isVerbose(level: number): boolean;
  /**
   * A logger writing to the same output under the same settings. Records are located at the line that wrote
   * them; `file:line` (a module's file name; characters outside `[A-Za-z0-9_.]` become `_`) only where that
   * line cannot be known.
   */
  child(file: string, line?: number): Logger;
  /** The current settings in the logging extension's JSON form. */
  settings(): LogSettingsJson;
  /**
   * Applies a `POST /v2/logging` body. Keys with a `null` value and unknown keys are ignored, as in Triton. All
   * keys are checked before any is applied, so a rejected update changes nothing. Throws NereidError:
   * UNSUPPORTED for a non-null `log_file`; INVALID_ARG for a value of the wrong JSON type, with Triton's words
   * (Triton's HTTP frontend answers 500 there, one of the client mistakes Nereid answers 400; a gRPC frontend
   * checks the oneof type itself and answers INVALID_ARGUMENT, as Triton's);
   * INVALID_SETTING for a `log_format` other than `default` or `ISO8601` (Triton's HTTP status 503, gRPC
   * INVALID_ARGUMENT).
   */
  update(partial: Readonly<Record<string, unknown>>): void;
  /** Closes the shared output (the log file); later lines go to stderr. Idempotent. */
  close(): Promise<void>;
  /** The latest warnings and errors written (at most RECENT_LINES, oldest first), for the web console. */
  recent?(): readonly LogRecord[];
}

export interface LogRecord {
  /** Milliseconds since the epoch. */
  readonly atMs: number;
  readonly level: 'E' | 'W';
  /** The message as written, cut at RECENT_CHARS characters. */
  readonly message: string;
}

/** Bounds of the ring of recent warnings and errors: a flood of them costs this much memory and no more. */
export const RECENT_LINES = 100;
export const RECENT_CHARS = 2000;

function noop(): void {}

/** The output and settings one root logger shares with all its children. */
class Sink {
  settings: LogSettings;
  /** Triton's TRITON_SERVER_ESCAPE_LOG_MESSAGES: true unless it is '0'. Read once, when the logger is made. */
  private readonly quote: boolean;
  private fd: number;
  private readonly loggers = new Set<WeakRef<TaggedLogger>>();
  private stampSecond = -1;
  private stampText = '';
  readonly locations = new LogLocations();
  /** The latest warnings and errors, a ring of RECENT_LINES written at `next`. */
  private readonly ring: LogRecord[] = [];
  private next = 0;

  constructor(settings: LogSettings, quote: boolean) {
    this.settings = { ...settings };
    this.quote = quote;
    this.fd = settings.file === '' ? -1 : openLogFile(settings.file);
  }

  /** Children are held weakly: a model's logger must not outlive the unloaded model. */
  register(logger: TaggedLogger): void {
    this.loggers.add(new WeakRef(logger));
  }

  apply(next: LogSettings): void {
    this.settings = next;
    for (const ref of this.loggers) {
      const logger = ref.deref();
      if (logger === undefined) this.loggers.delete(ref);
      else logger.rebind();
    }
  }

  /** `tail` is ` <pid> <file>:<line>] `. */
  write(level: string, tail: string, message: string): void {
    const msg = this.quote ? escapeControls(JSON.stringify(message)) : escapeControls(message);
    const us = Math.floor((performance.timeOrigin + performance.now()) * 1000);
    const line = this.settings.format === 'ISO8601'
      ? `${this.isoStamp(us)} ${level}${tail}${msg}\n`
      : `${level}${this.defaultStamp(us)}${tail}${msg}\n`;
    if (this.fd >= 0) writeSync(this.fd, line);
    else process.stderr.write(line);
    if (level === 'E' || level === 'W') this.keep(level, message);
  }

  private keep(level: 'E' | 'W', message: string): void {
    const record = { atMs: Date.now(), level, message: message.length > RECENT_CHARS ? `${message.slice(0, RECENT_CHARS)}…` : message };
    if (this.ring.length < RECENT_LINES) this.ring.push(record);
    else this.ring[this.next] = record;
    this.next = (this.next + 1) % RECENT_LINES;
  }

  recent(): LogRecord[] {
    return this.ring.length < RECENT_LINES ? [...this.ring] : [...this.ring.slice(this.next), ...this.ring.slice(0, this.next)];
  }

  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }

  /** `MMDD hh:mm:ss.uuuuuu`; the part up to the second is cached because lines come in bursts. */
  private defaultStamp(us: number): string {
    const second = Math.floor(us / 1e6);
    if (second !== this.stampSecond) {
      const d = new Date(second * 1000);
      this.stampSecond = second;
      this.stampText = `${pad2(d.getUTCMonth() + 1)}${pad2(d.getUTCDate())} ${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())}`;
    }
    return `${this.stampText}.${String(us % 1e6).padStart(6, '0')}`;
  }

  /** `YYYY-MM-DDThh:mm:ssZ`: whole seconds, as Triton prints it. */
  private isoStamp(us: number): string {
    return `${new Date(Math.floor(us / 1e6) * 1000).toISOString().slice(0, 19)}Z`;
  }
}

const pad2 = (n: number): string => (n < 10 ? `0${n}` : String(n));

/** C0 and C1 control characters, DEL, and the Unicode line and paragraph separators. */
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

/**
 * Control characters as JSON escapes (`\n`, `\u001b`), so a message is one line whatever it holds. After
 * JSON.stringify only the ones JSON leaves alone remain: DEL, C1 (U+0085 is a line break to some readers) and
 * the Unicode line separators.
 */
function escapeControls(message: string): string {
  CONTROLS.lastIndex = 0;
  if (!CONTROLS.test(message)) return message;
  return message.replace(CONTROLS, (c) => {
    const json = JSON.stringify(c).slice(1, -1);
    return json.length > 1 ? json : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  });
}

function openLogFile(path: string): number {
  try {
    return openSync(path, 'a');
  } catch (e) {
    throw new NereidError('INVALID_ARG', `failed to open log file '${path}': ${(e as Error).message}`, { cause: e });
  }
}

class TaggedLogger implements Logger {
  error: (msg: string) => void = noop;
  warn: (msg: string) => void = noop;
  warning: (msg: string) => void = noop;
  info: (msg: string) => void = noop;
  verbose: (level: number, msg: string) => void = noop;
  private readonly tail: string;

  constructor(private readonly sink: Sink, location: string) {
    this.tail = ` ${process.pid} ${location}] `;
    sink.register(this);
    this.rebind();
  }

  /** Called on every settings change: enabled levels get a writer, disabled ones the shared noop. */
  rebind(): void {
    const { sink, tail } = this;
    const { settings: s, locations: at } = sink;
    // Each writer names itself to the stack capture, so the frame read is its caller's.
    const error = (msg: string): void => sink.write('E', at.tail(error, tail), msg);
    const warn = (msg: string): void => sink.write('W', at.tail(warn, tail), msg);
    const info = (msg: string): void => sink.write('I', at.tail(info, tail), msg);
    const max = s.verbose;
    const verbose = (level: number, msg: string): void => { if (level <= max) sink.write('V', at.tail(verbose, tail), msg); };
    this.error = s.error ? error : noop;
    this.warn = s.warning ? warn : noop;
    this.warning = this.warn;
    this.info = s.info ? info : noop;
    this.verbose = max > 0 ? verbose : noop;
  }

  isVerbose(level: number): boolean {
    const max = this.sink.settings.verbose;
    return max > 0 && level <= max;
  }

  child(file: string, line = 1): Logger {
    return new TaggedLogger(this.sink, location(file, line));
  }

  settings(): LogSettingsJson {
    return toJson(this.sink.settings);
  }

  update(partial: Readonly<Record<string, unknown>>): void {
    this.sink.apply(applyUpdate(this.sink.settings, partial));
  }

  close(): Promise<void> {
    this.sink.close();
    return Promise.resolve();
  }

  recent(): readonly LogRecord[] {
    return this.sink.recent();
  }
}

/** Where a record whose writing line cannot be known says it comes from, when no module claimed its logger. */
const ROOT_LOCATION = 'nereid.ts:1';

function location(file: string, line: number): string {
  const name = file.replace(/[^\w.]/g, '_') || 'nereid.ts';
  return `${name}:${Number.isInteger(line) && line >= 0 ? line : 1}`;
}

function toJson(s: LogSettings): LogSettingsJson {
  return {
    log_file: s.file,
    log_info: s.info,
    log_warning: s.warning,
    log_error: s.error,
    log_verbose_level: s.verbose,
    log_format: s.format,
  };
}

/** Validates every key of a logging-extension body, then returns the new settings (Triton's messages). */
function applyUpdate(current: LogSettings, body: Readonly<Record<string, unknown>>): LogSettings {
  const next = { ...current };
  const present = (key: string): boolean => body[key] !== undefined && body[key] !== null;
  if (present('log_file')) {
    throw new NereidError('UNSUPPORTED', 'log file location can not be updated through network protocol');
  }
  if (present('log_info')) next.info = asBool(body, 'log_info');
  if (present('log_warning')) next.warning = asBool(body, 'log_warning');
  if (present('log_error')) next.error = asBool(body, 'log_error');
  if (present('log_verbose_level')) next.verbose = asVerboseLevel(body.log_verbose_level);
  if (present('log_format')) next.format = asFormat(body.log_format);
  return next;
}

function asBool(body: Readonly<Record<string, unknown>>, key: string): boolean {
  const v = body[key];
  if (typeof v !== 'boolean') throw new NereidError('INVALID_ARG', `attempt to access JSON non-boolean as boolean ('${key}')`);
  return v;
}

function asVerboseLevel(v: unknown): number {
  // Triton reads a JSON unsigned integer and keeps it as an int32.
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 0x7fffffff) {
    throw new NereidError('INVALID_ARG', "attempt to access JSON non-unsigned-integer as unsigned-integer ('log_verbose_level')");
  }
  return v;
}

function asFormat(v: unknown): LogFormat {
  if (typeof v !== 'string') throw new NereidError('INVALID_ARG', "attempt to access JSON non-string as string ('log_format')");
  if (v !== 'default' && v !== 'ISO8601') throw new NereidError('INVALID_SETTING', `invalid argument for --log_format, got: ${v}`);
  return v;
}

/**
 * The root logger for one server. Opens `settings.file` (append) at once; throws NereidError INVALID_ARG when
 * it cannot be opened. Call `close()` at shutdown. `env` gives TRITON_SERVER_ESCAPE_LOG_MESSAGES.
 */
export function createLogger(settings: LogSettings, env: NodeJS.ProcessEnv = process.env): Logger {
  return new TaggedLogger(new Sink(settings, env['TRITON_SERVER_ESCAPE_LOG_MESSAGES'] !== '0'), ROOT_LOCATION);
}

const NOOP_SETTINGS: LogSettings = { info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' };

/**
 * Prints nothing, ever. `update` still validates its body (so a frontend behaves the same) but changes nothing,
 * and `settings()` always reports every level off.
 */
export const NOOP_LOGGER: Logger = Object.freeze({
  error: noop,
  warn: noop,
  warning: noop,
  info: noop,
  verbose: noop,
  isVerbose: () => false,
  child: () => NOOP_LOGGER,
  settings: () => toJson(NOOP_SETTINGS),
  update: (partial: Readonly<Record<string, unknown>>) => void applyUpdate(NOOP_SETTINGS, partial),
  close: () => Promise.resolve(),
});
