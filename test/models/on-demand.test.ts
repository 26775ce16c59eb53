import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { postJson, request } from '../helpers/http.js';
import { connect, failure, unary, type Client } from '../helpers/grpc.js';
import { infer, loaded, repository, sample, serve, stop, type Served } from '../helpers/memory-models.js';
import { until } from '../helpers/until.js';

// --model-load-on-demand through `nereid serve` in mode none: nothing loads at start; a request, metadata,
// config or ready call naming a model of the repository loads it (one shared load per model) over HTTP and
// gRPC; a load slower than --model-load-wait-secs (8 s here) is answered 503 / UNAVAILABLE with Retry-After; names not
// in the repository get the usual answer; a failed load is not tried again at once.

let repo: { dir: string; remove(): Promise<void> };
let s: Served;
let client: Client;

before(async () => {
  repo = await repository([
    { name: 'm1', mb: 1 }, { name: 'm2', mb: 1 }, { name: 'm3', mb: 1 }, { name: 'm4', mb: 1 }, { name: 'm5', mb: 1 }, { name: 'm6', mb: 1 },
    { name: 'sleepy', mb: 1, params: { nereid_test_load_ms: '25000' } },
    { name: 'broken', mb: 1, params: { nereid_test_ballast_mb: '-1' } },
  ]);
  s = await serve(repo.dir, ['--model-control-mode=none', '--model-load-wait-secs=8', '--allow-grpc=true', '--grpc-port=0', '--grpc-address=127.0.0.1']);
  await until(() => /Started GRPCInferenceService at [^:]+:(\d+)/.test(s.p.output()), 'the gRPC port');
  client = connect(Number(/Started GRPCInferenceService at [^:]+:(\d+)/.exec(s.p.output())![1]));
});

after(async () => {
  client?.close();
  await stop(s?.p);
  await repo?.remove();
});

const loads = (model: string): number => s.p.output().match(new RegExp(`loading: ${model}:1`, 'g'))?.length ?? 0;

test('mode none starts with nothing loaded and the server ready; the index lists every model by name', async () => {
  assert.equal((await request(`${s.p.url}/v2/health/ready`)).status, 200);
  assert.equal((await loaded(s.p.url)).size, 0);
  const idx = (await postJson(`${s.p.url}/v2/repository/index`, {})).json() as { name: string }[];
  assert.deepEqual(idx.map((e) => e.name), ['broken', 'm1', 'm2', 'm3', 'm4', 'm5', 'm6', 'sleepy']);
});

test('concurrent requests for a model that is not loaded share one load, and each is answered', async () => {
  const replies = await Promise.all([1, 2, 3, 4, 5, 6].map((ms) => infer(s.p.url, 'm1', ms)));
  replies.forEach((r, i) => {
    assert.equal(r.status, 200, r.body.toString());
    assert.deepEqual(r.json().outputs[0].data, [i + 1]);
  });
  assert.equal(loads('m1'), 1);
  assert.equal(sample(await s.metrics(), 'nereid_model_load_on_demand_count', 'm1'), 1);
});

test('metadata, config and ready calls load the model too, over HTTP and gRPC; so do gRPC ModelInfer and streams', async () => {
  assert.equal((await request(`${s.p.url}/v2/models/m2`)).json().name, 'm2');
  const ready = await request(`${s.p.url}/v2/models/m3/ready`);
  assert.equal(ready.status, 200, `${ready.body.toString()}\n${s.p.output()}`);
  assert.equal((await unary(client, 'ModelConfig', { name: 'm4' })).config.name, 'm4');
  const infer5 = { model_name: 'm5', inputs: [{ name: 'IN', datatype: 'INT32', shape: [1], contents: { int_contents: [7] } }] };
  assert.deepEqual((await unary(client, 'ModelInfer', infer5)).outputs[0].name, 'OUT');
  assert.deepEqual([...(await loaded(s.p.url)).keys()].sort(), ['m1', 'm2', 'm3', 'm4', 'm5']);
  // A stream whose request names a model not loaded.
  const stream = client.ModelStreamInfer();
  const answered = new Promise<any>((resolve, reject) => {
    stream.on('data', resolve);
    stream.on('error', reject);
  });
  stream.write({ ...infer5, model_name: 'm6' });
  const first = await answered;
  assert.equal(first.error_message, '');
  assert.equal(first.infer_response.model_name, 'm6');
  stream.end();
  assert.ok((await loaded(s.p.url)).has('m6'));
});

test('a load that takes longer than --model-load-wait-secs answers 503 with Retry-After; the load goes on and serves later', async () => {
  const r = await infer(s.p.url, 'sleepy');
  assert.equal(r.status, 503, r.body.toString());
  assert.equal(r.headers.get('retry-after'), '1');
  assert.match(r.json().error, /model 'sleepy' is loading and was not ready within 8000 ms/);
  // Still loading 16 s into its 25 s load: the gRPC call's wait runs out too.
  const g = await failure(unary(client, 'ModelMetadata', { name: 'sleepy' }));
  assert.equal(g.code, grpc.status.UNAVAILABLE);
  await until(async () => (await loaded(s.p.url)).has('sleepy'), 'sleepy to finish loading');
  assert.equal((await infer(s.p.url, 'sleepy', 2)).status, 200);
  assert.equal(loads('sleepy'), 1);
});

test('a name no repository has gets the usual answer; a failed load answers its error and is not tried again at once', async () => {
  const unknown = await infer(s.p.url, 'nosuch');
  assert.equal(unknown.status, 400);
  assert.equal(unknown.json().error, "Request for unknown model: 'nosuch' is not found");
  const first = await infer(s.p.url, 'broken');
  assert.equal(first.status, 400, `${first.body.toString()}\n${s.p.output()}`);
  assert.match(first.json().error, /load failed for model 'broken'/);
  const second = await infer(s.p.url, 'broken');
  assert.equal(second.json().error, first.json().error);
  assert.equal(loads('broken'), 1);
  // The server stays ready: a model that failed on demand is not one the server was asked to serve.
  assert.equal((await request(`${s.p.url}/v2/health/ready`)).status, 200);
});
