import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseModelConfig } from '../../../src/config/index.js';
import { needChromium, openReport } from '../../helpers/browser.js';
import { EXAMPLES, FIXTURES, ROOT } from '../../helpers/paths.js';
import { runNereid } from '../../helpers/server.js';

// `nereid analyze` on tiny searches: every candidate is a real `nereid serve` process on a copy of the model,
// measured in short windows over two concurrencies.

const TINY = ['--concurrency', '1,2', '--measurement-interval', '200', '--max-trials', '3', '--warmup-request-count', '100'];

async function scratch(): Promise<{ dir: string; args: string[]; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'nereid-analyze-test-'));
  return { dir, args: ['--output-model-repository-path', join(dir, 'out'), '--export-path', dir], remove: () => rm(dir, { recursive: true, force: true }) };
}

test('brute search: a candidate that does not load is skipped with its reason; results, best config and a report that renders', async (t) => {
  const s = await scratch();
  try {
    const r = await runNereid(['analyze', '-m', join(FIXTURES, 'js'), '--profile-models', 'one_instance_only', ...s.args, ...TINY,
      '--run-config-search-max-instance-count', '2', '--run-config-search-min-model-batch-size', '4', '--run-config-search-max-model-batch-size', '4']);
    assert.equal(r.code, 0, r.out);
    // The starting config and four candidates: 1 or 2 instances × dynamic batching on or off.
    for (const k of [0, 1]) assert.match(r.out, new RegExp(`one_instance_only_config_${k} \\(1 instance, max_batch_size 4, .*\\): [\\d.]+ infer/sec`));
    for (const k of [2, 3]) assert.match(r.out, new RegExp(`one_instance_only_config_${k} \\(2 instances.*skipped: .*this model runs one instance at most`));
    assert.match(r.out, /Chosen: one_instance_only_config_(default|0|1) /);
    assert.match(r.out, /Pareto set: /);
    const csv = (await readFile(join(s.dir, 'results', 'metrics-model-inference.csv'), 'utf8')).trim().split('\n');
    assert.match(csv[0]!, /^Model,Batch,Concurrency,Model Config Path,Instance Group,Max Batch Size,Satisfies Constraints,Throughput \(infer\/sec\),p99 Latency \(ms\)/);
    assert.equal(csv.length, 1 + 3 * 2, 'three configs served, two concurrencies each');
    const best = parseModelConfig(await readFile(join(s.dir, 'best_config', 'one_instance_only', 'config.pbtxt'), 'utf8'), 'best');
    assert.equal(best.name, 'one_instance_only');
    assert.equal(best.instance_group[0]!.count, 1);
    for (const name of ['default', '0', '1', '2', '3']) assert.ok(existsSync(join(s.dir, 'out', `one_instance_only_config_${name}`, 'config.pbtxt')));
    if (!needChromium(t)) return;
    const page = await openReport(join(s.dir, 'reports', 'summaries', 'one_instance_only', 'result_summary.html'), 'analyze-report.png');
    assert.deepEqual(page.consoleErrors, []);
    assert.deepEqual(page.requests, [], 'the report fetches nothing');
    assert.equal(page.chartsRendered, 1);
    assert.ok(page.canvases >= 1);
    assert.equal(page.barParts, 3 * 6, 'a stacked bar of six parts per measured config');
    assert.match(page.text, /skipped: .*one instance at most/);
    assert.match(page.text, /Chosen config against the starting one/);
  } finally {
    await s.remove();
  }
});

test('quick search under a constraint no config meets: says so and shows the closest', async () => {
  const s = await scratch();
  try {
    const r = await runNereid(['analyze', '-m', EXAMPLES, '--profile-models', 'simple', ...s.args, ...TINY, '--run-config-search-mode', 'quick',
      '--run-config-search-max-instance-count', '2', '--run-config-search-min-model-batch-size', '8', '--run-config-search-max-model-batch-size', '8',
      '--run-config-search-max-configs', '3', '--latency-budget', '0.0001']);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /quick search/);
    assert.match(r.out, /No config meets the constraints; the closest is simple_config_\w+ /);
    assert.equal([...r.out.matchAll(/^ {2}simple_config_\d+ /gm)].length, 2, 'two candidates beside the starting config: the limit of three configs');
  } finally {
    await s.remove();
  }
});

