import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BackendInstance, BackendRequest } from '../../../src/backends/backend.js';
import { startHttpFrontend } from '../../../src/frontends/http/server.js';
import { createLogger } from '../../../src/observability/logger.js';
import { InferenceServer } from '../../../src/server/inference-server.js';
import { defaultBackends } from '../../../src/backends/registry.js';
import { NereidError } from '../../../src/errors.js';
import { EXAMPLES } from '../../helpers/paths.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { postJson, request } from '../../helpers/http.js';

// Triton's generate extension over HTTP: flat JSON in, flat JSON out (…/generate), or one server-sent event
// per response (…/generate_stream), with ordinary, decoupled and sequence models from the examples.

let s: TestServer;
before(async () => {
  s = await startTestServer({ modelRepositories: [EXAMPLES] });
});
after(() => s.close());

const range = (n: number, from = 0) => Array.from({ length: n }, (_, i) => i + from);

/** The data lines of a server-sent event stream, parsed. */
function events(text: string): any[] {
  return text.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => JSON.parse(e.slice(6)));
}

test('generate: model inputs by name at the top level or in parameters; outputs as flat keys', async () => {
  const r = await postJson(`${s.url}/v2/models/simple/generate`, { id: 'g1', INPUT0: range(16), parameters: { INPUT1: range(16, 1) } });
  assert.equal(r.status, 200, r.body.toString());
  assert.match(r.headers.get('content-type') ?? '', /application\/json/);
  assert.deepEqual(r.json(), {
    id: 'g1', model_name: 'simple', model_version: '1',
    OUTPUT0: range(16).map((v) => 2 * v + 1), OUTPUT1: range(16).map(() => -1),
  });
  const str = await postJson(`${s.url}/v2/models/simple_string/generate`, { INPUT0: range(16).map(String), INPUT1: range(16).map(() => '2') });
  assert.equal(str.status, 200, str.body.toString());
  assert.deepEqual(str.json().OUTPUT0, range(16).map((v) => String(v + 2)));
});

test('generate_stream: a decoupled model answers one event per response, one-element outputs as bare values', async () => {
  const r = await postJson(`${s.url}/v2/models/repeat_int32/generate_stream`, { IN: [4, 5, 6], DELAY: [0, 0, 0], WAIT: 0 });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), 'text/event-stream; charset=utf-8');
  const ev = events(r.body.toString());
  assert.deepEqual(ev.map((e) => [e.OUT, e.IDX]), [[4, 0], [5, 1], [6, 2]]);
  assert.deepEqual(Object.keys(ev[0]).sort(), ['IDX', 'OUT', 'model_name', 'model_version']);
  // An ordinary model streams its one response.
  const one = await postJson(`${s.url}/v2/models/simple/generate_stream`, { INPUT0: range(16), INPUT1: range(16) });
  assert.deepEqual(events(one.body.toString()).map((e) => e.OUTPUT1), [range(16).map(() => 0)]);
});

test('generate: a decoupled model with one response answers; with several it is an error', async () => {
  const one = await postJson(`${s.url}/v2/models/repeat_int32/generate`, { IN: [9], DELAY: [0], WAIT: 0 });
  assert.equal(one.status, 200, one.body.toString());
  assert.deepEqual([one.json().OUT, one.json().IDX], [9, 0]);
  const many = await postJson(`${s.url}/v2/models/repeat_int32/generate`, { IN: [1, 2], DELAY: [0, 0], WAIT: 0 });
  assert.equal(many.status, 400);
  assert.match(many.json().error, /exactly one response.*generate_stream/);
});

test('generate: sequence parameters reach the sequence batcher', async () => {
  const url = `${s.url}/v2/models/simple_sequence/generate`;
  const a = await postJson(url, { INPUT: 5, parameters: { sequence_id: 4242, sequence_start: true } });
  assert.equal(a.status, 200, a.body.toString());
  const b = await postJson(url, { INPUT: 3, sequence_id: 4242, sequence_end: true });
  assert.equal(b.status, 200, b.body.toString());
  assert.equal(typeof b.json().OUTPUT, 'number');
  const none = await postJson(url, { INPUT: 3 });
  assert.equal(none.status, 400);
  assert.match(none.json().error, /correlation ID/);
});

