import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getopt, GetoptError, type GetoptOption, type GetoptProblem } from '../src/getopt.js';
import { parseServeFlags } from '../src/cli/flags.js';
import { parsePerfFlags } from '../src/tools/perf/options.js';
import { parseAnalyzeFlags } from '../src/tools/analyze/options.js';

// The one command-line reader of serve, perf and analyze: getopt_long's rules, each command's own words.

const OPTIONS: readonly GetoptOption[] = [
  { name: 'model-repository', short: 'm', takes: 'value' },
  { name: 'model-store', takes: 'value', id: 'model-repository' },
  { name: 'model-control-mode', takes: 'value' },
  { name: 'verbose', short: 'v', takes: 'optional' },
  { name: 'disable', takes: 'nothing' },
];

function read(argv: string[], abbreviations = true): [string, string | undefined][] {
  return [...getopt(argv, OPTIONS, { abbreviations })].map((i) => (i.option ? [i.option.name, i.value] : ['', i.positional]));
}

function problem(argv: string[], abbreviations = true): GetoptProblem {
  try {
    read(argv, abbreviations);
  } catch (e) {
    assert.ok(e instanceof GetoptError);
    return e.problem;
  }
  assert.fail(`no problem with ${argv.join(' ')}`);
}

test('long and short options, inline and separate values, optional values, positionals in order', () => {
  assert.deepEqual(read(['--model-repository=/a=b', '--model-repository', '--verbose', '-m/c', '-m', '/d', 'pos', '-v', '-vfalse', '--verbose=0', '--disable', '-']), [
    ['model-repository', '/a=b'], ['model-repository', '--verbose'], ['model-repository', '/c'], ['model-repository', '/d'], ['', 'pos'],
    ['verbose', undefined], ['verbose', 'false'], ['verbose', '0'], ['disable', undefined], ['', '-'],
  ]);
});

test('-- ends the options: everything after it is positional', () => {
  assert.deepEqual(read(['-v', '--', '--verbose', '-m']), [['verbose', undefined], ['', '--verbose'], ['', '-m']]);
});

test('abbreviations: a unique prefix, or one fitting only aliases of one option; otherwise ambiguous or unknown', () => {
  assert.deepEqual(read(['--model-c=poll', '--verb']), [['model-control-mode', 'poll'], ['verbose', undefined]]);
  assert.deepEqual(read(['--model-s', '/m']), [['model-store', '/m']]);
  const ambiguous = problem(['--model-=x']);
  assert.equal(ambiguous.kind, 'ambiguous');
  assert.deepEqual(ambiguous.kind === 'ambiguous' && [ambiguous.spelled, ambiguous.fits.map((f) => f.name)], ['--model-', ['model-repository', 'model-store', 'model-control-mode']]);
  assert.deepEqual(problem(['--verb'], false), { kind: 'unknown', arg: '--verb', spelled: '--verb' });
});

test('problems: unknown, a value missing at the end, a value given to an option that takes none', () => {
  assert.deepEqual(problem(['--nope=1']), { kind: 'unknown', arg: '--nope=1', spelled: '--nope' });
  assert.deepEqual(problem(['-x5']), { kind: 'unknown', arg: '-x5', spelled: '-x' });
  assert.deepEqual(problem(['--=1']), { kind: 'unknown', arg: '--=1', spelled: '--' });
  assert.equal(problem(['-m']).kind, 'missing-value');
  assert.equal(problem(['--disable=true']).kind, 'unwanted-value');
});

const refusal = (parse: () => unknown): string => {
  try {
    parse();
  } catch (e) {
    return (e as Error).message;
  }
  return 'accepted';
};

test('serve, perf and analyze read one argument list the same way, each refusing in its own words', () => {
  // A value-taking flag takes the next argument, even one that looks like a flag, in every command.
  assert.deepEqual(parseServeFlags(['--model-repository', '--x']).server.modelRepositories, ['--x']);
  assert.equal(parsePerfFlags(['--model-name', '--x']).model, '--x');
  assert.equal(parseAnalyzeFlags(['--model-repository', '--x', '--profile-models', 'm']).repository, '--x');
  // Everything after -- is an argument, not a flag: tritonserver's words and perf_analyzer's.
  assert.equal(refusal(() => parseServeFlags(['--model-repository=/m', '--', '--id=x'])), 'Unexpected argument: --id=x');
  assert.equal(refusal(() => parsePerfFlags(['-m', 'simple', '--', '-v'])), "unexpected argument '-v'");
  assert.equal(refusal(() => parseAnalyzeFlags(['--model-repository', '/m', '--profile-models', 'm', '--', 'x'])), "unexpected argument 'x'");
  assert.equal(parsePerfFlags(['-m', 'simple', '--']).model, 'simple');
  // Prefixes are tritonserver's (getopt_long), not perf_analyzer's here: the tools' flags are exact.
  assert.deepEqual(parseServeFlags(['--model-repo=/m']).server.modelRepositories, ['/m']);
  assert.equal(refusal(() => parsePerfFlags(['--model-n', 'simple'])), "unknown flag '--model-n'");
  assert.equal(refusal(() => parsePerfFlags(['-m', 'simple', '-Z'])), "unknown flag '-Z'");
  assert.equal(refusal(() => parsePerfFlags(['-m'])), "flag '-m' needs a value");
  assert.equal(refusal(() => parsePerfFlags(['--model-name'])), "flag '--model-name' needs a value");
  assert.equal(refusal(() => parseServeFlags(['--model-repository'])), "Option '--model-repository' requires a value: <path>");
});
