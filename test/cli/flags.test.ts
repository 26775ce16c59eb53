import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FLAG_NAMES, FlagError, parseServeFlags, USAGE, type ServeOptions } from '../../src/cli/flags.js';

const REPO = ['--model-repository', '/models'];
const parse = (...args: string[]): ServeOptions => parseServeFlags([...REPO, ...args]);

/** Asserts a FlagError whose message matches every pattern. */
function fails(args: string[], ...patterns: RegExp[]): void {
  assert.throws(() => parseServeFlags(args), (e: unknown) => {
    assert.ok(e instanceof FlagError, `expected a FlagError, got ${String(e)}`);
    for (const p of patterns) assert.match(e.message, p);
    return true;
  });
}

test('defaults are tritonserver\'s', () => {
  const o = parseServeFlags(REPO);
  assert.deepEqual(o.server, {
    modelRepositories: ['/models'], modelControlMode: 'none', loadModels: [], repositoryPollSecs: 0,
    strictModelConfig: false, modelConfigName: '', exitOnError: true, strictReadiness: true, exitTimeoutSecs: 30,
    backendConfig: {}, id: 'triton', modelLoadThreadCount: 4,
  });
  assert.deepEqual(o.http, { allow: true, port: 8000, address: '0.0.0.0', maxInputSize: 67108864 });
  assert.deepEqual(o.grpc, { allow: true, port: 8001, address: '0.0.0.0' });
  assert.deepEqual(o.metrics, { allow: true, port: 8002, address: '0.0.0.0', intervalMs: 2000 });
  assert.deepEqual(o.log, { info: true, warning: true, error: true, verbose: 0, format: 'default', file: '' });
  assert.equal(o.help, false);
  assert.deepEqual(o.extra, {});
  assert.deepEqual(o.warnings, []);
});

test('--flag=value and --flag value are the same; a value may contain "="', () => {
  const a = parseServeFlags(['--model-repository=/m', '--id=a=b', '--http-port=9000']);
  const b = parseServeFlags(['--model-repository', '/m', '--id', 'a=b', '--http-port', '9000']);
  assert.deepEqual(a, b);
  assert.equal(a.server.id, 'a=b');
  assert.equal(a.http.port, 9000);
});

test('a value-taking flag takes the next argument even when it looks like a flag', () => {
  assert.equal(parse('--id', '--log-info=false').server.id, '--log-info=false');
  fails([...REPO, '--strict-readiness', '--log-info=true'], /"--strict-readiness"/, /'--log-info=true'/, /--strict-readiness=<value>/);
  fails([...REPO, '--strict-model-config'], /'--strict-model-config' requires a value/);
});

test('every boolean spelling, in any case', () => {
  for (const v of ['true', 'TRUE', 'True', 'on', 'On', 'ON', '1']) assert.equal(parse(`--strict-readiness=${v}`).server.strictReadiness, true, v);
  for (const v of ['false', 'FALSE', 'off', 'OFF', 'Off', '0']) assert.equal(parse(`--exit-on-error=${v}`).server.exitOnError, false, v);
  for (const v of ['yes', 'no', '', '2', 't']) fails([...REPO, `--log-info=${v}`], /"--log-info"/, new RegExp(`got '${v}'`), /true, on, 1, false, off or 0/);
});

test('logging flags', () => {
  const o = parse('--log-verbose=3', '--log-info=0', '--log-warning=off', '--log-error=false', '--log-format=ISO8601', '--log-file=/tmp/x.log');
  assert.deepEqual(o.log, { info: false, warning: false, error: false, verbose: 3, format: 'ISO8601', file: '/tmp/x.log' });
  assert.equal(parse('--log-verbose=TRUE').log.verbose, 1);
  assert.equal(parse('--log-verbose=false').log.verbose, 0);
  assert.equal(parse('--log-verbose=-2').log.verbose, 0);
  fails([...REPO, '--log-verbose=on'], /"--log-verbose"/, /'on'/);
  fails([...REPO, '--log-format=iso8601'], /"--log-format"/, /'default' or 'ISO8601'/);
  fails([...REPO, '--log-format=json'], /"--log-format"/);
});

