import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isNereidError, type ErrorCode } from '../../src/errors.js';
import { createLogger, NOOP_LOGGER, RECENT_CHARS, RECENT_LINES, type LogSettings, type Logger } from '../../src/observability/logger.js';
import { ROOT } from '../helpers/paths.js';

/** `observability_logger.test.ts:<line>`: the one line of this file that makes the call `call` (not one that asks where it is). */
function at(call: string): string {
  const lines = readFileSync(join(ROOT, 'test', 'observability', 'logger.test.ts'), 'utf8').split('\n');
  const found = lines.flatMap((l, i) => (l.includes(call) && !l.includes('at(') ? [i + 1] : []));
  assert.equal(found.length, 1, `'${call}' is on lines ${found.join(', ')} of logger.test.ts`);
  return `observability_logger\\.test\\.ts:${found[0]}`;
}

const ALL_ON: LogSettings = { info: true, warning: true, error: true, verbose: 0, format: 'default', file: '' };

/** A logger writing to a fresh temp file; `lines()` closes nothing and reads what was written so far. */
function fileLogger(settings: Partial<LogSettings> = {}, env: NodeJS.ProcessEnv = {}): { log: Logger; lines: () => string[]; done: () => Promise<void> } {
  const dir = mkdtempSync(join(tmpdir(), 'nereid-log-'));
  const file = join(dir, 'server.log');
  const log = createLogger({ ...ALL_ON, ...settings, file }, env);
  return {
    log,
    lines: () => readFileSync(file, 'utf8').split('\n').filter((l) => l !== ''),
    done: async () => {
      await log.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function rejects(fn: () => void, code: ErrorCode, message: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(isNereidError(e), `expected a NereidError, got ${String(e)}`);
    assert.equal(e.code, code);
    assert.match(e.message, message);
    return true;
  });
}

test('default format: LMMDD hh:mm:ss.uuuuuu <pid> <file>:<line>] msg, in UTC', async () => {
  const { log, lines, done } = fileLogger();
  const before = new Date();
  log.info('hello world');
  log.warn('careful');
  log.error('broken');
  const [info, warn, error] = lines();
  const m = new RegExp(`^I(\\d\\d)(\\d\\d) (\\d\\d):(\\d\\d):(\\d\\d)\\.(\\d{6}) (\\d+) ${at("log.info('hello world')")}\\] "hello world"$`).exec(info!);
  assert.ok(m, info);
  // Either side of a UTC midnight the line was written on.
  const days = [before, new Date()].map((d) => `${d.getUTCMonth() + 1}/${d.getUTCDate()}`);
  assert.ok(days.includes(`${Number(m[1])}/${Number(m[2])}`), info);
  assert.equal(Number(m[7]), process.pid);
  assert.match(warn!, new RegExp(`^W\\d{4} \\d\\d:\\d\\d:\\d\\d\\.\\d{6} \\d+ ${at("log.warn('careful')")}\\] "careful"$`));
  assert.match(error!, new RegExp(`^E\\d{4} \\d\\d:\\d\\d:\\d\\d\\.\\d{6} \\d+ ${at("log.error('broken')")}\\] "broken"$`));
  await done();
});

test('ISO8601 format: YYYY-MM-DDThh:mm:ssZ L <pid> <file>:<line>] msg', async () => {
  const { log, lines, done } = fileLogger({ format: 'ISO8601' });
  const year = new Date().getUTCFullYear();
  log.child('server.ts').info('Started HTTPService at 0.0.0.0:8000');
  const [line] = lines();
  assert.match(line!, new RegExp(`^${year}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ I ${process.pid} ${at("log.child('server.ts').info(")}\\] "Started HTTPService at 0\\.0\\.0\\.0:8000"$`));
  await done();
});

// Triton prints the file and line of the LOG_* statement; so does Nereid, of the TypeScript source, whichever
// logger (root or child, whatever its label) wrote the record and at every level.
test('a record names the file and line of the statement that wrote it; children share the output', async () => {
  const { log, lines, done } = fileLogger({ verbose: 1 });
  log.child('manager.ts', 42).info('loaded');
  log.info('from the root');
  log.child('inference-server.ts').child('model/simple').info('odd names');
  for (let i = 0; i < 2; i++) log.child('x').verbose(1, 'again');
  assert.match(lines()[0]!, new RegExp(` ${at("log.child('manager.ts', 42).info('loaded')")}\\] "loaded"$`));
  assert.match(lines()[1]!, new RegExp(` ${at("log.info('from the root')")}\\] "from the root"$`));
  assert.match(lines()[2]!, new RegExp(` ${at("child('model/simple').info('odd names')")}\\] "odd names"$`));
  assert.match(lines()[3]!, new RegExp(`^V.* ${at("log.child('x').verbose(1, 'again')")}\\] "again"$`));
  const location = (line: string): string => / (\S+)\] /.exec(line)![1]!;
  assert.equal(location(lines()[4]!), location(lines()[3]!), 'a call site read again from the remembered locations');
  await done();
});

