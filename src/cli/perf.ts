/** `nereid perf`: flags → a perf run, progress on stderr, results on stdout and in the files asked for. */
import { writeFileSync } from 'node:fs';
import { UsageError } from '../tools/argv.js';
import { parsePerfFlags, PERF_USAGE } from '../tools/perf/options.js';
import { clock, PerfError, runPerf, writeOutputs } from '../tools/perf/run.js';
import { perfReportHtml } from '../tools/report/perf-report.js';

export interface CommandIo {
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stderr: NodeJS.WritableStream & { isTTY?: boolean };
}

/** A progress line: rewritten in place on a terminal, one line per update with -v elsewhere, else silent. */
export function progressWriter(stderr: CommandIo['stderr'], verbose: boolean): (text: string) => void {
  let shown = 0;
  return (text) => {
    if (stderr.isTTY) {
      stderr.write(`\r${text.padEnd(shown)}${text === '' ? '\r' : ''}`);
      shown = text.length;
    } else if (verbose && text !== '') {
      stderr.write(`${text}\n`);
    }
  };
}

/** Ctrl-C: the first stops measuring and keeps what was measured; a second ends the process. */
export function interruptible(): { signal: AbortSignal; dispose(): void } {
  const ac = new AbortController();
  const onSignal = (): void => {
    if (ac.signal.aborted) process.exit(130);
    ac.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    signal: ac.signal,
    dispose: () => {
      process.removeListener('SIGINT', onSignal);
      process.removeListener('SIGTERM', onSignal);
    },
  };
}

export async function perfCommand(argv: readonly string[], io: CommandIo = { stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  let o;
  try {
    o = parsePerfFlags(argv);
  } catch (e) {
    if (e instanceof UsageError) {
      io.stderr.write(`nereid perf: ${e.message}\nRun 'nereid perf --help' for the list of flags.\n`);
      return 2;
    }
    throw e;
  }
  if (o.help) {
    io.stdout.write(PERF_USAGE);
    return 0;
  }
  const stop = interruptible();
  const origin = clock();
  try {
    const run = await runPerf(o, { out: (t) => io.stdout.write(t), progress: progressWriter(io.stderr, o.verbose), signal: stop.signal });
    writeOutputs(o, run, origin.ms, origin.ns);
    if (o.reportFile) writeFileSync(o.reportFile, perfReportHtml(run, o));
    if (run.interrupted) {
      io.stderr.write('nereid perf: interrupted; the levels measured before are above and in the files asked for\n');
      return 130;
    }
    return 0;
  } catch (e) {
    if (e instanceof PerfError) {
      io.stderr.write(`nereid perf: error: ${e.message}\n`);
      return 1;
    }
    throw e;
  } finally {
    stop.dispose();
  }
}
