import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { EXAMPLES } from '../../helpers/paths.js';
import { spawnServer, startTestServer, type TestServer } from '../../helpers/server.js';
import { binaryBody, request, type Reply } from '../../helpers/http.js';

// Requests a hostile client sends, each with the status it must get, through a real server with the size
// limit turned down (--http-max-input-size 8 MiB) so the cases run in seconds on two cores; the same shapes
// at full size are what the stall benchmark sends. After them, a normal inference must still be right.

const MAX_INPUT = 8 * 1024 * 1024;

let s: TestServer;
before(async () => {
  s = await startTestServer({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit', loadModels: ['simple', 'simple_string'] }, MAX_INPUT);
});
after(() => s.close());

const range16 = Array.from({ length: 16 }, (_, i) => i);
const good = { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: range16 };
const good1 = { ...good, name: 'INPUT1' };
/** Pushes a body past the JSON worker's threshold (256 KiB), to reach the off-thread path. */
const PAD = ' '.repeat(300 * 1024);

const nested = (depth: number, open: string, close: string, inner: string): string => open.repeat(depth) + inner + close.repeat(depth);
const tinyObjects = (n: number, key = 'inputs'): string => `{"${key}":[${new Array(n).fill('{}').join(',')}]}`;

interface Case {
  readonly name: string;
  readonly model?: string;
  /** Another endpoint than the model's infer. */
  readonly path?: string;
  readonly body: () => string | { body: Buffer; headers: Record<string, string> };
  readonly status: number;
  readonly error: RegExp;
}

const binaryBytes = (shape: number[]) => binaryBody({ inputs: [{ name: 'INPUT0', shape, datatype: 'BYTES', parameters: { binary_data_size: 0 } }] }, []);

const CASES: Case[] = [
  // Millions of tiny inputs: refused on the count (the model has 2), before any input is decoded.
  { name: 'a few MB of tiny input objects', body: () => tinyObjects(2_000_000), status: 400, error: /^expected 2 inputs but got (at least )?\d+ inputs for model 'simple'$/ },
  { name: 'tiny input objects, small body', body: () => tinyObjects(100), status: 400, error: /^expected 2 inputs but got 100 inputs/ },
  { name: 'a few MB of tiny requested outputs', body: () => `{"inputs":${JSON.stringify([good, good1])},"outputs":[${new Array(2_000_000).fill('{}').join(',')}]}`, status: 400, error: /requested outputs (at least )?\d+ for model 'simple', which has 2 outputs/ },
  { name: 'a shape of a million dimensions', body: () => JSON.stringify({ inputs: [{ ...good, shape: new Array(1_000_000).fill(1), data: [1] }, good1] }), status: 400, error: /1000000 dimensions, more than any of its inputs has \(2\)/ },
  { name: 'half a million parameters', body: () => `{"inputs":${JSON.stringify([good, good1])},"parameters":{${Array.from({ length: 500_000 }, (_, i) => `"p${i}":1`).join(',')}}}`, status: 400, error: /at most 1024 parameters/ },
  // Nesting where a scalar belongs: a 400 that names the field, inline and in the worker.
  { name: 'shape nested 100k deep', body: () => `{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":${nested(100_000, '[', ']', '1')},"data":[1]}]}`, status: 400, error: /Unable to parse 'shape' of input 'INPUT0'/ },
  { name: 'shape nested 100k deep, large body', body: () => `{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":${nested(100_000, '[', ']', '1')},"data":[1]}]}${PAD}`, status: 400, error: /Unable to parse 'shape' of input 'INPUT0'/ },
  { name: 'shape nested 5000 deep', body: () => `{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":${nested(5000, '[', ']', '1')},"data":[1]}]}`, status: 400, error: /Unable to parse 'shape' of input 'INPUT0'/ },
  { name: 'shape nested 5000 deep, large body', body: () => `{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":${nested(5000, '[', ']', '1')},"data":[1]}]}${PAD}`, status: 400, error: /Unable to parse 'shape' of input 'INPUT0'/ },
  { name: 'datatype nested 5000 deep', body: () => `{"inputs":[{"name":"INPUT0","datatype":${nested(5000, '{"a":', '}', '1')},"shape":[1,16],"data":[1]}]}`, status: 400, error: /datatype/ },
  { name: 'datatype nested 5000 deep, large body', body: () => `{"inputs":[{"name":"INPUT0","datatype":${nested(5000, '{"a":', '}', '1')},"shape":[1,16],"data":[1]}]}${PAD}`, status: 400, error: /datatype/ },
  { name: 'datatype nested 100k deep', body: () => `{"inputs":[{"name":"INPUT0","datatype":${nested(100_000, '{"a":', '}', '1')},"shape":[1,16],"data":[1]}]}`, status: 400, error: /datatype|parse the request JSON/ },
  { name: 'datatype arrays nested 100k deep', body: () => `{"inputs":[{"name":"INPUT0","datatype":${nested(100_000, '[', ']', '1')},"shape":[1,16],"data":[1]}]}`, status: 400, error: /Unable to parse 'datatype' of input 'INPUT0'/ },
  { name: 'a data value nested 5000 deep', body: () => `{"inputs":[{"name":"INPUT0","datatype":"INT32","shape":[1,1],"data":[${nested(5000, '{"a":', '}', '1')}]}]}`, status: 400, error: /an object is not a valid INT32 value/ },
  // Element counts the data cannot hold: refused before anything is allocated for them.
  { name: 'BYTES shape [1,30000000] with no data', model: 'simple_string', body: () => binaryBytes([1, 30_000_000]), status: 400, error: /^expected 30000000 string elements for inference input 'INPUT0' for model 'simple_string', got 0$/ },
  { name: 'BYTES shape past 2^32 elements, binary', model: 'simple_string', body: () => binaryBytes([1, 2 ** 32 + 1]), status: 400, error: /^expected 4294967297 string elements/ },
  { name: 'BYTES shape past 2^32 elements, JSON', model: 'simple_string', body: () => JSON.stringify({ inputs: [{ name: 'INPUT0', shape: [1, 2 ** 32 + 1], datatype: 'BYTES', data: ['a'] }] }), status: 400, error: /--http-max-input-size/ },
  { name: 'a few MB of tiny objects to generate', path: '/v2/models/simple/generate', body: () => `{"INPUT0":[${new Array(2_000_000).fill('{}').join(',')}]}`, status: 400, error: /more than 100000 JSON values/ },
  { name: 'a few MB of tiny objects to logging', path: '/v2/logging', body: () => `{"log_info":[${new Array(2_000_000).fill('{}').join(',')}]}`, status: 400, error: /more than 100000 JSON values/ },
  { name: 'a few MB of tiny objects to repository load', path: '/v2/repository/models/simple/load', body: () => `{"parameters":[${new Array(2_000_000).fill('{}').join(',')}]}`, status: 400, error: /more than 100000 JSON values/ },
  { name: 'JSON data declaring more bytes than the size limit', body: () => JSON.stringify({ inputs: [{ ...good, shape: [1, 4_000_000], data: [1] }, good1] }), status: 400, error: /Request JSON size of 16000000 exceeds the maximum allowed value of 8388608/ },
  // BYTES data whose bytes are not UTF-8 (a JSON string is UTF-8 text): a 400 naming the input, inline and in the
  // worker, not ONNX Runtime's failure to read U+FFFD as a number.
  { name: 'BYTES data that is not UTF-8, JSON', model: 'simple_string', body: () => notUtf8Strings(''), status: 400, error: /^Unable to parse 'data': element 3 of input 'INPUT1' is not valid UTF-8/ },
  { name: 'BYTES data that is not UTF-8, large JSON', model: 'simple_string', body: () => notUtf8Strings(PAD), status: 400, error: /^Unable to parse 'data': element 3 of input 'INPUT1' is not valid UTF-8/ },
];

/** simple_string's two inputs, the fourth element of INPUT1 holding the byte 0xFF after a digit; `pad` after the JSON. */
function notUtf8Strings(pad: string): { body: Buffer; headers: Record<string, string> } {
  const numbers = JSON.stringify(range16.map(String));
  const json = `{"inputs":[{"name":"INPUT0","datatype":"BYTES","shape":[1,16],"data":${numbers}},{"name":"INPUT1","datatype":"BYTES","shape":[1,16],"data":${numbers.replace('"3"', '"3\xff"')}}]}${pad}`;
  return { body: Buffer.from(json, 'latin1'), headers: { 'content-type': 'application/json' } };
}

async function send(c: Case): Promise<Reply> {
  const b = c.body();
  const url = c.path !== undefined ? `${s.url}${c.path}` : `${s.url}/v2/models/${c.model ?? 'simple'}/infer`;
  return typeof b === 'string' ? request(url, { body: b, headers: { 'content-type': 'application/json' } }) : request(url, b);
}

async function normalInferenceIsRight(): Promise<void> {
  const r = await request(`${s.url}/v2/models/simple/infer`, { body: JSON.stringify({ inputs: [good, { ...good1, data: range16.map(() => 1) }] }) });
  assert.equal(r.status, 200);
  const out = new Map((r.json().outputs as { name: string; data: number[] }[]).map((o) => [o.name, o.data]));
  assert.deepEqual(out.get('OUTPUT0'), range16.map((v) => v + 1));
  assert.deepEqual(out.get('OUTPUT1'), range16.map((v) => v - 1));
}

describe('hostile requests get a 4xx with a clear error, and the server keeps serving', () => {
  for (const c of CASES) {
    test(c.name, async () => {
      const r = await send(c);
      assert.equal(r.status, c.status, r.body.toString('utf8', 0, 300));
      const error: unknown = r.json().error;
      assert.equal(typeof error, 'string');
      assert.match(error as string, c.error);
      // The answer names the problem; it does not echo the client's megabytes back.
      assert.ok((error as string).length < 500, `an error of ${(error as string).length} characters`);
    });
  }

  test('after every hostile request, a normal inference on simple is answered correctly', normalInferenceIsRight);

  test('U+FFFD sent as UTF-8 or escaped in BYTES data is the client\'s own: it reaches the model', async () => {
    // Whatever simple_string makes of it, the request is not refused as not UTF-8.
    for (const element of ['"3\ufffd"', '"3\\ufffd"']) {
      const numbers = JSON.stringify(range16.map(String));
      const body = `{"inputs":[{"name":"INPUT0","datatype":"BYTES","shape":[1,16],"data":${numbers}},{"name":"INPUT1","datatype":"BYTES","shape":[1,16],"data":${numbers.replace('"3"', element)}}]}`;
      const r = await request(`${s.url}/v2/models/simple_string/infer`, { body, headers: { 'content-type': 'application/json' } });
      assert.doesNotMatch(r.body.toString(), /not valid UTF-8/);
    }
  });

  test('a valid large JSON request still decodes right in the worker: BYTES, INT32, parameters, requested outputs', async () => {
    const strings = range16.map(String);
    const body = JSON.stringify({
      id: 'big', parameters: { custom: 'v' }, outputs: [{ name: 'OUTPUT1' }],
      inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'BYTES', data: strings }, { name: 'INPUT1', shape: [1, 16], datatype: 'BYTES', data: strings.map(() => '1') }],
    }) + PAD;
    const r = await request(`${s.url}/v2/models/simple_string/infer`, { body });
    assert.equal(r.status, 200, r.body.toString('utf8', 0, 300));
    assert.equal(r.json().id, 'big');
    assert.deepEqual(r.json().outputs.map((o: { name: string; data: string[] }) => [o.name, o.data]), [['OUTPUT1', range16.map((v) => String(v - 1))]]);
  });
});