test('integers are whole and range-checked', () => {
  fails([...REPO, '--http-port=80.5'], /"--http-port"/, /'80.5'/, /\[0, 65535\]/);
  fails([...REPO, '--http-port=65536'], /65536/);
  fails([...REPO, '--grpc-port=-1'], /"--grpc-port"/);
  fails([...REPO, '--metrics-port=12abc'], /"--metrics-port"/);
  fails([...REPO, '--exit-timeout-secs=2147483648'], /"--exit-timeout-secs"/, /2147483647/);
  fails([...REPO, '--grpc-infer-thread-count=1'], /\[2, 128\]/);
  assert.deepEqual(parse('--grpc-infer-thread-count=+128').extra['grpc-infer-thread-count'], ['128']);
});

test('port 0 means "pick one" and never collides', () => {
  const o = parse('--http-port=0', '--grpc-port=0', '--metrics-port=0');
  assert.deepEqual([o.http.port, o.grpc.port, o.metrics.port], [0, 0, 0]);
});

test('--grpc-max-decompressed-size is an int64 greater than 0, kept for the gRPC frontend', () => {
  assert.equal(parse('--grpc-max-decompressed-size=1').extra['grpc-max-decompressed-size']?.at(-1), '1');
  fails([...REPO, '--grpc-max-decompressed-size=0'], /"--grpc-max-decompressed-size"/, /greater than 0/);
  fails([...REPO, '--grpc-max-decompressed-size=x'], /"--grpc-max-decompressed-size"/);
});

test('--http-max-input-size is an int64 greater than 0', () => {
  assert.equal(parse('--http-max-input-size=1').http.maxInputSize, 1);
  assert.equal(parse('--http-max-input-size=4294967296').http.maxInputSize, 4294967296);
  fails([...REPO, '--http-max-input-size=0'], /"--http-max-input-size"/, /greater than 0/);
  fails([...REPO, '--http-max-input-size=9223372036854775808'], /"--http-max-input-size"/);
});

test('--exit-drain-secs: default 0, must be less than --exit-timeout-secs', () => {
  assert.equal(parse().exitDrainSecs, 0);
  assert.equal(parse('--exit-drain-secs=5').exitDrainSecs, 5);
  assert.equal(parse('--exit-drain-secs=5', '--exit-timeout-secs=6').exitDrainSecs, 5);
  fails([...REPO, '--exit-drain-secs=30'], /--exit-drain-secs \(30\) must be less than --exit-timeout-secs \(30\)/);
  fails([...REPO, '--exit-timeout-secs=3', '--exit-drain-secs=5'], /must be less than --exit-timeout-secs \(3\)/);
  fails([...REPO, '--exit-drain-secs=-1'], /"--exit-drain-secs"/);
});

test('--openai-response-store: a redis:// URL; none keeps stored responses in memory', () => {
  assert.equal(parse('--openai-port=9000', '--openai-response-store=redis://10.0.0.5:6380/2').openai.responseStoreUrl, 'redis://10.0.0.5:6380/2');
  assert.equal(parse('--openai-port=9000').openai.responseStoreUrl, undefined);
  fails([...REPO, '--openai-response-store=http://redis:6379'], /"--openai-response-store"/, /redis:\/\/<host>:<port>\[\/<db>\]/);
});

test('--sequence-state-store: a redis:// URL', () => {
  assert.equal(parse().server.sequenceStateStore, undefined);
  assert.equal(parse('--sequence-state-store=redis://10.0.0.5:6380/2').server.sequenceStateStore, 'redis://10.0.0.5:6380/2');
  assert.equal(parse('--sequence-state-store=redis://redis:6379').server.sequenceStateStore, 'redis://redis:6379');
  fails([...REPO, '--sequence-state-store=http://redis:6379'], /"--sequence-state-store"/, /redis:\/\/<host>:<port>\[\/<db>\]/);
  fails([...REPO, '--sequence-state-store=redis://redis:6379/x'], /"--sequence-state-store"/);
});

test('--exit-timeout-secs: negative means 0', () => {
  assert.equal(parse('--exit-timeout-secs=-5').server.exitTimeoutSecs, 0);
  assert.equal(parse('--exit-timeout-secs=7').server.exitTimeoutSecs, 7);
});

test("--model-max-instances and --server-max-instances (Nereid's) are positive integers; unset, the server's defaults apply", () => {
  assert.equal(parse('--model-max-instances=16').server.modelMaxInstances, 16);
  assert.equal(parse('--server-max-instances', '64').server.serverMaxInstances, 64);
  assert.equal(parse().server.modelMaxInstances, undefined);
  fails([...REPO, '--model-max-instances=0'], /Bad option "--model-max-instances": got '0', expected an integer of at least 1/);
  fails([...REPO, '--server-max-instances=x'], /--server-max-instances/);
});

