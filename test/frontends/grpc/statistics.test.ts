import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { startHttpFrontend, type HttpFrontend } from '../../../src/frontends/http/server.js';
import { startMetricsFrontend, type MetricsFrontend } from '../../../src/frontends/metrics/server.js';
import { EXAMPLES } from '../../helpers/paths.js';
import { request } from '../../helpers/http.js';
import { failure, int32Bytes, startGrpcTestServer, unary, type GrpcTestServer } from '../../helpers/grpc.js';
import { parseExposition } from '../metrics/scrape.js';

// One source of statistics: after traffic over gRPC (plain requests, a stream, failures), gRPC
// ModelStatistics, HTTP /v2/models/{m}/stats and the Prometheus counters show the same numbers.

let s: GrpcTestServer;
let http: HttpFrontend;
let metrics: MetricsFrontend;
before(async () => {
  s = await startGrpcTestServer({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit', loadModels: ['simple'], metrics: { cpu: false } });
  http = await startHttpFrontend(s.server, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20 }, s.logger);
  metrics = await startMetricsFrontend(s.server, { port: 0, address: '127.0.0.1' }, s.logger);
});
after(async () => {
  await s.close();
  await http.close();
  await metrics.close();
});

const V = Array.from({ length: 16 }, (_, i) => i);
const simple = (batch: number) => ({
  model_name: 'simple',
  inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'INT32', shape: [batch, 16] })),
  raw_input_contents: [int32Bytes(Array.from({ length: batch }, () => V).flat()), int32Bytes(Array.from({ length: batch }, () => V).flat())],
});

test('gRPC ModelStatistics, HTTP statistics and metrics agree after gRPC traffic', async () => {
  for (const batch of [1, 2, 3]) await unary(s.client, 'ModelInfer', simple(batch));
  // Two over a stream.
  await new Promise<void>((resolve, reject) => {
    const call = s.client.ModelStreamInfer();
    let n = 0;
    call.on('data', () => {
      if (++n === 2) call.end();
    });
    call.on('error', reject);
    call.on('end', resolve);
    call.write(simple(1));
    call.write(simple(2));
  });
  // A request the model never sees (a bad shape): a failure with reason OTHER, no execution.
  const bad = await failure(unary(s.client, 'ModelInfer', { ...simple(1), inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 15] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }] }));
  assert.equal(bad.code, grpc.status.INVALID_ARGUMENT);

  const viaGrpc = (await unary(s.client, 'ModelStatistics', { name: 'simple', version: '1' })).model_stats[0];
  const viaHttp = (await request(`http://127.0.0.1:${http.port}/v2/models/simple/versions/1/stats`)).json().model_stats[0];
  const m = parseExposition((await request(`http://127.0.0.1:${metrics.port}/metrics`)).body.toString());
  const labels = { model: 'simple', version: '1' };

  // gRPC carries uint64 as strings (proto-loader's longs: String); the numbers are the same.
  const num = (v: unknown) => Number(v);
  assert.equal(num(viaGrpc.inference_count), 9);
  assert.equal(num(viaGrpc.execution_count), 5);
  assert.equal(num(viaGrpc.inference_count), viaHttp.inference_count);
  assert.equal(num(viaGrpc.execution_count), viaHttp.execution_count);
  assert.equal(num(viaGrpc.last_inference), viaHttp.last_inference);
  for (const k of ['success', 'fail', 'queue', 'compute_input', 'compute_infer', 'compute_output'] as const) {
    assert.equal(num(viaGrpc.inference_stats[k].count), viaHttp.inference_stats[k].count, k);
    assert.equal(num(viaGrpc.inference_stats[k].ns), viaHttp.inference_stats[k].ns, k);
  }
  assert.equal(viaHttp.inference_stats.success.count, 5);
  assert.deepEqual(viaGrpc.batch_stats.map((b: any) => [num(b.batch_size), num(b.compute_infer.count)]),
    viaHttp.batch_stats.map((b: any) => [b.batch_size, b.compute_infer.count]));

  assert.equal(m.value('nv_inference_request_success', labels), viaHttp.inference_stats.success.count);
  assert.equal(m.value('nv_inference_request_failure', { ...labels, reason: 'OTHER' }), viaHttp.inference_stats.fail.count);
  assert.equal(m.value('nv_inference_count', labels), viaHttp.inference_count);
  assert.equal(m.value('nv_inference_exec_count', labels), viaHttp.execution_count);
  assert.equal(m.value('nv_inference_compute_infer_duration_us', labels), Math.floor(viaHttp.inference_stats.compute_infer.ns / 1000));
  assert.equal(m.value('nv_inference_queue_duration_us', labels), Math.floor(viaHttp.inference_stats.queue.ns / 1000));
});
