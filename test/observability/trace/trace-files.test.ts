import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { EXAMPLES } from '../../helpers/paths.js';
import { postJson, request } from '../../helpers/http.js';
import { InferenceServer } from '../../../src/server/inference-server.js';
import { startHttpFrontend } from '../../../src/frontends/http/server.js';
import { NOOP_LOGGER, type Logger } from '../../../src/observability/logger.js';

const SIMPLE = {
  inputs: [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
  ],
};
const PIPELINE = { inputs: [{ name: 'IMAGE', datatype: 'UINT8', shape: [1, 64], data: Array.from({ length: 64 }, (_, i) => i % 17) }] };

type Record_ = { id: number; model_name?: string; model_version?: number; parent_id?: number; request_id?: string; timestamps?: { name: string; ns: number }[]; activity?: string; tensor?: { name: string; data: string; shape: string; dtype: string } };

async function withServer(trace: string[], fn: (s: TestServer, dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'nereid-trace-'));
  const started = await startTestServer({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit', loadModels: ['simple', 'digits_pipeline'], trace: trace.map((t) => t.replace('$DIR', dir)) });
  let closing: Promise<void> | undefined;
  const s = { ...started, close: () => (closing ??= started.close()) };
  try {
    await fn(s, dir);
  } finally {
    await s.close();
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

const infer = async (s: TestServer, model: string, body: unknown, headers: Record<string, string> = {}) => {
  const r = await postJson(`${s.url}/v2/models/${model}/infer`, body, headers);
  assert.equal(r.status, 200, r.body.toString());
};

const readTraces = async (path: string): Promise<Record_[]> => JSON.parse(await readFile(path, 'utf8')) as Record_[];

/** Triton's trace_summary view: per trace id, its header and its timestamps by name. */
function byId(records: Record_[]): Map<number, { header: Record_ | undefined; stamps: Map<string, number>; order: string[]; tensors: Record_[] }> {
  const out = new Map<number, { header: Record_ | undefined; stamps: Map<string, number>; order: string[]; tensors: Record_[] }>();
  for (const r of records) {
    let t = out.get(r.id);
    if (!t) out.set(r.id, (t = { header: undefined, stamps: new Map(), order: [], tensors: [] }));
    if (r.model_name !== undefined) t.header = r;
    for (const ts of r.timestamps ?? []) {
      t.stamps.set(ts.name, ts.ns);
      t.order.push(ts.name);
    }
    if (r.activity) t.tensors.push(r);
  }
  return out;
}

const HTTP_ORDER = ['HTTP_RECV_START', 'HTTP_RECV_END', 'REQUEST_START', 'QUEUE_START', 'COMPUTE_START', 'COMPUTE_INPUT_END', 'COMPUTE_OUTPUT_START', 'COMPUTE_END', 'REQUEST_END', 'INFER_RESPONSE_COMPLETE', 'HTTP_SEND_START', 'HTTP_SEND_END'];

test('Triton mode: each traced request is Triton’s records (header, one object per timestamp), written to numbered files every log-frequency traces', async () => {
  await withServer(['level=TIMESTAMPS', 'rate=1', 'triton,file=$DIR/trace.json', 'triton,log-frequency=2'], async (s, dir) => {
    for (let i = 0; i < 4; i++) await infer(s, 'simple', { ...SIMPLE, id: `r${i}` });
    await s.close();
    const files = (await readdir(dir)).sort();
    assert.deepEqual(files, ['trace.json.0', 'trace.json.1']);
    const all: Record_[] = [];
    for (const f of files) {
      const records = await readTraces(join(dir, f));
      const traces = byId(records);
      assert.equal(traces.size, 2, f);
      all.push(...records);
    }
    const traces = byId(all);
    assert.deepEqual([...traces.keys()].sort(), [1, 2, 3, 4]);
    for (const [id, t] of traces) {
      assert.deepEqual({ ...t.header }, { id, model_name: 'simple', model_version: 1, request_id: `r${id - 1}` });
      assert.deepEqual([...t.stamps.keys()].sort(), [...HTTP_ORDER].sort());
      // Stamps in the order of the stages they mark.
      for (let i = 1; i < HTTP_ORDER.length; i++) {
        assert.ok(t.stamps.get(HTTP_ORDER[i]!)! >= t.stamps.get(HTTP_ORDER[i - 1]!)!, `${HTTP_ORDER[i - 1]} before ${HTTP_ORDER[i]}`);
      }
    }
  });
});

test('HTTP_RECV_START is when the request began to arrive: a body sent after its head is inside HTTP_RECV', async () => {
  await withServer(['level=TIMESTAMPS', 'rate=1', 'triton,file=$DIR/trace.json'], async (s, dir) => {
    const body = JSON.stringify(SIMPLE);
    const socket = connect(Number(new URL(s.url).port), '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    let got = '';
    socket.on('data', (d: Buffer) => (got += d.toString('latin1')));
    socket.write(`POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`);
    // The server runs in this process: ten short waits rather than one long one give the event loop ten turns
    // in which to read the head, however late this process is scheduled, before the body goes.
    for (let i = 0; i < 10; i++) await new Promise((r) => setTimeout(r, 10));
    const bodySent = Number(process.hrtime.bigint());
    socket.write(body);
    while (!got.includes('OUTPUT1')) await new Promise((r) => setTimeout(r, 10));
    socket.destroy();
    assert.match(got, /^HTTP\/1\.1 200 /);
    await s.close();
    const [t] = [...byId(await readTraces(join(dir, 'trace.json'))).values()];
    // The stamps are this process's hrtime: the start is the head's arrival, before the body was sent; stamped
    // when the handler ran instead, it would come after.
    const start = t!.stamps.get('HTTP_RECV_START')!;
    const end = t!.stamps.get('HTTP_RECV_END')!;
    assert.ok(start < bodySent && end >= bodySent, `HTTP_RECV from ${start} to ${end}, body sent at ${bodySent}`);
  });
});

test('Triton mode without log-frequency: the traces go to the file itself, one JSON array, when the server stops', async () => {
  await withServer(['level=TIMESTAMPS', 'rate=1', 'triton,file=$DIR/trace.json'], async (s, dir) => {
    for (let i = 0; i < 3; i++) await infer(s, 'simple', SIMPLE);
    await s.close();
    assert.deepEqual(await readdir(dir), ['trace.json']);
    const traces = byId(await readTraces(join(dir, 'trace.json')));
    assert.equal(traces.size, 3);
    for (const t of traces.values()) assert.equal(t.header!.request_id, undefined, 'no request_id key for a request without an id');
  });
});

test('generate requests are traced as infer requests are', async () => {
  await withServer(['level=TIMESTAMPS', 'rate=1', 'triton,file=$DIR/trace.json'], async (s, dir) => {
    const r = await postJson(`${s.url}/v2/models/simple/generate`, { INPUT0: SIMPLE.inputs[0]!.data, INPUT1: SIMPLE.inputs[1]!.data });
    assert.equal(r.status, 200, r.body.toString());
    await s.close();
    const [t] = [...byId(await readTraces(join(dir, 'trace.json'))).values()];
    assert.equal(t!.header!.model_name, 'simple');
    for (const name of ['HTTP_RECV_START', 'HTTP_RECV_END', 'REQUEST_START', 'COMPUTE_END', 'REQUEST_END', 'INFER_RESPONSE_COMPLETE', 'HTTP_SEND_END']) assert.ok(t!.stamps.has(name), name);
  });
});

test('an ensemble’s steps are child traces with parent_id, with their own compute timestamps; the ensemble has none', async () => {
  await withServer(['level=TIMESTAMPS', 'rate=1', 'triton,file=$DIR/trace.json'], async (s, dir) => {
    await infer(s, 'digits_pipeline', PIPELINE);
    await s.close();
    const traces = byId(await readTraces(join(dir, 'trace.json')));
    const root = [...traces.values()].find((t) => t.header?.model_name === 'digits_pipeline')!;
    assert.equal(root.header!.parent_id, undefined);
    assert.ok(!root.stamps.has('COMPUTE_START'));
    const children = [...traces.values()].filter((t) => t.header?.parent_id === root.header!.id);
    assert.deepEqual(children.map((c) => c.header!.model_name).sort(), ['digits', 'digits_postprocess', 'digits_preprocess']);
    for (const c of children) {
      assert.ok(c.stamps.get('REQUEST_START')! >= root.stamps.get('REQUEST_START')!);
      assert.ok(c.stamps.get('REQUEST_END')! <= root.stamps.get('REQUEST_END')!);
      assert.ok(c.stamps.has('COMPUTE_START') && c.stamps.has('COMPUTE_END'));
    }
    const pre = children.find((c) => c.header!.model_name === 'digits_preprocess')!;
    const post = children.find((c) => c.header!.model_name === 'digits_postprocess')!;
    assert.ok(pre.stamps.get('REQUEST_END')! <= post.stamps.get('REQUEST_START')!, 'steps in the order the graph runs them');
  });
});

test('TENSORS level: TENSOR_QUEUE_INPUT and TENSOR_BACKEND_OUTPUT records hold each tensor’s name, data, shape and datatype', async () => {
  await withServer(['level=TENSORS', 'rate=1', 'triton,file=$DIR/trace.json'], async (s, dir) => {
    await infer(s, 'simple', SIMPLE);
    await s.close();
    const [t] = [...byId(await readTraces(join(dir, 'trace.json'))).values()];
    assert.equal(t!.stamps.size, 0, 'TENSORS alone writes no timestamps');
    const inputs = t!.tensors.filter((r) => r.activity === 'TENSOR_QUEUE_INPUT').map((r) => r.tensor);
    assert.deepEqual(inputs, [
      { name: 'INPUT0', data: Array.from({ length: 16 }, (_, i) => i).join(','), shape: '1,16', dtype: 'INT32' },
      { name: 'INPUT1', data: Array.from({ length: 16 }, () => 1).join(','), shape: '1,16', dtype: 'INT32' },
    ]);
    const outputs = new Map(t!.tensors.filter((r) => r.activity === 'TENSOR_BACKEND_OUTPUT').map((r) => [r.tensor!.name, r.tensor!.data]));
    assert.equal(outputs.get('OUTPUT0'), Array.from({ length: 16 }, (_, i) => i + 1).join(','));
    assert.equal(outputs.get('OUTPUT1'), Array.from({ length: 16 }, (_, i) => i - 1).join(','));
  });
});

test('rate and count sample as Triton counts them: every rate-th request, count of them, count going down in the settings', async () => {
  await withServer(['level=TIMESTAMPS', 'rate=2', 'count=3', 'triton,file=$DIR/trace.json'], async (s, dir) => {
    for (let i = 0; i < 10; i++) await infer(s, 'simple', { ...SIMPLE, id: `r${i}` });
    assert.equal((await request(`${s.url}/v2/trace/setting`)).json().trace_count, '0');
    await s.close();
    // The count reached: the traces went to a numbered file at once, as Triton writes them.
    assert.deepEqual(await readdir(dir), ['trace.json.0']);
    const traces = byId(await readTraces(join(dir, 'trace.json.0')));
    assert.deepEqual([...traces.values()].map((t) => t.header!.request_id).sort(), ['r1', 'r3', 'r5']);
  });
});

test('a model’s own setting overrides the global one, mirrors the fields it does not set, and clearing them all returns to the global', async () => {
  await withServer(['level=TIMESTAMPS', 'rate=1', 'triton,file=$DIR/trace.json'], async (s, dir) => {
    const set = async (path: string, body: unknown) => {
      const r = await postJson(`${s.url}${path}`, body);
      assert.equal(r.status, 200, r.body.toString());
      return r.json();
    };
    const own = await set('/v2/models/simple/trace/setting', { trace_rate: '4' });
    assert.deepEqual(own, { trace_level: ['TIMESTAMPS'], trace_rate: '4', trace_count: '-1', log_frequency: '0', trace_file: join(dir, 'trace.json'), trace_mode: 'triton' });
    // A global change reaches the fields the model did not set, not the one it did.
    await set('/v2/trace/setting', { trace_rate: '7', trace_count: '50' });
    const mirrored = (await request(`${s.url}/v2/models/simple/trace/setting`)).json();
    assert.deepEqual([mirrored.trace_rate, mirrored.trace_count], ['4', '50']);
    assert.equal((await request(`${s.url}/v2/models/digits_pipeline/trace/setting`)).json().trace_rate, '7', 'a model without its own setting shows the global one');
    // Cleared: back to the global value.
    assert.equal((await set('/v2/models/simple/trace/setting', { trace_rate: null })).trace_rate, '7');
    // Clearing a global field returns it to its start value.
    assert.equal((await set('/v2/trace/setting', { trace_rate: null })).trace_rate, '1');
  });
});

test('a model’s own rate samples its requests, others go by the global one', async () => {
  await withServer(['level=TIMESTAMPS', 'rate=1', 'triton,file=$DIR/trace.json'], async (s, dir) => {
    assert.equal((await postJson(`${s.url}/v2/models/simple/trace/setting`, { trace_rate: '3' })).status, 200);
    for (let i = 0; i < 6; i++) await infer(s, 'simple', { ...SIMPLE, id: `s${i}` });
    await infer(s, 'digits_pipeline', { ...PIPELINE, id: 'p' });
    await s.close();
    const headers = [...byId(await readTraces(join(dir, 'trace.json'))).values()].map((t) => t.header!).filter((h) => h.parent_id === undefined);
    assert.deepEqual(headers.map((h) => h.request_id).sort(), ['p', 's2', 's5']);
  });
});

test('bad trace settings are answered as Triton answers them, and change nothing', async () => {
  await withServer(['triton,file=$DIR/trace.json'], async (s) => {
    const cases: [unknown, number, string | RegExp][] = [
      [{ trace_rate: 'abc' }, 400, "Unable to parse 'trace_rate', got: abc"],
      [{ trace_rate: '99999999999' }, 400, "Unable to parse 'trace_rate', value is out of range [ 0, 4294967295 ], got: 99999999999"],
      [{ trace_count: '-5' }, 400, "Unable to parse 'trace_count'. Expecting value >= -1, got:-5"],
      [{ log_frequency: 'x' }, 400, "Unable to parse 'log_frequency', got: x"],
      [{ trace_level: ['OFF', 'TIMESTAMPS'] }, 400, "Expect only one trace level 'OFF' is specified"],
      [{ trace_level: ['TIMESTAMPS'], trace_rate: '0' }, 400, 'Attempting to set invalid trace setting :sample rate must be non-zero'],
      [{ trace_rate: 5 }, 500, 'attempt to access JSON non-string as string'],
      [{ trace_level: 'TIMESTAMPS' }, 500, 'attempt to access JSON non-array as array'],
      [{ trace_file: '/tmp/elsewhere.json' }, 501, 'trace file location can not be updated through network protocol'],
    ];
    for (const [body, status, words] of cases) {
      const r = await postJson(`${s.url}/v2/trace/setting`, body);
      assert.deepEqual([r.status, r.json().error], [status, words], JSON.stringify(body));
    }
    const unknown = await request(`${s.url}/v2/models/nosuch/trace/setting`);
    assert.deepEqual([unknown.status, unknown.json().error], [400, 'Request for unknown model : nosuch']);
    assert.equal((await request(`${s.url}/v2/models/simple/versions/1/trace/setting`)).status, 404);
    assert.deepEqual((await request(`${s.url}/v2/trace/setting`)).json().trace_level, ['OFF']);
  });
});

test('Triton mode with no file cannot trace: turning the level on is refused in Triton’s words', async () => {
  await withServer([], async (s) => {
    const r = await postJson(`${s.url}/v2/trace/setting`, { trace_level: ['TIMESTAMPS'] });
    assert.deepEqual([r.status, r.json().error], [400, 'Attempting to set invalid trace setting :trace file name is not given']);
  });
});

test('a trace file that cannot be written is one clear error in the log, and requests are served all the same', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'nereid-trace-'));
  const errors: string[] = [];
  const logger: Logger = { ...NOOP_LOGGER, error: (m: string) => void errors.push(m), child: () => logger };
  const server = await InferenceServer.create({
    modelRepositories: [EXAMPLES], modelControlMode: 'explicit', loadModels: ['simple'],
    trace: ['level=TIMESTAMPS', 'rate=1', `triton,file=${join(dir, 'missing', 'trace.json')}`, 'triton,log-frequency=1'],
  }, { logger });
  const http = await startHttpFrontend(server, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20 }, logger);
  try {
    for (let i = 0; i < 3; i++) {
      const r = await postJson(`http://127.0.0.1:${http.port}/v2/models/simple/infer`, SIMPLE);
      assert.equal(r.status, 200);
    }
  } finally {
    await server.close(5);
    await http.close();
    await rm(dir, { recursive: true, force: true });
  }
  assert.equal(errors.length, 1, JSON.stringify(errors));
  assert.match(errors[0]!, /^failed creating trace file: ENOENT/);
});
