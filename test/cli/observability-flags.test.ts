import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ROOT, EXAMPLES } from '../helpers/paths.js';
import { postJson, request } from '../helpers/http.js';
import { connect, int32Bytes, unary } from '../helpers/grpc.js';

/** The 1-based line of the one line of a source file that holds `text`. */
async function sourceLine(file: string, text: string): Promise<number> {
  const lines = (await readFile(join(ROOT, file), 'utf8')).split('\n');
  const at = lines.flatMap((l, i) => (l.includes(text) ? [i + 1] : []));
  assert.equal(at.length, 1, `${file} holds '${text}' on lines ${at.join(', ')}`);
  return at[0]!;
}

// `nereid serve` with the logging and metrics flags of issue 5 together: --log-file takes every line (stderr
// stays quiet), LogSettings over gRPC and /v2/logging change verbosity and format while the server runs,
// verbose request lines carry the request id, and --metrics-address binds the metrics port apart from HTTP.

test('--log-file, run-time log settings over gRPC and HTTP, request ids in the log, --metrics-address', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'nereid-obs-'));
  const file = join(dir, 'server.log');
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'nereid.js'), 'serve', '--model-repository', EXAMPLES, '--model-control-mode=explicit',
    '--load-model=simple', '--http-address=127.0.0.1', '--http-port=0', '--grpc-address=127.0.0.1', '--grpc-port=0',
    '--metrics-address=127.0.0.2', '--metrics-port=0', '--metrics-interval-ms=100', `--log-file=${file}`], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let console = '';
  child.stdout.on('data', (b: Buffer) => (console += b.toString()));
  child.stderr.on('data', (b: Buffer) => (console += b.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const log = () => readFile(file, 'utf8').catch(() => '');
  try {
    let ports: { http: number; grpc: number; metrics: number } | undefined;
    for (let i = 0; i < 200 && !ports; i++) {
      const text = await log();
      const h = /Started HTTPService at 127\.0\.0\.1:(\d+)/.exec(text);
      const g = /Started GRPCInferenceService at 127\.0\.0\.1:(\d+)/.exec(text);
      const m = /Started Metrics Service at 127\.0\.0\.2:(\d+)/.exec(text);
      if (h && g && m) ports = { http: Number(h[1]), grpc: Number(g[1]), metrics: Number(m[1]) };
      else await sleep(50);
    }
    assert.ok(ports, `${await log()}\n${console}`);
    const url = `http://127.0.0.1:${ports.http}`;
    assert.equal((await request(`${url}/v2/logging`)).json().log_file, file);

    // The metrics port answers on its own address.
    const scrape = await request(`http://127.0.0.2:${ports.metrics}/metrics`);
    assert.equal(scrape.status, 200);
    assert.match(scrape.body.toString(), /^nv_cpu_utilization \d/m);

    // Verbose on and ISO8601 over gRPC, then a request with an id over gRPC: its lines are in the file, in that format.
    const client = connect(ports.grpc);
    const set = await unary(client, 'LogSettings', { settings: { log_verbose_level: { uint32_param: 1 }, log_format: { string_param: 'ISO8601' } } });
    assert.equal(set.settings.log_format.string_param, 'ISO8601');
    const V = Array.from({ length: 16 }, (_, i) => i);
    await unary(client, 'ModelInfer', {
      model_name: 'simple', id: 'grpc-req-7',
      inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'INT32', shape: [1, 16] })), raw_input_contents: [int32Bytes(V), int32Bytes(V)],
    });
    client.close();
    // Back to the default format and verbose off over HTTP; a later request leaves no verbose line.
    const back = await postJson(`${url}/v2/logging`, { log_verbose_level: 0, log_format: 'default' });
    assert.equal(back.json().log_format, 'default');
    const body = { id: 'http-req-8', inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, shape: [1, 16], datatype: 'INT32', data: V })) };
    assert.equal((await postJson(`${url}/v2/models/simple/infer`, body)).status, 200);

    const text = await log();
    assert.match(text, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ V .*\[request id: grpc-req-7\] infer model 'simple'/m);
    assert.doesNotMatch(text, /http-req-8/);
    // Each record is one Triton can parse: the default layout as Triton's qa/L0_logging/log_format_test.py reads
    // it (the location `[\w.]+:\d+`, never a bare tag), the ISO8601 one with the same location.
    for (const line of text.split('\n').filter((l) => l !== '')) {
      assert.match(line, /^(?:[EWIV]\d{4} \d\d:\d\d:\d\d\.\d{6}|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ [EWIV]) \d+ [\w.]+:\d+\] /, line);
    }
    // The location is the line that wrote the record, as Triton prints its LOG_* call's `file.cc:line`.
    assert.match(text, new RegExp(` http_server\\.ts:${await sourceLine('src/frontends/http/server.ts', 'Started HTTPService at')}\\] "Started HTTPService`));
    assert.match(text, new RegExp(` server_request_log\\.ts:${await sourceLine('src/server/request-log.ts', '} infer ${target}')}\\] .*infer model 'simple'`));
    assert.doesNotMatch(console, /Started|infer model/, 'nothing is printed to the console with --log-file');
  } finally {
    child.kill('SIGTERM');
    assert.equal(await exited, 0, `${await log()}\n${console}`);
    await rm(dir, { recursive: true, force: true });
  }
});
