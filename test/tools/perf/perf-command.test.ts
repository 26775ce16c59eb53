import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { needChromium, openReport } from '../../helpers/browser.js';
import { EXAMPLES, ROOT } from '../../helpers/paths.js';
import { runNereid, spawnServer, type ServerProcess } from '../../helpers/server.js';

// `nereid perf` against real servers on loopback: a Nereid with the example models, and the bench's reference
// server (a second, independent KServe v2 implementation). Windows are short and stability loose (-s 50) so each
// level takes three windows; assertions are on shapes, counts and ratios measured in the same run.

const FAST = ['-p', '250', '-s', '50', '-r', '6'];
let server: ServerProcess;
let http: string;
let grpc: string;
let dir: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nereid-perf-test-'));
  server = await spawnServer([
    '--model-repository', EXAMPLES, '--model-control-mode=explicit', '--load-model=simple', '--load-model=repeat_int32',
    '--load-model=simple_sequence', '--allow-grpc=true', '--grpc-port=0', '--grpc-address=127.0.0.1', '--allow-client-shm=true',
  ]);
  http = server.url.replace('http://', '');
  for (let k = 0; k < 100 && !/Started GRPCInferenceService at [^:]+:(\d+)/.test(server.output()); k++) await new Promise((r) => setTimeout(r, 50));
  grpc = `127.0.0.1:${/Started GRPCInferenceService at [^:]+:(\d+)/.exec(server.output())![1]}`;
});

after(async () => {
  server.child.kill('SIGTERM');
  await server.exited;
  await rm(dir, { recursive: true, force: true });
});

/** Every "Request count" (client) and "Successful request count" (server) of a summary, level by level. */
function counts(out: string): { client: number[]; server: number[] } {
  return {
    client: [...out.matchAll(/ {4}Request count: (\d+)/g)].map((m) => Number(m[1])),
    server: [...out.matchAll(/Successful request count: (\d+)/g)].map((m) => Number(m[1])),
  };
}

function assertAgree(out: string, levels: number, tolerance = 0.03): void {
  const c = counts(out);
  assert.equal(c.client.length, levels, out);
  assert.equal(c.server.length, levels, out);
  c.client.forEach((n, k) => {
    assert.ok(n > 0, out);
    // The server's own count over the same windows: only requests in flight at a window's edges may differ.
    assert.ok(Math.abs(n - c.server[k]!) / n <= tolerance, `client ${n} vs server ${c.server[k]} requests:\n${out}`);
  });
}

test('HTTP concurrency sweep: summary, CSV with perf_analyzer columns, profile export, HTML chart, throughput agreeing with the server', async (t) => {
  const csv = join(dir, 'simple.csv');
  const exp = join(dir, 'export.json');
  const html = join(dir, 'perf.html');
  const r = await runNereid(['perf', '-m', 'simple', '-u', http, '--concurrency-range', '1:3:2', ...FAST, '-f', csv, '--profile-export-file', exp, '--report-file', html, '-H', 'X-Test: 1']);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /\*\*\* Measurement Settings \*\*\*/);
  assert.match(r.out, /Request concurrency: 1\n/);
  assert.match(r.out, /Request concurrency: 3\n/);
  assert.match(r.out, /p99 latency: \d+ usec/);
  assert.match(r.out, /Avg request latency: \d+ usec \(overhead \d+ usec \+ queue \d+ usec \+ compute input \d+ usec \+ compute infer \d+ usec \+ compute output \d+ usec\)/);
  assertAgree(r.out, 2);
  const lines = (await readFile(csv, 'utf8')).trim().split('\n');
  assert.equal(lines[0], 'Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency');
  assert.equal(lines.length, 3);
  const tputs = lines.slice(1).map((l) => Number(l.split(',')[1]));
  assert.ok(tputs[0]! <= tputs[1]!, 'rows sorted by throughput');
  const doc = JSON.parse(await readFile(exp, 'utf8')) as { experiments: { experiment: { mode: string; value: number }; requests: { timestamp: number; response_timestamps: number[] }[]; window_boundaries: number[] }[] };
  assert.deepEqual(doc.experiments.map((e) => e.experiment), [{ mode: 'concurrency', value: 1 }, { mode: 'concurrency', value: 3 }]);
  const c = counts(r.out).client;
  doc.experiments.forEach((e, k) => {
    assert.equal(e.requests.length, c[k]);
    assert.equal(e.window_boundaries.length, 4);
    assert.ok(e.requests.every((q) => q.response_timestamps.length === 1 && q.response_timestamps[0]! >= q.timestamp));
  });
  if (!needChromium(t)) return;
  const page = await openReport(html, 'perf-report.png');
  assert.deepEqual(page.consoleErrors, []);
  assert.deepEqual(page.requests, [], 'the chart fetches nothing');
  assert.equal(page.chartsRendered, 2);
  assert.ok(page.canvases >= 2);
  assert.equal(page.barParts, 2 * 6, 'a stacked bar of six parts per concurrency');
});