test('--model-load-thread-count is at least 1', () => {
  assert.equal(parse('--model-load-thread-count=0').server.modelLoadThreadCount, 1);
  assert.equal(parse('--model-load-thread-count=8').server.modelLoadThreadCount, 8);
});

test('repeatable --model-repository and its alias --model-store; duplicates once', () => {
  const o = parseServeFlags(['--model-repository=/a', '--model-store', '/b', '--model-repository=/a', '--model-repository=/c']);
  assert.deepEqual(o.server.modelRepositories, ['/a', '/b', '/c']);
  fails(['--model-repository='], /"--model-repository"/);
});

test('--model-control-mode is case-insensitive; poll secs are forced to 0 outside poll', () => {
  assert.equal(parse('--model-control-mode=EXPLICIT').server.modelControlMode, 'explicit');
  const poll = parse('--model-control-mode=Poll', '--repository-poll-secs=3');
  assert.equal(poll.server.modelControlMode, 'poll');
  assert.equal(poll.server.repositoryPollSecs, 3);
  assert.equal(parse('--model-control-mode=poll').server.repositoryPollSecs, 15);
  assert.equal(parse('--repository-poll-secs=3').server.repositoryPollSecs, 0);
  fails([...REPO, '--model-control-mode=auto'], /"--model-control-mode"/, /'auto'/, /none, poll, explicit/);
});

test('--load-model: explicit mode only, repeatable, and * alone', () => {
  const o = parse('--model-control-mode=explicit', '--load-model=a', '--load-model', 'b', '--load-model=a');
  assert.deepEqual(o.server.loadModels, ['a', 'b']);
  assert.deepEqual(parse('--model-control-mode=explicit', '--load-model=*').server.loadModels, ['*']);
  fails([...REPO, '--load-model=a'], /--load-model requires --model-control-mode=explicit/, /'none'/);
  fails([...REPO, '--model-control-mode=poll', '--load-model=a'], /'poll'/);
  fails([...REPO, '--model-control-mode=explicit', '--load-model=*', '--load-model=a'], /must be the only --load-model/);
});

test('--backend-config: per backend, global under \'\', later values win', () => {
  const o = parse(
    '--backend-config=onnxruntime,enable-global-threadpool=1',
    '--backend-config', 'default-max-batch-size=8',
    '--backend-config=python,shm-region-prefix-name=p0',
    '--backend-config=onnxruntime,enable-global-threadpool=0',
    '--backend-config=key=a,b',
  );
  assert.deepEqual(o.server.backendConfig, {
    onnxruntime: { 'enable-global-threadpool': '0' },
    '': { 'default-max-batch-size': '8', key: 'a,b' },
    python: { 'shm-region-prefix-name': 'p0' },
  });
  for (const bad of [',k=v', 'onnxruntime,k', 'onnxruntime,=v', 'onnxruntime,k=', 'k', '=v']) {
    fails([...REPO, `--backend-config=${bad}`], /"--backend-config"/, /<backend>,<setting>=<value>/);
  }
});

test('--disable-auto-complete-config takes no value and forces strict model config', () => {
  assert.equal(parse('--disable-auto-complete-config').server.strictModelConfig, true);
  const o = parse('--strict-model-config=false', '--disable-auto-complete-config');
  assert.equal(o.server.strictModelConfig, true);
  assert.equal(o.warnings.length, 2);
  assert.match(o.warnings[1]!, /Overriding deprecated '--strict-model-config'/);
  assert.equal(parse('--strict-model-config=true').server.strictModelConfig, true);
  fails([...REPO, '--disable-auto-complete-config=true'], /'--disable-auto-complete-config' does not take a value/);
});

test('--model-config-name is a non-empty name without spaces', () => {
  assert.equal(parse('--model-config-name=h100').server.modelConfigName, 'h100');
  fails([...REPO, '--model-config-name=a b'], /"--model-config-name"/);
  fails([...REPO, '--model-config-name='], /"--model-config-name"/);
});

test('unambiguous prefixes work as in getopt_long', () => {
  const o = parseServeFlags(['--model-repo=/m', '--model-s', '/n', '--strict-r=false', '--log-verb', '2', '--he']);
  assert.equal(o.help, true);
  const p = parseServeFlags(['--model-repo=/m', '--model-s', '/n', '--strict-r=false', '--log-verb', '2']);
  assert.deepEqual(p.server.modelRepositories, ['/m', '/n']);
  assert.equal(p.server.strictReadiness, false);
  assert.equal(p.log.verbose, 2);
  // An exact name wins over the longer names it is a prefix of.
  assert.deepEqual(parse('--grpc-use-ssl=true').extra, { 'grpc-use-ssl': ['true'] });
  fails([...REPO, '--model-'], /Option '--model-' is ambiguous/, /'--model-repository'/, /'--model-control-mode'/);
  fails([...REPO, '--log=x'], /Option '--log' is ambiguous/);
});

