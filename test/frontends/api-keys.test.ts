import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { connect as netConnect } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { request as undiciRequest } from 'undici';
import { EXAMPLES } from '../helpers/paths.js';
import { postJson, request } from '../helpers/http.js';
import { connect, failure, int32Bytes, unary, type Client } from '../helpers/grpc.js';
import { runNereid, spawnServer, type ServerProcess } from '../helpers/server.js';
import { until } from '../helpers/until.js';

// --api-keys-file through `nereid serve` on the HTTP, gRPC and OpenAI ports: keys made by `nereid keys add`,
// 401 / UNAUTHENTICATED without a valid key, 403 / PERMISSION_DENIED naming the missing scope (never the key),
// scopes narrowed to models, health open by default, the file read again when it changes, and
// --http-restricted-api still in force beside the keys; per-key quotas (rate, concurrency) answered 429 /
// RESOURCE_EXHAUSTED with Retry-After and counted in nereid_key_request_count{key_id,outcome}.

let dir: string;
let file: string;
let p: ServerProcess;
let grpcPort: number;
let openaiUrl: string;
let metricsUrl: string;
let client: Client;
const key: Record<string, string> = {};

/** `nereid keys add`, returning the key it printed once. */
async function addKey(id: string, ...scopes: string[]): Promise<string> {
  const r = await runNereid(['keys', 'add', id, ...scopes, '--file', file]);
  assert.equal(r.code, 0, r.out);
  const m = /^(nrd_[A-Za-z0-9_-]{43})$/m.exec(r.out);
  assert.ok(m, r.out);
  return m[1]!;
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nereid-keys-'));
  file = join(dir, 'keys');
  key['admin'] = await addKey('admin', '*');
  key['reader'] = await addKey('reader', 'metadata', 'model-config');
  key['simple'] = await addKey('team-a', 'inference:simple,other*', 'metadata:simple');
  // One request a minute after a burst of 2: a third request within the test is always over the rate.
  key['rated'] = await addKey('rated', 'inference', 'rate=1/m', 'burst=2');
  key['single'] = await addKey('single', 'inference', 'concurrency=1');
  p = await spawnServer([
    '--model-repository', EXAMPLES, '--model-control-mode=explicit', '--load-model=simple',
    '--allow-grpc=true', '--grpc-port=0', '--grpc-address=127.0.0.1', '--openai-port=0', '--openai-cors-origin=https://app.example',
    `--api-keys-file=${file}`, '--allow-metrics=true', '--metrics-port=0', '--http-restricted-api=logging:admin-key=secret',
  ]);
  const started = (what: string): RegExp => new RegExp(`Started ${what} at [^:]+:(\\d+)`);
  await until(() => ['OpenAI-compatible service', 'GRPCInferenceService', 'Metrics Service'].every((w) => started(w).test(p.output())), 'the gRPC, metrics and OpenAI ports');
  metricsUrl = `http://127.0.0.1:${started('Metrics Service').exec(p.output())![1]}/metrics`;
  grpcPort = Number(/Started GRPCInferenceService at [^:]+:(\d+)/.exec(p.output())![1]);
  openaiUrl = `http://127.0.0.1:${/Started OpenAI-compatible service at [^:]+:(\d+)/.exec(p.output())![1]}`;
  await until(async () => (await request(`${p.url}/v2/health/ready`)).status === 200, 'readiness');
  client = connect(grpcPort);
});

after(async () => {
  client?.close();
  p?.child.kill('SIGTERM');
  if (p) assert.equal(await p.exited, 0, p.output());
  await rm(dir, { recursive: true, force: true });
});

const bearer = (k: string): Record<string, string> => ({ authorization: `Bearer ${k}` });
const INFER = { inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, shape: [1, 16], datatype: 'INT32', data: Array.from({ length: 16 }, (_, i) => i) })) };