test('gRPC with system shared memory, and request-rate mode whose throughput follows the rate', async () => {
  const g = await runNereid(['perf', '-m', 'simple', '-i', 'grpc', '-u', grpc, '--concurrency-range', '2', '--shared-memory', 'system', ...FAST]);
  assert.equal(g.code, 0, g.out);
  assertAgree(g.out, 1);
  // Open loop: the requests in flight at a window's edges are the rate times the latency, so the windows are longer.
  const rate = await runNereid(['perf', '-m', 'simple', '-u', http, '--request-rate-range', '300', '--request-distribution', 'poisson', '-p', '600', '-s', '50', '-r', '6']);
  assert.equal(rate.code, 0, rate.out);
  assert.match(rate.out, /Request Rate: 300\n/);
  assertAgree(rate.out, 1, 0.05);
  const tput = Number(/Throughput: ([\d.]+) infer\/sec/.exec(rate.out)![1]);
  // Wide bounds: a stalled client sends the requests whose times have passed at once, so on a busy machine a window
  // can hold more than its share. A closed loop on this model would answer thousands per second.
  assert.ok(tput > 300 * 0.6 && tput < 300 * 1.6, `throughput ${tput} at 300 requests/sec`);
});

test('streaming a decoupled model: every response counted, first-response and inter-response latency reported', async () => {
  const data = join(dir, 'repeat.json');
  await writeFile(data, JSON.stringify({ data: [{ IN: [1, 2, 3, 4], DELAY: [0, 0, 0, 0], WAIT: [0] }] }));
  const csv = join(dir, 'stream.csv');
  const r = await runNereid(['perf', '-m', 'repeat_int32', '-i', 'grpc', '--streaming', '-u', grpc, '--input-data', data, ...FAST, '-f', csv]);
  assert.equal(r.code, 0, r.out);
  const requests = counts(r.out).client[0]!;
  const perSec = Number(/Throughput: ([\d.]+) infer\/sec/.exec(r.out)![1]);
  const responses = Number(/Response throughput: ([\d.]+) responses\/sec/.exec(r.out)![1]);
  assert.ok(requests > 0);
  assert.ok(Math.abs(responses / perSec - 4) < 0.01, `4 responses per request: ${responses} vs ${perSec}`);
  assert.match(r.out, /Avg first response latency: \d+ usec/);
  assert.match(r.out, /Avg inter-response latency: \d+ usec/);
  assert.match((await readFile(csv, 'utf8')).split('\n')[0]!, /Avg first response latency,Avg inter-response latency,Responses\/Second$/);
  // Without --streaming a decoupled model is refused with the way to measure it.
  const refused = await runNereid(['perf', '-m', 'repeat_int32', '-u', http, '--shape', 'IN:1', '--shape', 'DELAY:1']);
  assert.equal(refused.code, 1);
  assert.match(refused.out, /decoupled: measure it with -i grpc --streaming/);
});

test('sequences: each sequence has its own id and --sequence-length requests', async () => {
  const exp = join(dir, 'seq.json');
  const r = await runNereid(['perf', '-m', 'simple_sequence', '-u', http, '--sequence-length', '4', '--sequence-id-range', '100:10000', ...FAST, '--profile-export-file', exp]);
  assert.equal(r.code, 0, r.out);
  const doc = JSON.parse(await readFile(exp, 'utf8')) as { experiments: { requests: { sequence_id: number }[] }[] };
  const ids = doc.experiments[0]!.requests.map((q) => q.sequence_id);
  const perId = new Map<number, number>();
  for (const id of ids) perId.set(id, (perId.get(id) ?? 0) + 1);
  assert.ok(ids.every((id) => id >= 100 && id <= 10000));
  // Whole sequences inside the windows have exactly four requests; only the first and last may be cut.
  const inner = [...perId.values()].slice(1, -1);
  assert.ok(inner.length > 0 && inner.every((n) => n === 4), JSON.stringify([...perId]));
});