test('unknown flags, short flags and positional arguments', () => {
  fails([...REPO, '--foo'], /^Unrecognized option '--foo'/, /--help/);
  fails([...REPO, '--foo=bar'], /^Unrecognized option '--foo'/);
  fails([...REPO, '-m', 'x'], /Unrecognized option '-m'/);
  fails([...REPO, 'serve'], /^Unexpected argument: serve$/);
  fails(['/models', '--model-repository=/m'], /^Unexpected argument: \/models$/);
  fails([...REPO, '--', '--id=x'], /^Unexpected argument: --id=x$/);
  fails([...REPO, '-'], /^Unexpected argument: -$/);
  // A bad flag is reported before a stray argument, as getopt checks every flag first.
  fails(['stray', '--foo'], /Unrecognized option '--foo'/);
  assert.deepEqual(parse('--').server.modelRepositories, ['/models']);
});

test('--model-repository is required unless --help', () => {
  fails([], /--model-repository must be specified/);
  fails(['--id=x'], /--model-repository must be specified/);
  const o = parseServeFlags(['--help']);
  assert.equal(o.help, true);
  // --help stops parsing: what follows is not looked at.
  assert.equal(parseServeFlags(['--log-info=true', '--help', '--nonsense']).help, true);
  fails(['--nonsense', '--help'], /Unrecognized option '--nonsense'/);
});

test('port collisions between enabled services on the same address', () => {
  fails([...REPO, '--grpc-port=8000'], /cannot listen to HTTP requests and GRPC requests at the same address and port 0\.0\.0\.0:8000/);
  fails([...REPO, '--metrics-port=8001'], /GRPC requests and metrics requests/);
  fails([...REPO, '--http-port=8002'], /HTTP requests and metrics requests/);
  // Metrics follow --http-address unless told otherwise.
  fails([...REPO, '--http-address=127.0.0.1', '--http-port=9000', '--metrics-port=9000'], /127\.0\.0\.1:9000/);
  assert.equal(parse('--grpc-port=8000', '--allow-grpc=false').grpc.allow, false);
  assert.equal(parse('--grpc-port=8000', '--grpc-address=127.0.0.1').grpc.port, 8000);
  assert.equal(parse('--http-port=8002', '--allow-metrics=false').http.port, 8002);
  assert.equal(parse('--http-port=8002', '--metrics-address=127.0.0.1').metrics.address, '127.0.0.1');
});

test('metrics flags', () => {
  const o = parse('--allow-metrics=false', '--allow-cpu-metrics=true', '--metrics-interval-ms=500', '--metrics-config=summary_latencies=true');
  assert.equal(o.metrics.allow, false);
  assert.equal(o.metrics.intervalMs, 500);
  assert.deepEqual(o.extra['allow-cpu-metrics'], ['false']);
  assert.deepEqual(o.extra['metrics-config'], ['summary_latencies=true']);
  assert.equal(parse('--http-address=127.0.0.1').metrics.address, '127.0.0.1');
  fails([...REPO, '--metrics-config=a,b=c'], /"--metrics-config"/, /<setting>=<value>/);
  fails([...REPO, '--metrics-config=a'], /"--metrics-config"/);
  fails([...REPO, '--metrics-interval-ms=0'], /"--metrics-interval-ms"/);
});

test('flags without a ServeOptions field are carried in extra, validated and normalised', () => {
  const o = parse(
    '--cache-config=local,size=1048576', '--cache-config', 'redis,host=h',
    '--rate-limit=EXECUTION_COUNT', '--rate-limit-resource=R1:5', '--rate-limit-resource=R2:3:0',
    '--trace-config=level=TIMESTAMPS', '--trace-config=triton,file=/tmp/t.json', '--grpc-use-ssl-mutual=true',
    '--grpc-infer-response-compression-level=High', '--pinned-memory-pool-byte-size=0', '--host-policy=gpu0,numa-node=0',
    '--http-restricted-api=model-repository,logging:admin-key=secret', '--cuda-memory-pool-byte-size=0:1024',
  );
  assert.deepEqual(o.extra, {
    'cache-config': ['local,size=1048576', 'redis,host=h'],
    'rate-limit': ['execution_count'],
    'rate-limit-resource': ['R1:5', 'R2:3:0'],
    'trace-config': ['level=TIMESTAMPS', 'triton,file=/tmp/t.json'],
    'grpc-use-ssl-mutual': ['true'],
    'grpc-use-ssl': ['true'],
    'grpc-infer-response-compression-level': ['high'],
    'pinned-memory-pool-byte-size': ['0'],
    'host-policy': ['gpu0,numa-node=0'],
    'http-restricted-api': ['model-repository,logging:admin-key=secret'],
    'cuda-memory-pool-byte-size': ['0:1024'],
  });
});