test('generate: bad requests are clear errors with the right status', async () => {
  const cases: [string, unknown, number, RegExp][] = [
    ['simple', { INPUT0: range(3), INPUT1: range(16) }, 400, /INPUT0.*3 value/],
    ['simple', { INPUT0: range(16), INPUT1: range(16), parameters: 7 }, 400, /parameters/],
    ['simple', { INPUT0: range(16), INPUT1: range(16), extra: { nested: true } }, 400, /extra/],
    ['simple', { INPUT0: range(16).map(String), INPUT1: range(16) }, 400, /INPUT0/],
    ['simple', [1, 2], 400, /JSON object/],
    ['simple', { INPUT0: range(16) }, 400, /INPUT1/],
    ['no_such_model', { x: 1 }, 400, /unknown model: 'no_such_model'/],
  ];
  for (const [model, body, status, pattern] of cases) {
    const r = await postJson(`${s.url}/v2/models/${model}/generate`, body);
    assert.equal(r.status, status, `${JSON.stringify(body)}: ${r.body.toString()}`);
    assert.match(r.json().error, pattern);
  }
  // A request refused before the model sees it is an ordinary error reply on generate_stream too.
  const missing = await postJson(`${s.url}/v2/models/repeat_int32/generate_stream`, { IN: [1, 2], WAIT: 0 });
  assert.equal(missing.status, 400);
  assert.match(missing.headers.get('content-type') ?? '', /application\/json/);
  assert.match(missing.json().error, /DELAY/);
  const gz = await request(`${s.url}/v2/models/simple/generate`, { method: 'POST', body: '{}', headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' } });
  assert.equal(gz.status, 400);
  const bad = await request(`${s.url}/v2/models/simple/generate`, { method: 'POST', body: '{"INPUT0": [' });
  assert.equal(bad.status, 400);
  assert.match(bad.json().error, /failed to parse/);
  const get = await request(`${s.url}/v2/models/simple/generate`);
  assert.equal(get.status, 405);
});

test('generate_stream: a client that leaves mid-stream cancels the rest of the request', async () => {
  const failures = (s.server as any).manager.resolve('repeat_int32').stats.failures;
  const canceledBefore = failures.CANCELED;
  const failBefore = (await request(`${s.url}/v2/models/repeat_int32/stats`)).json().model_stats[0].inference_stats.fail;
  const u = new URL(`${s.url}/v2/models/repeat_int32/generate_stream`);
  const body = JSON.stringify({ IN: range(20), DELAY: range(20).map(() => 500), WAIT: 0 });
  await new Promise<void>((resolve, reject) => {
    const req = httpRequest({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { 'Content-Type': 'application/json' } }, (res) => {
      res.once('data', () => {
        req.destroy();
        resolve();
      });
    });
    req.on('error', () => undefined);
    req.once('error', reject);
    req.end(body);
  });
  // The server still answers others.
  const ok = await postJson(`${s.url}/v2/models/repeat_int32/generate_stream`, { IN: [1], DELAY: [0], WAIT: 0 });
  assert.deepEqual(events(ok.body.toString()).map((e) => e.OUT), [1]);
  let stats: any;
  for (let i = 0; i < 60; i++) {
    stats = (await request(`${s.url}/v2/models/repeat_int32/stats`)).json().model_stats[0];
    if (stats.inference_stats.fail.count > failBefore.count) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  // Counted as a cancelled request (Triton's CANCELED failure reason), ended before the model's last response
  // was due: run to its end the request lasts at least the sum of its delays (20 × 500 ms), however fast the
  // machine.
  assert.equal(failures.CANCELED, canceledBefore + 1);
  assert.equal(stats.inference_stats.fail.count, failBefore.count + 1);
  const lasted = (stats.inference_stats.fail.ns - failBefore.ns) / 1e6;
  assert.ok(lasted < 20 * 500, `the cancelled request lasted ${lasted} ms: it ran to its end`);
});

// Triton's L0_http generate_endpoint_test.py, test_generate_stream_response_error: an error the model sends as
// its first response carries the error's HTTP status, and the body is still the event stream, one error event.
test('generate_stream: an error the model answers first is a data: {"error": …} event under the error\'s status', async () => {
  const r = await postJson(`${s.url}/v2/models/repeat_int32/generate_stream`, { IN: [1, 2], DELAY: [0], WAIT: 0 });
  assert.equal(r.status, 400);
  assert.equal(r.headers.get('content-type'), 'text/event-stream; charset=utf-8');
  const text = r.body.toString();
  assert.ok(text.startsWith('data: ') && text.endsWith('\n\n'), text);
  const all = events(text);
  assert.equal(all.length, 1, text);
  assert.match(all[0].error, /IN and DELAY shape to match/);
});

// Triton's L0_http generate_endpoint_test.py, test_duplicate_inputs: a repeated input name is refused, the first
// one repeated in the order of the text, as a JSON error on both endpoints.
test('generate: a repeated input key is refused as Triton refuses it (input \'X\' already exists in request)', async () => {
  const a = JSON.stringify(range(16)).slice(1, -1);
  const cases: [string, string][] = [
    [`{"INPUT0": [${a}], "INPUT1": [${a}], "INPUT0": [${a}]}`, 'INPUT0'],
    [`{"INPUT0": [${a}], "INPUT1": [${a}], "INPUT1": [${a}]}`, 'INPUT1'],
    [`{"INPUT0": [${a}], "INPUT1": [${a}], "INPUT0": [${a}], "INPUT1": [${a}]}`, 'INPUT0'],
    [`{"INPUT0": [${a}], "INPUT1": [${a}], "INPUT1": [${a}], "INPUT0": [${a}]}`, 'INPUT1'],
    [`{"INPUT0": [${a}], "parameters": {"INPUT1": [${a}], "INPUT0": [${a}]}}`, 'INPUT0'],
  ];
  for (const [body, name] of cases) {
    for (const route of ['generate', 'generate_stream']) {
      const r = await request(`${s.url}/v2/models/simple/${route}`, { method: 'POST', body, headers: { 'Content-Type': 'application/json' } });
      assert.equal(r.status, 400, `${route} ${body}: ${r.body.toString()}`);
      assert.match(r.headers.get('content-type') ?? '', /application\/json/);
      assert.equal(r.json().error, `input '${name}' already exists in request`);
    }
  }
  // Repeated keys that are not inputs, and input names inside strings or nested values, are not inputs repeated.
  const fine = `{"INPUT0": [${a}], "INPUT1": [${a}], "p": "\\"INPUT0\\": 1", "p": {"INPUT0": 1, "INPUT0": 2}}`;
  const ok = await request(`${s.url}/v2/models/simple/generate`, { method: 'POST', body: fine, headers: { 'Content-Type': 'application/json' } });
  assert.notEqual(ok.json().error, "input 'INPUT0' already exists in request", ok.body.toString());
});

// errors.ts: a NereidError is known by its brand, so that an error made by a second copy of the package (an
// application's backend that imports its own nereid) answers as any other. Here the model's first answer is
// such an error, from a second instance of errors.js; it must reach the client with its status and message.
test('generate_stream: an error from another copy of the package, answered first, keeps its status and message', async () => {
  const copy: typeof import('../../../src/errors.js') = await import(new URL('../../../src/errors.js?second-copy', import.meta.url).href);
  assert.equal(new copy.NereidError('UNAVAILABLE', 'x') instanceof NereidError, false);
  const backends = defaultBackends();
  backends.register('failing', async () => ({
    name: 'failing',
    createInstance: async () => ({
      execute: async (requests: readonly BackendRequest[]) => {
        for (const r of requests) r.sender.fail(new copy.NereidError('UNAVAILABLE', 'the engine went away'));
        return { inputNs: 0, inferNs: 0, outputNs: 0 };
      },
      close: async () => undefined,
    }) as unknown as BackendInstance,
  }));
  const repo = await mkdtemp(join(tmpdir(), 'nereid-generate-'));
  await mkdir(join(repo, 'failing', '1'), { recursive: true });
  await writeFile(join(repo, 'failing', 'config.pbtxt'), `backend: "failing"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
`);
  const logger = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
  const server = await InferenceServer.create({ modelRepositories: [repo] }, { logger, backends });
  const http = await startHttpFrontend(server, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20 }, logger);
  try {
    const r = await postJson(`http://127.0.0.1:${http.port}/v2/models/failing/generate_stream`, { IN: 1 });
    assert.equal(r.status, 503, r.body.toString());
    assert.deepEqual(events(r.body.toString()), [{ error: 'the engine went away' }]);
  } finally {
    await server.close(5);
    await http.close();
    await rm(repo, { recursive: true, force: true });
  }
});