describe('one request does not stall the event loop for everyone else', () => {
  /**
   * The server runs in this process, so its event loop is this one. While a hostile request is handled, normal
   * requests keep going; the longest event-loop delay seen meanwhile is what the request cost everyone else.
   * Taking back the parsed JSON of a body of tiny objects from the worker (structured clone, on this thread)
   * used to be most of the request's time.
   */
  async function longestStall(hostile: () => Promise<Reply>[], expect: (r: Reply) => void): Promise<{ stallMs: number; tookMs: number }> {
    const h = monitorEventLoopDelay({ resolution: 5 });
    const normal = JSON.stringify({ inputs: [good, good1] });
    h.enable();
    const t0 = performance.now();
    let done = false;
    const all = Promise.all(hostile()).then((rs) => {
      done = true;
      return rs;
    });
    while (!done) assert.equal((await request(`${s.url}/v2/models/simple/infer`, { body: normal })).status, 200);
    const rs = await all;
    const tookMs = performance.now() - t0;
    h.disable();
    for (const r of rs) expect(r);
    return { stallMs: h.max / 1e6, tookMs };
  }

  /** How long this thread takes to parse `body`: the least a request would stall the loop if it were parsed here. */
  function parseMs(body: string): number {
    const t0 = performance.now();
    JSON.parse(body);
    return performance.now() - t0;
  }

  // Bodies of tiny objects that the worker must parse in full: the quick scan before parsing cannot refuse
  // them (an escaped key; junk where the header has no bound), so only what crosses back decides the stall.
  const junk = new Array(2_000_000).fill('{}').join(',');
  const STALLERS: { name: string; path?: string; body: string; status: number }[] = [
    { name: 'tiny objects under an escaped "inputs" key', body: `{"inp\\u0075ts":[${junk}]}`, status: 400 },
    { name: 'tiny objects in an input\'s parameters, in an otherwise valid request', body: `{"inputs":[${JSON.stringify({ ...good, parameters: { junk: 0 } }).replace('0}}', `[${junk}]}}`)},${JSON.stringify(good1)}]}`, status: 200 },
    // Endpoints other than infer parse their bodies too.
    { name: 'tiny objects sent to generate', path: '/v2/models/simple/generate', body: `{"INPUT0":[${junk}]}`, status: 400 },
    { name: 'tiny objects sent to logging', path: '/v2/logging', body: `{"log_info":[${junk}]}`, status: 400 },
  ];
  for (const st of STALLERS) {
    test(`a body of millions of ${st.name}`, async () => {
      const seen: string[] = [];
      // The reference is the stall the request would cause if its body were parsed on this thread (taking the
      // parsed objects back from the worker costs about three times as much), measured here and now, so a
      // slower or busier machine raises it along with everything else. A stall under half of it is the
      // machine's own (garbage collection, another process taking both cores); so is one under a quarter of
      // the request's own time. The best of five attempts: a machine's stall comes now and then, one the
      // request causes comes every time.
      const passed = (stallMs: number, tookMs: number, referenceMs: number): boolean => stallMs < 0.5 * referenceMs || stallMs < 0.25 * tookMs;
      let ok = false;
      for (let attempt = 0; attempt < 5 && !ok; attempt++) {
        const { stallMs, tookMs } = await longestStall(
          () => [request(`${s.url}${st.path ?? '/v2/models/simple/infer'}`, { body: st.body, headers: { 'content-type': 'application/json' } })],
          (r) => assert.equal(r.status, st.status, r.body.toString('utf8', 0, 300)),
        );
        const referenceMs = parseMs(st.body);
        ok = passed(stallMs, tookMs, referenceMs);
        seen.push(`${stallMs.toFixed(0)} ms of a ${tookMs.toFixed(0)} ms request (parsing it here: ${referenceMs.toFixed(0)} ms)`);
      }
      assert.ok(ok, `the longest stall each time: ${seen.join('; ')}`);
    });
  }

  test('eight BYTES requests declaring 30 million elements with no data cost no more than eight normal ones', async () => {
    const hostile = binaryBytes([1, 30_000_000]);
    const normal = JSON.stringify({ inputs: [good, good1] });
    const timed = async (send: () => Promise<Reply>, status: number): Promise<number> => {
      const t0 = performance.now();
      for (const r of await Promise.all(Array.from({ length: 8 }, send))) assert.equal(r.status, status);
      return performance.now() - t0;
    };
    // Warm both paths, then compare the best of three rounds of each.
    await timed(() => request(`${s.url}/v2/models/simple_string/infer`, hostile), 400);
    const hostileMs: number[] = [];
    const normalMs: number[] = [];
    for (let round = 0; round < 3; round++) {
      hostileMs.push(await timed(() => request(`${s.url}/v2/models/simple_string/infer`, hostile), 400));
      normalMs.push(await timed(() => request(`${s.url}/v2/models/simple/infer`, { body: normal }), 200));
    }
    const ratio = Math.min(...hostileMs) / Math.min(...normalMs);
    // Eight normal requests take a few milliseconds, so a stall of the machine's own in every round could
    // pass 5x; the floor is what even one of these requests would cost if the server made room for the
    // elements it declares: this thread's time to build one array of 30 million empty strings, measured now.
    const t0 = performance.now();
    new Array(30_000_000).fill('');
    const allocMs = performance.now() - t0;
    assert.ok(ratio < 5 || Math.min(...hostileMs) < 0.5 * allocMs,
      `eight hostile requests took ${ratio.toFixed(1)} times as long as eight normal ones (${Math.min(...hostileMs).toFixed(0)} ms; one array of their elements: ${allocMs.toFixed(0)} ms)`);
  });

  test('the server still answers a normal inference correctly', normalInferenceIsRight);
});