test('--allow-client-shm sets allowClientShm, false by default as in current Triton', () => {
  assert.equal(parse().server.allowClientShm, undefined);
  assert.equal(parse('--allow-client-shm=ON').server.allowClientShm, true);
  assert.equal(parse('--allow-client-shm', 'false').server.allowClientShm, false);
  fails([...REPO, '--allow-client-shm=maybe'], /"--allow-client-shm"/);
});

test('bad values of composite flags name the flag, the value and the format', () => {
  fails([...REPO, '--cache-config=size=10'], /"--cache-config"/, /'size=10'/, /<cache>,<setting>=<value>/);
  fails([...REPO, '--rate-limit=on'], /"--rate-limit"/, /execution_count, off/);
  fails([...REPO, '--rate-limit-resource=R1'], /"--rate-limit-resource"/);
  fails([...REPO, '--rate-limit-resource=R1:x'], /"--rate-limit-resource"/);
  fails([...REPO, '--rate-limit-resource=R1:1:2:3'], /"--rate-limit-resource"/);
  fails([...REPO, '--trace-config=jaeger,url=x'], /"--trace-config"/, /triton, opentelemetry/);
  fails([...REPO, '--trace-config=level=LOUD'], /"--trace-config"/);
  fails([...REPO, '--trace-config=rate'], /"--trace-config"/);
  // Triton's words, as its L0_http and L0_grpc start-up tests look for them.
  fails([...REPO, '--http-restricted-api=bogus:k=v'], /"--http-restricted-api"/, /unknown restricted api 'bogus'/, /health, metadata/);
  fails([...REPO, '--http-restricted-api=trace:k=v', '--http-restricted-api=trace,logging:a=b'], /restricted api 'trace' can not be specified in multiple config groups/);
  fails([...REPO, '--grpc-restricted-protocol=model-reposit,health:k1=v1'], /"--grpc-restricted-protocol"/, /unknown restricted protocol 'model-reposit'/);
  fails([...REPO, '--grpc-restricted-protocol=model-repository,health:k1=v1', '--grpc-restricted-protocol=metadata,health:k2=v2'],
    /protocol 'health' can not be specified in multiple config groups/);
  fails([...REPO, '--http-restricted-api=health'], /--http-restricted-api option format is '<config name>:<setting>=<value>'\. Got health/);
  for (const size of ['0', '-1']) fails([...REPO, `--http-max-input-size=${size}`], /"--http-max-input-size"/, /--http-max-input-size must be greater than 0/);
  fails([...REPO, '--grpc-header-forward-pattern=(unclosed'], /"--grpc-header-forward-pattern"/, /regular expression/);
  fails([...REPO, '--cuda-memory-pool-byte-size=1024'], /<gpu>:<bytes>/);
  fails([...REPO, '--min-supported-compute-capability=abc'], /a number/);
});

test('--response-cache-byte-size is deprecated and excludes --cache-config', () => {
  const o = parse('--response-cache-byte-size=1024');
  assert.deepEqual(o.extra['response-cache-byte-size'], ['1024']);
  assert.match(o.warnings[0]!, /deprecated/);
  fails([...REPO, '--response-cache-byte-size=1024', '--cache-config=local,size=1'], /Incompatible flags --response-cache-byte-size and --cache-config/);
});

