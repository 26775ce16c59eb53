import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FLAG_EFFECTS, FlagError, parseServeFlags } from '../../src/cli/flags.js';
import { httpFlagWarnings } from '../../src/cli/http-options.js';
import { grpcFlagWarnings } from '../../src/cli/grpc-options.js';
import { EXAMPLES } from '../helpers/paths.js';
import { runNereid } from '../helpers/server.js';

// Every tritonserver flag is implemented, warns why it has no effect, or is refused: none is accepted and then
// dropped without a word.

const REPO = ['--model-repository', '/models'];

/** A value each flag accepts, by its value syntax (flags with their own syntax are named). */
function sample(name: string, arg: string | null): string | undefined {
  const own: Record<string, string> = {
    'trace-config': 'level=TIMESTAMPS', 'trace-level': 'TIMESTAMPS', 'cuda-memory-pool-byte-size': '0:1024',
    'cuda-virtual-address-size': '0:1024', 'model-load-gpu-limit': '0:0.5', 'host-policy': 'gpu0,numa-node=0',
    'min-supported-compute-capability': '6.0', 'grpc-infer-thread-count': '4', 'sagemaker-safe-port-range': '8000-8010',
    'grpc-http2-max-pings-without-data': '5', 'grpc-http2-max-ping-strikes': '5',
  };
  if (own[name] !== undefined) return own[name];
  if (arg === null) return undefined;
  if (arg === '<boolean>') return 'true';
  if (arg === '<integer>') return '3';
  return 'x';
}

const given = (name: string, value: string | undefined): string[] => [...REPO, value === undefined ? `--${name}` : `--${name}=${value}`];

test('each flag that has no effect says so in a warning naming it, when given', () => {
  const warned = FLAG_EFFECTS.filter((f) => f.effect.kind === 'warns');
  assert.ok(warned.length > 10);
  for (const f of warned) {
    const opts = parseServeFlags(given(f.name, sample(f.name, f.arg)));
    const lines = [...opts.warnings, ...httpFlagWarnings(opts), ...grpcFlagWarnings(opts)];
    assert.ok(lines.some((w) => w.includes(`--${f.name}`) && /no effect/.test(w)), `--${f.name}: ${JSON.stringify(lines)}`);
  }
});

test('a flag whose warning concerns some values only is quiet with the others', () => {
  for (const [name, value] of [['allow-gpu-metrics', 'false'], ['allow-sagemaker', 'false'], ['allow-vertex-ai', 'false']]) {
    assert.deepEqual(parseServeFlags(given(name!, value)).warnings, [], name);
  }
});

test('the tracing flags reach the server as --trace-config entries, the deprecated ones turned into theirs', () => {
  const opts = parseServeFlags([...REPO, '--trace-config=level=TIMESTAMPS', '--trace-config=rate=10', '--trace-file=/tmp/t.json', '--trace-level=TENSORS']);
  assert.deepEqual(opts.server.trace, ['level=TIMESTAMPS', 'rate=10', 'triton,file=/tmp/t.json', 'level=TENSORS']);
  assert.ok(!opts.warnings.some((w) => /have no effect/.test(w) && /trace/.test(w)), JSON.stringify(opts.warnings));
  assert.equal(opts.warnings.filter((w) => /has been deprecated/.test(w)).length, 2);
});

test('refused flags stop the parse with a message saying why', () => {
  const refused = FLAG_EFFECTS.filter((f) => f.effect.kind === 'refused');
  assert.ok(refused.length >= 8);
  for (const f of refused) {
    assert.throws(() => parseServeFlags(given(f.name, sample(f.name, f.arg))), (e: unknown) =>
      e instanceof FlagError && e.message.includes(`--${f.name}`) && /not supported: Nereid has no/.test(e.message), f.name);
  }
});

test('--model-load-retry-count and --model-namespacing reach the server options', () => {
  const o = parseServeFlags([...REPO, '--model-load-retry-count=2', '--model-namespacing=true']);
  assert.equal(o.server.modelLoadRetryCount, 2);
  assert.equal(o.server.modelNamespacing, true);
  assert.equal(parseServeFlags([...REPO, '--model-load-retry-count=-3']).server.modelLoadRetryCount, 0);
  assert.deepEqual(o.extra, {});
  assert.deepEqual(o.warnings, []);
});

test('a repository URL of an unknown scheme or a malformed one is refused at start: exit 2; s3://, gs:// and as:// are taken', async () => {
  for (const url of ['https://example.com/models', 'ftp://host/models', 's3://', 'as://account-only']) {
    assert.throws(() => parseServeFlags(['--model-repository', url]), (e: unknown) => e instanceof FlagError && e.message.includes('--model-repository'), url);
  }
  for (const url of ['s3://my-bucket/models', 's3://127.0.0.1:9000/bucket/m', 's3://https://host:443/bucket', 'gs://bucket/m', 'as://account/container']) {
    assert.deepEqual(parseServeFlags(['--model-repository', url]).server.modelRepositories, [url]);
  }
  const run = await runNereid(['serve', '--model-repository', EXAMPLES, '--model-repository=https://example.com/models', '--allow-metrics=false']);
  assert.equal(run.code, 2);
  assert.match(run.out, /https:\/\/example.com\/models: https:\/\/ is not a repository scheme/);
  assert.doesNotMatch(run.out, /failed to stat/);
  const sagemaker = await runNereid(['serve', '--model-repository', EXAMPLES, '--allow-sagemaker=true']);
  assert.equal(sagemaker.code, 2);
  assert.match(sagemaker.out, /--allow-sagemaker' is not supported: Nereid has no SageMaker endpoint/);
});