test('input data from a JSON file, and data that does not fit the model refused in the words of the problem', async () => {
  const good = join(dir, 'good.json');
  const row = Array.from({ length: 16 }, (_, k) => k);
  await writeFile(good, JSON.stringify({ data: [{ INPUT0: row, INPUT1: { b64: Buffer.from(new Int32Array(row).buffer).toString('base64') } }, { INPUT0: { content: row, shape: [16] }, INPUT1: row }] }));
  const ok = await runNereid(['perf', '-m', 'simple', '-u', http, '--input-data', good, '-b', '2', ...FAST]);
  assert.equal(ok.code, 0, ok.out);
  assert.match(ok.out, /Batch size: 2/);
  const bad = join(dir, 'bad.json');
  await writeFile(bad, JSON.stringify({ data: [{ INPUT0: [1, 2, 3], INPUT1: row }] }));
  const short = await runNereid(['perf', '-m', 'simple', '-u', http, '--input-data', bad]);
  assert.equal(short.code, 1);
  assert.match(short.out, /input 'INPUT0' has 3 elements, but shape \[16\] needs 16/);
  await writeFile(bad, JSON.stringify({ data: [{ INPUT0: row, INPUT1: row, EXTRA: [1] }] }));
  const extra = await runNereid(['perf', '-m', 'simple', '-u', http, '--input-data', bad]);
  assert.equal(extra.code, 1);
  assert.match(extra.out, /model 'simple' has no input 'EXTRA'/);
  const big = await runNereid(['perf', '-m', 'simple', '-u', http, '-b', '9']);
  assert.equal(big.code, 1);
  assert.match(big.out, /expecting batch size <= 8/);
});

test('an unknown model, a server that is not up and bad flags end with a one-line error', async () => {
  const unknown = await runNereid(['perf', '-m', 'no_such_model', '-u', http]);
  assert.equal(unknown.code, 1);
  assert.match(unknown.out, /nereid perf: error: model 'no_such_model': .*unknown model/i);
  assert.doesNotMatch(unknown.out, /\n\s+at /, 'no stack trace');
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
  const down = await runNereid(['perf', '-m', 'simple', '-u', `127.0.0.1:${port}`]);
  assert.equal(down.code, 1);
  assert.match(down.out, /unable to reach a server at 127\.0\.0\.1:\d+ over HTTP \(ECONNREFUSED\)/);
  const flags = await runNereid(['perf', '-m', 'simple', '--concurrency-range', '4:2']);
  assert.equal(flags.code, 2);
  assert.match(flags.out, /end 2 is below start 4/);
  const streamingHttp = await runNereid(['perf', '-m', 'simple', '--streaming']);
  assert.equal(streamingHttp.code, 2);
});

test('against the bench reference server, which has no statistics extension, in count windows', async () => {
  const child = spawn(process.execPath, [join(ROOT, 'bench', 'reference-server.mjs'), '--model', join(EXAMPLES, 'simple', '1', 'model.onnx'), '--port', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
  try {
    let log = '';
    const port = await new Promise<string>((resolve, reject) => {
      child.stderr!.on('data', (b: Buffer) => {
        log += b.toString();
        const m = /serving .* on [^:]+:(\d+)/.exec(log);
        if (m) resolve(m[1]!);
      });
      child.once('exit', () => reject(new Error(log)));
    });
    const r = await runNereid(['perf', '-m', 'simple', '-u', `127.0.0.1:${port}`, '--concurrency-range', '1:2', '--shape', 'INPUT0:16', '--shape', 'INPUT1:16', '-s', '50', '--measurement-mode', 'count_windows', '--measurement-request-count', '100']);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /Minimum number of samples in each window: 100/);
    assert.equal(counts(r.out).client.length, 2);
    assert.ok(counts(r.out).client.every((n) => n >= 3 * 100), 'three windows of at least 100 requests each');
    assert.match(r.out, /no statistics extension/);
  } finally {
    child.kill('SIGTERM');
  }
});