test('the key file holds ids, scopes and digests, never a key; the file is private to its owner', async () => {
  const text = await readFile(file, 'utf8');
  for (const k of Object.values(key)) {
    assert.ok(!text.includes(k));
    assert.ok(text.includes(createHash('sha256').update(k).digest('hex')));
  }
  assert.match(text, /^team-a inference:simple,other\*;metadata:simple [0-9a-f]{64}$/m);
  assert.equal((await stat(file)).mode & 0o077, 0);
  // An id already there, or a scope that is not one, is refused and the file left as it was.
  for (const args of [['admin', '*'], ['x', 'inferense']]) {
    const r = await runNereid(['keys', 'add', ...args, '--file', file]);
    assert.equal(r.code, 1, r.out);
    assert.doesNotMatch(r.out, /nrd_/);
  }
  assert.equal(await readFile(file, 'utf8'), text);
});

test('HTTP: 401 with a Bearer challenge without a valid key, 403 naming the missing scope, 200 with it', async () => {
  const url = `${p.url}/v2/models/simple/infer`;
  const none = await postJson(url, INFER);
  assert.equal(none.status, 401);
  assert.equal(none.headers.get('www-authenticate'), 'Bearer');
  assert.deepEqual(none.json(), { error: "This API requires an API key, expecting header 'Authorization: Bearer <key>'" });
  const wrong = await postJson(url, INFER, bearer(`${key['admin']!}x`));
  assert.deepEqual([wrong.status, wrong.json()], [401, { error: 'The API key is not valid' }]);
  assert.ok(!wrong.body.toString().includes(key['admin']!));
  const reader = await postJson(url, INFER, bearer(key['reader']!));
  assert.deepEqual([reader.status, reader.json()], [403, { error: "The API key 'reader' lacks scope 'inference'" }]);
  const ok = await postJson(url, INFER, bearer(key['simple']!));
  assert.equal(ok.status, 200, ok.body.toString());
  assert.deepEqual(ok.json().outputs[0].data, Array.from({ length: 16 }, (_, i) => 2 * i));
  // The scheme in any case, as RFC 9110 allows.
  assert.equal((await postJson(url, INFER, { authorization: `bearer ${key['admin']!}` })).status, 200);

  // Each route's category is Triton's restricted-API one.
  assert.equal((await request(`${p.url}/v2/models/simple/config`, { headers: bearer(key['reader']!) })).status, 200);
  const stats = await request(`${p.url}/v2/models/stats`, { headers: bearer(key['reader']!) });
  assert.deepEqual([stats.status, stats.json()], [403, { error: "The API key 'reader' lacks scope 'statistics'" }]);
  assert.equal((await request(`${p.url}/v2/models/stats`, { headers: bearer(key['admin']!) })).status, 200);
});

test('HTTP: a scope narrowed to models grants those models alone; an endpoint naming no model needs the whole scope', async () => {
  const k = bearer(key['simple']!);
  assert.equal((await request(`${p.url}/v2/models/simple`, { headers: k })).status, 200);
  const other = await postJson(`${p.url}/v2/models/simple_int8/infer`, INFER, k);
  assert.deepEqual([other.status, other.json()], [403, { error: "The API key 'team-a' lacks scope 'inference:simple_int8'" }]);
  // A glob: other* covers other_model (unknown here, so past the key it is the model that is missing).
  assert.equal((await postJson(`${p.url}/v2/models/other_model/infer`, INFER, k)).status, 400);
  const server = await request(`${p.url}/v2`, { headers: k });
  assert.deepEqual([server.status, server.json()], [403, { error: "The API key 'team-a' lacks scope 'metadata'" }]);
});

