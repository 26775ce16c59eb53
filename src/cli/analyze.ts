/** `nereid analyze`: flags → a config search, progress on stderr, a summary on stdout, files under --export-path. */
import { UsageError } from '../tools/argv.js';
import { ANALYZE_USAGE, parseAnalyzeFlags } from '../tools/analyze/options.js';
import { writeAnalyzeOutputs } from '../tools/analyze/outputs.js';
import { AnalyzeError, pointText, runAnalyze } from '../tools/analyze/run.js';
import { gainText } from '../tools/report/analyze-report.js';
import { interruptible, progressWriter, type CommandIo } from './perf.js';

export async function analyzeCommand(argv: readonly string[], io: CommandIo = { stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  let o;
  try {
    o = parseAnalyzeFlags(argv);
  } catch (e) {
    if (e instanceof UsageError) {
      io.stderr.write(`nereid analyze: ${e.message}\nRun 'nereid analyze --help' for the list of flags.\n`);
      return 2;
    }
    throw e;
  }
  if (o.help) {
    io.stdout.write(ANALYZE_USAGE);
    return 0;
  }
  const stop = interruptible();
  try {
    const progress = progressWriter(io.stderr, true);
    const r = await runAnalyze(o, { out: (t) => (progress(''), io.stdout.write(t)), progress, signal: stop.signal });
    progress('');
    const files = writeAnalyzeOutputs(r, o.exportPath, o.outputRepository);
    const out: string[] = [''];
    if (r.interrupted) out.push('Interrupted: the results below are those measured so far.');
    const base = r.configs.find((c) => c.candidate === undefined);
    if (!r.chosen) {
      out.push('No config could be measured.');
    } else {
      const b = r.chosen.best!;
      if (!r.chosenPasses) out.push(`No config meets the constraints; the closest is ${r.chosen.name} (${r.chosen.description}): ${pointText(b)}.`);
      else out.push(`Chosen: ${r.chosen.name} (${r.chosen.description}): ${pointText(b)}.`);
      if (base?.best) out.push(gainText(r.chosen, base, r.baselineRuns));
      out.push(`Pareto set: ${[...new Set(r.pareto.map((p) => p.config.name))].join(', ')}`);
    }
    const failed = r.configs.filter((c) => c.error);
    if (failed.length) out.push(`Skipped ${failed.length} config(s) that did not serve (reasons in the report).`);
    if (files.bestConfig) out.push(`Best config: ${files.bestConfig}`);
    out.push(`Results: ${files.csv}`, `Report: ${files.report}`, '');
    io.stdout.write(out.join('\n'));
    return r.interrupted ? 130 : 0;
  } catch (e) {
    if (e instanceof AnalyzeError) {
      io.stderr.write(`nereid analyze: error: ${e.message}\n`);
      return 1;
    }
    throw e;
  } finally {
    stop.dispose();
  }
}