// The record pattern of Triton's qa/L0_logging/log_format_test.py (default_log_record): the location must be
// `[\w.]+:\d+`, which a bare tag (`nereid]`) or a path with `/` or `-` fails.
const TRITON_DEFAULT_RECORD = /^(\w)(\d{2})(\d{2}) (\d{2}:\d{2}:\d{2}\.\d{6}) (\d+) ([\w.]+):(\d+)\] (.*)$/s;

test('every record matches the pattern Triton\'s log-format test reads', async () => {
  const { log, lines, done } = fileLogger({ verbose: 1 });
  log.info('root');
  log.child('inference-server.ts').warn('module');
  log.child('limit-refusals.ts', 7).verbose(1, 'detail');
  for (const line of lines()) {
    const m = TRITON_DEFAULT_RECORD.exec(line);
    assert.ok(m, line);
    assert.ok(['E', 'W', 'I', 'V'].includes(m[1]!), line);
    assert.doesNotThrow(() => JSON.parse(m[8]!), line);
  }
  assert.equal(lines().length, 3);
  await done();
});

test('verbose levels: printed up to the configured level, as V lines', async () => {
  const { log, lines, done } = fileLogger({ verbose: 2 });
  log.verbose(1, 'one');
  log.verbose(2, 'two');
  log.verbose(3, 'three');
  assert.deepEqual(lines().map((l) => l.replace(/^(.).*\] /, '$1 ')), ['V "one"', 'V "two"']);
  assert.equal(log.isVerbose(2), true);
  assert.equal(log.isVerbose(3), false);
  await done();
});

test('disabled levels are the one shared no-op; update swaps methods on every logger', async () => {
  const { log, lines, done } = fileLogger({ info: false, warning: false });
  const child = log.child('c');
  assert.equal(log.info, child.info, 'disabled methods are the same noop');
  assert.equal(log.info, log.warn);
  assert.equal(log.verbose, log.info, 'verbose 0 is the noop too');
  log.info('hidden');
  child.warn('hidden');
  log.update({ log_info: true, log_verbose_level: 1 });
  assert.notEqual(child.info, log.warn);
  child.info('shown');
  child.verbose(1, 'detail');
  log.update({ log_info: false, log_error: false });
  child.info('hidden again');
  child.error('hidden again');
  assert.deepEqual(lines().map((l) => l.replace(/^.*\] /, '')), ['"shown"', '"detail"']);
  await done();
});

test('format can be switched at run time', async () => {
  const { log, lines, done } = fileLogger();
  log.info('a');
  log.update({ log_format: 'ISO8601' });
  log.info('b');
  assert.match(lines()[0]!, /^I\d{4} /);
  assert.match(lines()[1]!, /^\d{4}-\d\d-\d\dT/);
  await done();
});

test('settings() reports the full set under Triton\'s keys', async () => {
  const { log, done } = fileLogger({ verbose: 1, format: 'ISO8601' });
  const s = log.settings();
  assert.deepEqual(Object.keys(s), ['log_file', 'log_info', 'log_warning', 'log_error', 'log_verbose_level', 'log_format']);
  assert.match(s.log_file, /server\.log$/);
  assert.deepEqual({ ...s, log_file: '' }, {
    log_file: '', log_info: true, log_warning: true, log_error: true, log_verbose_level: 1, log_format: 'ISO8601',
  });
  await done();
  assert.equal(createLogger(ALL_ON).settings().log_file, '');
});