describe('a body refused from its start', () => {
  test('is answered 400 after its first 64 KiB, without waiting for the rest, and the connection closes', async () => {
    const port = Number(new URL(s.url).port);
    const start = Buffer.from(tinyObjects(40_000)).subarray(0, 80 * 1024);
    const answer = await new Promise<string>((resolve, reject) => {
      let got = '';
      const sock = connect(port, '127.0.0.1', () => {
        // 6 MB declared, 80 KiB sent: the rest never comes, so only a refusal from the start can answer.
        sock.write(`POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${6 * 1024 * 1024}\r\n\r\n`);
        sock.write(start);
      });
      sock.on('data', (c: Buffer) => (got += c.toString()));
      sock.on('close', () => resolve(got));
      sock.on('error', () => resolve(got));
      setTimeout(() => reject(new Error(`no answer; got so far: ${got}`)), 20_000).unref();
    });
    assert.match(answer, /^HTTP\/1\.1 400 /);
    assert.match(answer, /connection: close/i);
    assert.match(answer, /expected 2 inputs but got at least \d+ inputs for model 'simple'/);
  });
  test('the server still answers a normal inference correctly', normalInferenceIsRight);
});

describe('a client that disconnects mid-upload', () => {
  /** Sends half a request body, then closes the connection; returns the server's log output after that. */
  async function disconnectMidUpload(verbose: number): Promise<string> {
    const p = await spawnServer(['--model-repository', EXAMPLES, '--model-control-mode=explicit', '--load-model=simple', `--log-verbose=${verbose}`]);
    try {
      const before = p.output().length;
      const port = Number(new URL(p.url).port);
      await new Promise<void>((resolve, reject) => {
        const sock = connect(port, '127.0.0.1', () => {
          sock.write('POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"inputs":[');
          setTimeout(() => {
            sock.destroy();
            resolve();
          }, 200);
        });
        sock.on('error', reject);
      });
      // The server has seen the close once it answers the next request.
      assert.equal((await request(`${p.url}/v2/health/ready`)).status, 200);
      await new Promise((r) => setTimeout(r, 200));
      return p.output().slice(before);
    } finally {
      p.child.kill('SIGTERM');
      await p.exited;
    }
  }

  test('logs nothing at the default levels, and one line at verbose level 1', async () => {
    const quiet = await disconnectMidUpload(0);
    assert.equal(quiet.trim(), '', `logged at the default levels:\n${quiet}`);
    const verbose = (await disconnectMidUpload(1)).split('\n').filter((l) => /client closed its connection/.test(l));
    assert.equal(verbose.length, 1);
    assert.match(verbose[0]!, /^V.*before sending the whole request body/);
  });
});