test('HTTP: health stays open for probes; --http-restricted-api still applies beside the keys', async () => {
  for (const path of ['/v2/health/live', '/v2/health/ready', '/v2/models/simple/ready']) assert.equal((await request(`${p.url}${path}`)).status, 200, path);
  const noHeader = await request(`${p.url}/v2/logging`, { headers: bearer(key['admin']!) });
  assert.deepEqual([noHeader.status, noHeader.json()], [403, { error: "This API is restricted, expecting header 'admin-key'" }]);
  assert.equal((await request(`${p.url}/v2/logging`, { headers: { ...bearer(key['admin']!), 'admin-key': 'secret' } })).status, 200);
  assert.equal((await request(`${p.url}/v2/logging`, { headers: { 'admin-key': 'secret' } })).status, 401);
});

test('HTTP: the same answers on the direct path (raw request on a kept-alive socket) and through undici', async () => {
  const raw = await new Promise<string>((resolve, reject) => {
    const s = netConnect(Number(new URL(p.url).port), '127.0.0.1');
    let got = '';
    s.on('data', (b) => {
      got += b.toString('latin1');
      if (/\r\n\r\n[\s\S]*\}$/.test(got) && (got.match(/HTTP\/1\.1/g) ?? []).length === 2) {
        s.end();
        resolve(got);
      }
    });
    s.on('error', reject);
    s.write('GET /v2/models/simple HTTP/1.1\r\nHost: x\r\n\r\n');
    s.write(`GET /v2/models/simple HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key['reader']!}\r\n\r\n`);
  });
  const answers = raw.split(/(?=HTTP\/1\.1 )/);
  assert.match(answers[0]!, /^HTTP\/1\.1 401 [\s\S]*WWW-Authenticate: Bearer\r\n/i);
  assert.match(answers[1]!, /^HTTP\/1\.1 200 /);
  const u = await undiciRequest(`${p.url}/v2/models/simple/config`, { headers: bearer(key['simple']!) });
  assert.equal(u.statusCode, 403);
  assert.deepEqual(await u.body.json(), { error: "The API key 'team-a' lacks scope 'model-config'" });
});

const meta = (k?: string): grpc.Metadata => {
  const m = new grpc.Metadata();
  if (k !== undefined) m.set('authorization', `Bearer ${k}`);
  return m;
};
const grpcInfer = (model: string) => ({
  model_name: model,
  inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'INT32', shape: [1, 16] })),
  raw_input_contents: [int32Bytes(Array.from({ length: 16 }, (_, i) => i)), int32Bytes(Array.from({ length: 16 }, () => 1))],
});

test('gRPC: UNAUTHENTICATED and PERMISSION_DENIED from the authorization metadata; health open', async () => {
  const none = await failure(unary(client, 'ModelInfer', grpcInfer('simple')));
  assert.equal(none.code, grpc.status.UNAUTHENTICATED);
  assert.equal(none.details, "This API requires an API key, expecting header 'Authorization: Bearer <key>'");
  const reader = await failure(unary(client, 'ModelInfer', grpcInfer('simple'), { metadata: meta(key['reader']) }));
  assert.deepEqual([reader.code, reader.details], [grpc.status.PERMISSION_DENIED, "The API key 'reader' lacks scope 'inference'"]);
  const narrowed = await failure(unary(client, 'ModelInfer', grpcInfer('simple_int8'), { metadata: meta(key['simple']) }));
  assert.deepEqual([narrowed.code, narrowed.details], [grpc.status.PERMISSION_DENIED, "The API key 'team-a' lacks scope 'inference:simple_int8'"]);
  const ok = await unary(client, 'ModelInfer', grpcInfer('simple'), { metadata: meta(key['simple']) });
  assert.equal(ok.model_name, 'simple');
  assert.equal((await unary(client, 'ModelMetadata', { name: 'simple' }, { metadata: meta(key['simple']) })).name, 'simple');
  const config = await failure(unary(client, 'ModelConfig', { name: 'simple' }, { metadata: meta(key['simple']) }));
  assert.deepEqual([config.code, config.details], [grpc.status.PERMISSION_DENIED, "The API key 'team-a' lacks scope 'model-config'"]);
  const server = await failure(unary(client, 'ServerMetadata', {}, { metadata: meta(key['simple']) }));
  assert.equal(server.code, grpc.status.PERMISSION_DENIED);
  assert.equal((await unary(client, 'ServerReady', {})).ready, true);
  assert.equal((await unary(client, 'ModelReady', { name: 'simple' })).ready, true);
});