test('update() validates every key before applying any', async () => {
  const { log, done } = fileLogger();
  rejects(() => log.update({ log_file: 'other.log' }), 'UNSUPPORTED', /^log file location can not be updated through network protocol$/);
  // Triton's JSON wrapper reports a value of the wrong type as INTERNAL; Nereid says INVALID_ARG, with its words.
  rejects(() => log.update({ log_info: 'true' }), 'INVALID_ARG', /non-boolean as boolean/);
  rejects(() => log.update({ log_verbose_level: -1 }), 'INVALID_ARG', /unsigned-integer/);
  rejects(() => log.update({ log_verbose_level: 1.5 }), 'INVALID_ARG', /unsigned-integer/);
  rejects(() => log.update({ log_format: 7 }), 'INVALID_ARG', /non-string as string/);
  rejects(() => log.update({ log_format: 'iso8601' }), 'INVALID_SETTING', /^invalid argument for --log_format, got: iso8601$/);
  rejects(() => log.update({ log_info: false, log_format: 'json' }), 'INVALID_SETTING', /json/);
  assert.equal(log.settings().log_info, true, 'a rejected update changes nothing');
  log.update({ log_file: null, log_info: null, log_warning: false, unknown_key: 1 });
  assert.equal(log.settings().log_info, true);
  assert.equal(log.settings().log_warning, false);
  log.update({});
  await done();
});

test('after close, lines go to stderr rather than to a closed descriptor', async () => {
  const { log, lines, done } = fileLogger({ info: false });
  log.error('before');
  await log.close();
  await log.close();
  log.child('x'); // still usable
  assert.deepEqual(lines().length, 1);
  await done();
});

test('an unopenable log file is an INVALID_ARG error', () => {
  rejects(() => createLogger({ ...ALL_ON, file: join(tmpdir(), 'no-such-dir-nereid', 'x', 'server.log') }), 'INVALID_ARG', /failed to open log file/);
});

test('NOOP_LOGGER prints nothing, reports everything off, still validates updates', async () => {
  NOOP_LOGGER.info('x');
  NOOP_LOGGER.child('y').error('x');
  NOOP_LOGGER.verbose(1, 'x');
  assert.equal(NOOP_LOGGER.isVerbose(1), false);
  NOOP_LOGGER.update({ log_info: true });
  assert.equal(NOOP_LOGGER.settings().log_info, false);
  rejects(() => NOOP_LOGGER.update({ log_format: 'x' }), 'INVALID_SETTING', /log_format/);
  await NOOP_LOGGER.close();
});

test('recent(): the latest warnings and errors written, at most RECENT_LINES of at most RECENT_CHARS characters each', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'nereid-log-ring-'));
  const logger = createLogger({ info: true, warning: true, error: true, verbose: 0, format: 'default', file: join(dir, 'log') });
  try {
    const child = logger.child('model.ts');
    child.info('not kept: info');
    for (let i = 0; i < RECENT_LINES + 50; i++) (i % 2 === 0 ? child.warn : logger.error)(`line ${i}`);
    logger.warn('x'.repeat(RECENT_CHARS + 500));
    const recent = logger.recent!();
    assert.equal(recent.length, RECENT_LINES);
    assert.equal(recent[0]!.message, 'line 51', 'the oldest ones are dropped');
    assert.deepEqual([recent.at(-2)!.level, recent.at(-2)!.message], ['E', `line ${RECENT_LINES + 49}`]);
    assert.equal(recent.at(-1)!.message.length, RECENT_CHARS + 1, 'cut, with an ellipsis');
    assert.ok(!recent.some((r) => r.message.includes('info')));
    logger.update({ log_warning: false });
    logger.warn('not written, not kept');
    assert.notEqual(logger.recent!().at(-1)!.message, 'not written, not kept');
  } finally {
    await logger.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