test('bad input: an unknown model, a missing repository, an output repository in the way, bad flags', async () => {
  const s = await scratch();
  try {
    const unknown = await runNereid(['analyze', '-m', EXAMPLES, '--profile-models', 'no_such_model', ...s.args]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.out, /no model 'no_such_model' in .*model_repository \(it has: .*simple/);
    const missing = await runNereid(['analyze', '-m', join(s.dir, 'nowhere'), '--profile-models', 'simple', ...s.args]);
    assert.equal(missing.code, 1);
    assert.match(missing.out, /is not a folder/);
    await runNereid(['analyze', '-m', EXAMPLES, '--profile-models', 'simple', ...s.args, ...TINY, '--run-config-search-disable', '--concurrency', '1']);
    const inTheWay = await runNereid(['analyze', '-m', EXAMPLES, '--profile-models', 'simple', ...s.args]);
    assert.equal(inTheWay.code, 1);
    assert.match(inTheWay.out, /exists: remove it or pass --override-output-model-repository/);
    const flags = await runNereid(['analyze', '-m', EXAMPLES, '--profile-models', 'simple', '--objectives', 'gpu_used_memory']);
    assert.equal(flags.code, 2);
    assert.match(flags.out, /'gpu_used_memory' is not one of perf_throughput, perf_latency_p99/);
  } finally {
    await s.remove();
  }
});

test('Ctrl-C keeps the results measured so far', async () => {
  const s = await scratch();
  try {
    const child = spawn(process.execPath, [join(ROOT, 'bin', 'nereid.js'), 'analyze', '-m', EXAMPLES, '--profile-models', 'simple', ...s.args, ...TINY, '--run-config-search-max-instance-count', '4'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let sent = false;
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    const code = await new Promise<number | null>((resolve) => {
      child.stdout.on('data', (b: Buffer) => {
        out += b.toString();
        // Once, when the starting config and one candidate are measured (a second Ctrl-C ends the process at once).
        if (!sent && /simple_config_0 \(/.test(out)) {
          sent = true;
          child.kill('SIGINT');
        }
      });
      child.once('exit', (c) => resolve(c));
    });
    assert.equal(code, 130, out);
    assert.match(out, /Interrupted: the results below are those measured so far/);
    const csv = (await readFile(join(s.dir, 'results', 'metrics-model-inference.csv'), 'utf8')).trim().split('\n');
    assert.ok(csv.length >= 1 + 2, out);
    assert.ok(existsSync(join(s.dir, 'reports', 'summaries', 'simple', 'result_summary.html')));
  } finally {
    await s.remove();
  }
});

/**
 * A model that slows down as it runs, so that no three windows of a measurement agree, and whose first server
 * of a search (the starting config's first run) is three times slower than every later one: the starting
 * config's two runs then differ far more than a candidate's gain over their median.
 */
const DRIFTING_MODEL = `import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { InferenceResponse, Tensor, getInputTensorByName } from 'nereid/backend-utils';

export default class Drifting {
  initialize(args) {
    const file = join(dirname(args.model_repository), 'initializations');
    let n = 0;
    try { n = Number(readFileSync(file, 'utf8')); } catch {}
    writeFileSync(file, String(n + 1));
    this.factor = n === 0 ? 3 : 1;
    this.count = 0;
  }
  async execute(requests) {
    // Slower with every request it has served (never stable), and the first instance ever made three times
    // slower (the starting config's two runs disagree); by count, not by time, so that the instances after the
    // first behave alike however long the machine took between their load and their measurement.
    this.count += 1;
    await new Promise((resolve) => setTimeout(resolve, this.factor * (2 + this.count / 4)));
    return requests.map((r) => new InferenceResponse([new Tensor('OUT', getInputTensorByName(r, 'IN').asArray())]));
  }
}
`;

test('measurements whose windows never agree are marked not stable; a gain within the starting config\'s noise is no clear win', async () => {
  const s = await scratch();
  try {
    const repo = join(s.dir, 'models');
    await mkdir(join(repo, 'drifting', '1'), { recursive: true });
    await writeFile(join(repo, 'drifting', '1', 'model.mjs'), DRIFTING_MODEL);
    await writeFile(join(repo, 'drifting', 'config.pbtxt'), `backend: "javascript"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
`);
    const r = await runNereid(['analyze', '-m', repo, '--profile-models', 'drifting', ...s.args, '--concurrency', '1', '--measurement-interval', '200',
      '--max-trials', '3', '--warmup-request-count', '20', '--run-config-search-max-instance-count', '1']);
    assert.equal(r.code, 0, r.out);
    // The log, the CSV and the report all say so, as `nereid perf` warns.
    assert.match(r.out, /drifting_config_default \(starting config\): [\d.]+ infer\/sec at concurrency 1, p99 [\d.]+ ms \(not stable\)/);
    assert.match(r.out, /Chosen: drifting_config_0 \(.*\): [\d.]+ infer\/sec at concurrency 1, p99 [\d.]+ ms \(not stable\)\./);
    const csv = (await readFile(join(s.dir, 'results', 'metrics-model-inference.csv'), 'utf8')).trim().split('\n');
    assert.match(csv[0]!, /,Measurement$/);
    for (const row of csv.slice(1)) assert.match(row, /,not stable$/, row);
    const report = await readFile(join(s.dir, 'reports', 'summaries', 'drifting', 'result_summary.html'), 'utf8');
    assert.match(report, /not stable at concurrency 1/);
    // Two runs of the starting config by default; the candidate's gain over their median is within their spread.
    assert.match(r.out, /\(\+[\d.]+%\)\. Within the starting config's run-to-run noise \(its 2 runs: [\d.]+, [\d.]+ infer\/sec, [\d.]+% apart\): no clear win\./);
    assert.match(report, /no clear win/);
  } finally {
    await s.remove();
  }
});