test('gRPC: a stream needs a key holding inference; each of its requests is checked against its model', async () => {
  const stream = (k?: string): Promise<{ messages: any[]; status: grpc.StatusObject }> => new Promise((resolve) => {
    const call = client['ModelStreamInfer'](meta(k));
    const messages: any[] = [];
    call.on('data', (m: any) => messages.push(m));
    call.on('error', () => undefined);
    call.on('status', (status: grpc.StatusObject) => resolve({ messages, status }));
    call.write(grpcInfer('simple'));
    call.write(grpcInfer('simple_int8'));
    call.end();
  });
  const none = await stream();
  assert.equal(none.status.code, grpc.status.UNAUTHENTICATED);
  assert.equal((await stream(key['reader'])).status.code, grpc.status.PERMISSION_DENIED);
  const ok = await stream(key['simple']);
  assert.equal(ok.status.code, grpc.status.OK);
  assert.equal(ok.messages.length, 2);
  const [answered, refused] = ok.messages[0].error_message === '' ? ok.messages : [...ok.messages].reverse();
  assert.equal(answered.infer_response.model_name, 'simple');
  assert.equal(refused.error_message, "The API key 'team-a' lacks scope 'inference:simple_int8'");
});

test('OpenAI port: listing is metadata, completions are inference for the model the body names', async () => {
  const none = await request(`${openaiUrl}/v1/models`);
  assert.equal(none.status, 401);
  assert.equal(none.headers.get('www-authenticate'), 'Bearer');
  assert.equal(none.json().error.type, 'authentication_error');
  assert.equal((await request(`${openaiUrl}/v1/models`, { headers: bearer(key['reader']!) })).status, 200);
  const narrowed = await request(`${openaiUrl}/v1/models`, { headers: bearer(key['simple']!) });
  assert.equal(narrowed.status, 403);
  assert.equal(narrowed.json().error.message, "The API key 'team-a' lacks scope 'metadata'");
  const complete = await postJson(`${openaiUrl}/v1/completions`, { model: 'tiny_llm', prompt: 'hi' }, bearer(key['simple']!));
  assert.equal(complete.status, 403);
  assert.deepEqual([complete.json().error.message, complete.json().error.type], ["The API key 'team-a' lacks scope 'inference:tiny_llm'", 'permission_error']);
});