test('USAGE lists every accepted flag with its value syntax, grouped as tritonserver does', () => {
  for (const name of FLAG_NAMES) assert.match(USAGE, new RegExp(`^  --${name}( |$)`, 'm'), name);
  for (const name of [
    'id', 'model-repository', 'model-store', 'model-control-mode', 'repository-poll-secs', 'load-model', 'model-config-name',
    'disable-auto-complete-config', 'strict-model-config', 'strict-readiness', 'exit-on-error', 'exit-timeout-secs',
    'model-load-thread-count', 'model-load-retry-count', 'model-namespacing', 'enable-peer-access', 'backend-directory',
    'backend-config', 'repoagent-directory', 'host-policy', 'allow-client-shm', 'allow-http', 'http-address', 'http-port',
    'reuse-http-port', 'http-thread-count', 'http-max-input-size', 'http-header-forward-pattern', 'http-restricted-api',
    'allow-grpc', 'grpc-address', 'grpc-port', 'reuse-grpc-port', 'grpc-header-forward-pattern', 'grpc-infer-thread-count',
    'grpc-infer-allocation-pool-size', 'grpc-max-response-pool-size', 'grpc-use-ssl', 'grpc-use-ssl-mutual',
    'grpc-server-cert', 'grpc-server-key', 'grpc-root-cert', 'grpc-infer-response-compression-level', 'grpc-keepalive-time',
    'grpc-keepalive-timeout', 'grpc-keepalive-permit-without-calls', 'grpc-http2-max-pings-without-data',
    'grpc-http2-min-recv-ping-interval-without-data', 'grpc-http2-max-ping-strikes', 'grpc-max-connection-age',
    'grpc-max-connection-age-grace', 'grpc-restricted-protocol', 'grpc-max-decompressed-size', 'log-verbose', 'log-info', 'log-warning', 'log-error',
    'log-format', 'log-file', 'allow-metrics', 'allow-gpu-metrics', 'allow-cpu-metrics', 'metrics-address', 'metrics-port',
    'metrics-interval-ms', 'metrics-config', 'cache-config', 'rate-limit', 'rate-limit-resource', 'trace-config', 'help',
  ]) {
    assert.ok(FLAG_NAMES.includes(name), `missing --${name}`);
  }
  assert.match(USAGE, /--http-port <integer>\n(.*\n)*? +Default: 8000\n/);
  assert.match(USAGE, /--strict-readiness <boolean>/);
  const groups = ['Server:', 'Logging:', 'Model Repository:', 'HTTP:', 'GRPC:', 'Metrics:', 'Tracing:', 'Backend:', 'DEPRECATED:'];
  const at = groups.map((g) => USAGE.indexOf(`\n${g}\n`));
  assert.ok(at.every((i) => i > 0), 'every group present');
  assert.deepEqual([...at].sort((a, b) => a - b), at, 'groups in tritonserver order');
});

test('--openai-port turns the OpenAI-compatible frontend on; its address defaults to --http-address', () => {
  assert.deepEqual(parse().openai, { allow: false, port: 9000, address: '0.0.0.0', corsOrigins: [] });
  assert.deepEqual(parse('--openai-port=9000', '--http-address=127.0.0.1').openai, { allow: true, port: 9000, address: '127.0.0.1', corsOrigins: [] });
  assert.deepEqual(parse('--openai-port', '0', '--openai-address', '::1').openai, { allow: true, port: 0, address: '::1', corsOrigins: [] });
  fails([...REPO, '--openai-port=8000'], /cannot listen to HTTP requests and OpenAI requests at the same address and port 0\.0\.0\.0:8000/);
  fails([...REPO, '--openai-port=x'], /--openai-port/, /port number/);
  // --openai-cors-origin: repeatable, an origin exactly as a browser sends it, or *.
  assert.deepEqual(parse('--openai-cors-origin=https://a.example', '--openai-cors-origin=http://localhost:3000', '--openai-cors-origin=*').openai.corsOrigins,
    ['https://a.example', 'http://localhost:3000', '*']);
  fails([...REPO, '--openai-cors-origin=https://a.example/'], /--openai-cors-origin/, /scheme:\/\/host/);
  fails([...REPO, '--openai-cors-origin=localhost'], /--openai-cors-origin/, /scheme:\/\/host/);
  // Off, it claims no port.
  assert.equal(parse('--openai-address=0.0.0.0', '--http-port=9000').http.port, 9000);
});

test('header-forward patterns are read as RE2: inline flags such as (?-i) are accepted, lookaround is not', () => {
  // Triton's qa/L0_parameters/test.sh starts the server with --grpc-header-forward-pattern (?-i)MY_HEADER.*
  assert.doesNotThrow(() => parse('--grpc-header-forward-pattern=(?-i)MY_HEADER.*', '--http-header-forward-pattern=(?i:x)-(?P<n>y)'));
  fails([...REPO, '--http-header-forward-pattern=(?=x)'], /"--http-header-forward-pattern"/, /regular expression/);
});