test('OpenAI port: /health/ready stays open to probes, /metrics is statistics, a CORS preflight needs no key', async () => {
  assert.equal((await request(`${openaiUrl}/health/ready`)).status, 200);
  assert.equal((await request(`${openaiUrl}/metrics`)).status, 401);
  assert.equal((await request(`${openaiUrl}/metrics`, { headers: bearer(key['reader']!) })).status, 403);
  const metrics = await request(`${openaiUrl}/metrics`, { headers: bearer(key['admin']!) });
  assert.equal(metrics.status, 200);
  assert.match(metrics.body.toString(), /nv_inference_request_success\{model="simple"/);
  // A browser sends its preflight without the Authorization header it asks leave for.
  const preflight = await request(`${openaiUrl}/v1/completions`, {
    method: 'OPTIONS', headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization' },
  });
  assert.equal(preflight.status, 204);
  assert.equal(preflight.headers.get('access-control-allow-origin'), 'https://app.example');
  const refused = await request(`${openaiUrl}/v1/models`, { headers: { Origin: 'https://app.example' } });
  assert.equal(refused.status, 401);
  assert.equal(refused.headers.get('access-control-allow-origin'), 'https://app.example');
});

test('the key file is read again when it changes; a file that no longer parses keeps the keys read before', async () => {
  const later = await addKey('later', 'statistics');
  await until(async () => (await request(`${p.url}/v2/models/stats`, { headers: bearer(later) })).status === 200, 'the new key to be accepted', 30_000);
  const good = await readFile(file, 'utf8');
  await writeFile(file, `${good}broken line\n`);
  await until(() => /API key file no longer parses, keeping the 6 keys read before: line 7: expected 'ID SCOPES SHA256 \[LIMIT\.\.\.\]', got 2 fields/.test(p.output()), 'the refusal of the bad file', 30_000);
  assert.equal((await request(`${p.url}/v2/models/stats`, { headers: bearer(later) })).status, 200);
  // An empty file is a file being rewritten, never "no keys".
  await writeFile(file, '');
  await until(() => /W.*the API key file is empty, keeping the 6 keys read before/.test(p.output()), 'the empty file to be ignored', 30_000);
  assert.equal((await request(`${p.url}/v2/models/stats`, { headers: bearer(later) })).status, 200);
  // A key removed from the file is refused once the file is read again.
  await writeFile(file, good.split('\n').filter((l) => !l.startsWith('later ')).join('\n'));
  await until(async () => (await request(`${p.url}/v2/models/stats`, { headers: bearer(later) })).status === 401, 'the removed key to be refused', 30_000);
  assert.ok(!p.output().includes(later), 'the log never holds a key');
});

test('quota: past its rate a key is answered 429 with Retry-After, on every port alike; counted and logged by key id', async () => {
  const url = `${p.url}/v2/models/simple/infer`;
  const k = bearer(key['rated']!);
  assert.equal((await postJson(url, INFER, k)).status, 200);
  const second = await unary(client, 'ModelInfer', grpcInfer('simple'), { metadata: meta(key['rated']) });
  assert.equal(second.model_name, 'simple');
  const over = await postJson(url, INFER, k);
  assert.equal(over.status, 429);
  assert.deepEqual(over.json(), { error: "The API key 'rated' is over its rate of 0.0166667 requests a second" });
  const retry = Number(over.headers.get('retry-after'));
  assert.ok(retry >= 1 && retry <= 60, String(retry));
  const grpcOver = await failure(unary(client, 'ModelInfer', grpcInfer('simple'), { metadata: meta(key['rated']) }));
  assert.deepEqual([grpcOver.code, grpcOver.details], [grpc.status.RESOURCE_EXHAUSTED, "The API key 'rated' is over its rate of 0.0166667 requests a second"]);
  // gRPC has no header for it: the same seconds come as the trailer retry-after.
  const grpcRetry = Number(grpcOver.metadata.get('retry-after')[0]);
  assert.ok(grpcRetry >= 1 && grpcRetry <= 60, String(grpcRetry));
  const openai = await postJson(`${openaiUrl}/v1/completions`, { model: 'simple', prompt: 'hi' }, k);
  assert.equal(openai.status, 429);
  assert.equal(openai.json().error.type, 'rate_limit_error');
  assert.ok(Number(openai.headers.get('retry-after')) >= 1);
  // Other keys are not held back by this one.
  assert.equal((await postJson(url, INFER, bearer(key['simple']!))).status, 200);

  const metrics = await (await fetch(metricsUrl)).text();
  assert.match(metrics, /^nereid_key_request_count\{key_id="rated",outcome="admitted"\} 2$/m);
  assert.match(metrics, /^nereid_key_request_count\{key_id="rated",outcome="rate_limited"\} 3$/m);
  assert.match(metrics, /^nereid_key_request_count\{key_id="reader",outcome="permission_denied"\} [1-9]/m);
  assert.doesNotMatch(metrics, /nrd_/);
  // One line per key and minute, however many refusals.
  assert.equal(p.output().match(/API key 'rated' over its quota: /g)?.length, 1, p.output());
});

test('quota: a key at its concurrency limit is refused until its request in flight is over', async () => {
  const url = `${p.url}/v2/models/simple/infer`;
  // A request whose body has not all arrived is in flight from its head on.
  const admitted = async (): Promise<number> => Number(/^nereid_key_request_count\{key_id="single",outcome="admitted"\} (\d+)$/m.exec(await (await fetch(metricsUrl)).text())?.[1] ?? 0);
  const before = await admitted();
  const held = netConnect(Number(new URL(p.url).port), '127.0.0.1');
  await new Promise<void>((resolve) => held.once('connect', resolve));
  held.write(`POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key['single']!}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"inputs":`);
  // The held request takes the key's one slot before the others ask (else one of them could take it first and
  // the held request be refused, with nothing left in flight to refuse the rest).
  await until(async () => (await admitted()) === before + 1, 'the held request to be admitted');
  const k = bearer(key['single']!);
  await until(async () => {
    const r = await postJson(url, INFER, k);
    return r.status === 429 && r.json().error === "The API key 'single' has 1 requests in flight, its concurrency limit" && r.headers.get('retry-after') === '1';
  }, 'the refusal of a second request in flight', 30_000);
  const grpcRefused = await failure(unary(client, 'ModelInfer', grpcInfer('simple'), { metadata: meta(key['single']) }));
  assert.equal(grpcRefused.code, grpc.status.RESOURCE_EXHAUSTED);
  assert.deepEqual(grpcRefused.metadata.get('retry-after'), ['1']);
  held.destroy();
  await until(async () => (await postJson(url, INFER, k)).status === 200, 'the slot to be free again', 30_000);
  // gRPC calls hold their slot until they end, and give it back.
  for (let i = 0; i < 3; i++) assert.equal((await unary(client, 'ModelInfer', grpcInfer('simple'), { metadata: meta(key['single']) })).model_name, 'simple');
});

test('--api-keys-protect-health=true: health needs a key holding health; a bad key file stops the start', async () => {
  const probe = await addKey('probe', 'health');
  const q = await spawnServer(['--model-repository', EXAMPLES, '--model-control-mode=explicit', '--load-model=simple', `--api-keys-file=${file}`, '--api-keys-protect-health=true']);
  try {
    await until(async () => (await request(`${q.url}/v2/health/ready`, { headers: bearer(probe) })).status === 200, 'readiness');
    assert.equal((await request(`${q.url}/v2/health/live`)).status, 401);
    const reader = await request(`${q.url}/v2/models/simple/ready`, { headers: bearer(key['reader']!) });
    assert.deepEqual([reader.status, reader.json()], [403, { error: "The API key 'reader' lacks scope 'health'" }]);
  } finally {
    q.child.kill('SIGTERM');
    assert.equal(await q.exited, 0, q.output());
  }
  const bad = join(dir, 'bad-keys');
  await writeFile(bad, 'only-two fields\n');
  const r = await runNereid(['serve', '--model-repository', EXAMPLES, '--model-control-mode=explicit', '--http-port=0', '--allow-grpc=false', '--allow-metrics=false', `--api-keys-file=${bad}`]);
  assert.equal(r.code, 1, r.out);
  assert.match(r.out, /failed to read the API key file: line 1: expected 'ID SCOPES SHA256 \[LIMIT\.\.\.\]', got 2 fields/);
  // Without --file the line is printed for the operator to place, beside the key.
  const printed = await runNereid(['keys', 'add', 'loose', 'metadata', 'concurrency=2']);
  assert.equal(printed.code, 0, printed.out);
  const k = /^(nrd_\S+)$/m.exec(printed.out)![1]!;
  assert.match(printed.out, new RegExp(`^loose metadata ${createHash('sha256').update(k).digest('hex')} concurrency=2$`, 'm'));
});
