import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { InferenceServer } from '../../../src/server/inference-server.js';
import { startHttpFrontend, type HttpFrontend } from '../../../src/frontends/http/server.js';
import { startMetricsFrontend, type MetricsFrontend } from '../../../src/frontends/metrics/server.js';
import { createLogger } from '../../../src/observability/logger.js';
import type { ServerOptions } from '../../../src/server/options.js';
import { EXAMPLES, FIXTURES } from '../../helpers/paths.js';
import { postJson, request } from '../../helpers/http.js';
import { spawnServer, tempRepository } from '../../helpers/server.js';
import { parseExposition, type Scrape } from './scrape.js';

// Triton's metrics through the real endpoint: requests go over HTTP, the metrics port is scraped and the text
// parsed as Prometheus parses it. Timing is never measured: the queue is observed while a request is known to
// wait behind a slow one (async_model sleeps IN milliseconds, one instance, a queue of one).

interface Servers {
  server: InferenceServer;
  http: HttpFrontend;
  metrics: MetricsFrontend;
  url: string;
  scrape(): Promise<Scrape>;
  close(): Promise<void>;
}

const quiet = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });

async function start(options: ServerOptions): Promise<Servers> {
  const server = await InferenceServer.create(options, { logger: quiet });
  const http = await startHttpFrontend(server, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20 }, quiet);
  const metrics = await startMetricsFrontend(server, { port: 0, address: '127.0.0.1' }, quiet);
  const metricsUrl = `http://127.0.0.1:${metrics.port}/metrics`;
  return {
    server, http, metrics,
    url: `http://127.0.0.1:${http.port}`,
    scrape: async () => {
      const r = await request(metricsUrl);
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
      return parseExposition(r.body.toString());
    },
    close: async () => {
      await server.close(5);
      await http.close();
      await metrics.close();
    },
  };
}

const simpleBody = (shape = [1, 16]) => ({
  inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, shape, datatype: 'INT32', data: new Array(shape[0]! * shape[1]!).fill(1) })),
});
const intBody = (v: number) => ({ inputs: [{ name: 'IN', shape: [1], datatype: 'INT32', data: [v] }] });
const digitsBody = (v: number) => ({ inputs: [{ name: 'INPUT', shape: [1, 64], datatype: 'FP32', data: new Array(64).fill(v) }] });

let s: Servers;
let repo: { dir: string; remove(): Promise<void> };

before(async () => {
  repo = await tempRepository([
    { from: join(EXAMPLES, 'simple') },
    { from: join(EXAMPLES, 'digits') },
    { from: join(FIXTURES, 'js', 'async_model') },
    { from: join(FIXTURES, 'js', 'faulty') },
    { from: join(FIXTURES, 'js', 'stream_js') },
  ]);
  await appendFile(join(repo.dir, 'digits', 'config.pbtxt'), '\nresponse_cache { enable: true }\nmetric_tags { key: "team" value: "vision" }\n');
  const slow = join(repo.dir, 'async_model', 'config.pbtxt');
  const text = (await readFile(slow, 'utf8')).replace('count: 2', 'count: 1');
  await writeFile(slow, `${text}\ndynamic_batching { default_queue_policy { max_queue_size: 1 } }\n`);
  await appendFile(join(repo.dir, 'stream_js', 'config.pbtxt'), '\nmodel_metrics { metric_control [ { metric_identifier { family: "nv_inference_first_response_histogram_ms" } histogram_options { buckets: [ 1, 10000 ] } } ] }\n');
  s = await start({
    modelRepositories: [repo.dir], modelControlMode: 'explicit', loadModels: ['*'],
    responseCache: { local: { size: String(1 << 20) } },
    metrics: { config: ['histogram_latencies=true'], intervalMs: 50 },
  });
});

after(async () => {
  await s.close();
  await repo.remove();
});

test('every loaded version has its series from the start, failures with all four reasons', async () => {
  const m = await s.scrape();
  for (const model of ['simple', 'async_model', 'faulty', 'stream_js']) {
    assert.equal(m.value('nv_inference_request_success', { model, version: '1' }), 0);
    assert.deepEqual(m.find('nv_inference_request_failure', { model }).map((x) => x.labels['reason']), ['REJECTED', 'CANCELED', 'BACKEND', 'OTHER']);
    assert.ok(m.value('nv_model_load_duration_secs', { model, version: '1' }) > 0);
  }
  assert.equal(m.find('nv_inference_request_success', { model: 'digits' }).length, 2, 'both versions of digits');
  for (const [name, type] of [['nv_inference_request_success', 'counter'], ['nv_inference_request_failure', 'counter'], ['nv_inference_count', 'counter'],
    ['nv_inference_exec_count', 'counter'], ['nv_inference_request_duration_us', 'counter'], ['nv_inference_queue_duration_us', 'counter'],
    ['nv_inference_compute_input_duration_us', 'counter'], ['nv_inference_compute_infer_duration_us', 'counter'],
    ['nv_inference_compute_output_duration_us', 'counter'], ['nv_inference_pending_request_count', 'gauge'], ['nv_model_load_duration_secs', 'gauge'],
    ['nv_cpu_utilization', 'gauge'], ['nv_cpu_memory_total_bytes', 'gauge'], ['nv_cpu_memory_used_bytes', 'gauge']]) {
    assert.equal(m.types.get(name!), type, name);
  }
  assert.equal(m.help.get('nv_inference_request_success'), 'Number of successful inference requests, all batch sizes');
  assert.ok(m.value('nv_cpu_memory_total_bytes') > m.value('nv_cpu_memory_used_bytes'));
  assert.ok(m.value('nv_cpu_memory_used_bytes') > 0);
  const cpu = m.value('nv_cpu_utilization');
  assert.ok(cpu >= 0 && cpu <= 1, String(cpu));
});

test('successes, inference and execution counts and cumulative durations match the statistics extension', async () => {
  for (let i = 0; i < 3; i++) assert.equal((await postJson(`${s.url}/v2/models/simple/infer`, simpleBody())).status, 200);
  const m = await s.scrape();
  const st = (await request(`${s.url}/v2/models/simple/stats`)).json().model_stats[0];
  const labels = { model: 'simple', version: '1' };
  assert.equal(m.value('nv_inference_request_success', labels), 3);
  assert.equal(m.value('nv_inference_count', labels), 3);
  assert.equal(m.value('nv_inference_exec_count', labels), 3);
  assert.equal(m.value('nv_inference_request_duration_us', labels), Math.floor(st.inference_stats.success.ns / 1000));
  assert.equal(m.value('nv_inference_queue_duration_us', labels), Math.floor(st.inference_stats.queue.ns / 1000));
  assert.equal(m.value('nv_inference_compute_infer_duration_us', labels), Math.floor(st.inference_stats.compute_infer.ns / 1000));
  assert.ok(m.value('nv_inference_compute_infer_duration_us', labels) > 0);
  assert.equal(m.find('nereid_instance_execution_count', labels).reduce((a, x) => a + x.value, 0), 3);
});

test('failures by reason: a bad shape is OTHER, a model error BACKEND, a full queue REJECTED, a client that leaves CANCELED', async () => {
  assert.equal((await postJson(`${s.url}/v2/models/simple/infer`, simpleBody([1, 15]))).status, 400);
  assert.equal((await postJson(`${s.url}/v2/models/faulty/infer`, intBody(-1))).status, 500);
  // Long enough that a loaded machine still queues the next two behind it.
  const running = postJson(`${s.url}/v2/models/async_model/infer`, intBody(2500));
  await waitFor(async () => (await s.scrape()).value('nereid_inference_inflight_request_count', { model: 'async_model' }) === 1);
  const leaving = new AbortController();
  const queued = fetch(`${s.url}/v2/models/async_model/infer`, { method: 'POST', body: JSON.stringify(intBody(1)), signal: leaving.signal }).catch((e: Error) => e);
  await waitFor(async () => (await s.scrape()).value('nv_inference_pending_request_count', { model: 'async_model' }) === 1);
  const busy = await s.scrape();
  assert.equal(busy.value('nv_inference_pending_request_count', { model: 'async_model', version: '1' }), 1, 'one waits behind the running one');
  assert.equal(busy.value('nereid_inference_inflight_request_count', { model: 'async_model', version: '1' }), 2);
  const full = await postJson(`${s.url}/v2/models/async_model/infer`, intBody(1));
  assert.equal(full.status, 503);
  leaving.abort();
  assert.ok((await queued) instanceof Error);
  assert.equal((await running).status, 200);
  await waitFor(async () => (await s.scrape()).value('nv_inference_request_failure', { model: 'async_model', reason: 'CANCELED' }) === 1);
  const m = await s.scrape();
  const reasons = (model: string) => Object.fromEntries(m.find('nv_inference_request_failure', { model, version: '1' }).map((x) => [x.labels['reason'], x.value]));
  assert.deepEqual(reasons('simple'), { REJECTED: 0, CANCELED: 0, BACKEND: 0, OTHER: 1 });
  assert.deepEqual(reasons('faulty'), { REJECTED: 0, CANCELED: 0, BACKEND: 1, OTHER: 0 });
  assert.deepEqual(reasons('async_model'), { REJECTED: 1, CANCELED: 1, BACKEND: 0, OTHER: 0 });
  assert.equal(m.value('nv_inference_request_success', { model: 'async_model' }), 1);
  assert.equal(m.value('nv_inference_exec_count', { model: 'async_model' }), 1, 'the cancelled request never ran');
  assert.equal(m.value('nv_inference_pending_request_count', { model: 'async_model' }), 0);
});

test('response cache: hits and misses per model, a hit is a success but not an inference; metric_tags become labels', async () => {
  const url = `${s.url}/v2/models/digits/versions/2/infer`;
  for (const v of [1, 1, 1, 2]) assert.equal((await postJson(url, digitsBody(v))).status, 200);
  const m = await s.scrape();
  const labels = { _team: 'vision', model: 'digits', version: '2' };
  assert.equal(m.value('nv_cache_num_hits_per_model', labels), 2);
  assert.equal(m.value('nv_cache_num_misses_per_model', labels), 2);
  assert.equal(m.value('nv_inference_request_success', labels), 4);
  assert.equal(m.value('nv_inference_count', labels), 2);
  assert.equal(m.value('nv_inference_exec_count', labels), 2);
  const st = (await request(`${s.url}/v2/models/digits/versions/2/stats`)).json().model_stats[0].inference_stats;
  assert.equal(m.value('nv_cache_hit_duration_per_model', labels), Math.floor(st.cache_hit.ns / 1000));
  assert.equal(m.value('nv_cache_miss_duration_per_model', labels), Math.floor(st.cache_miss.ns / 1000));
  assert.equal(m.value('nv_inference_request_duration_us', labels), Math.floor((st.success.ns + st.cache_miss.ns) / 1000));
  assert.equal(m.find('nv_cache_num_hits_per_model', { model: 'simple' }).length, 0, 'no cache series for a model without the cache');
  assert.ok(/nv_inference_request_success\{_team="vision",model="digits",version="2"\} 4/.test(await s.server.metricsText()), 'labels print sorted, as Triton');
});

test('histogram_latencies: the first-response histogram of a decoupled model, with its model_metrics buckets', async () => {
  const r = await postJson(`${s.url}/v2/models/stream_js/generate_stream`, { IN: 3 });
  assert.equal(r.status, 200, r.body.toString());
  const m = await s.scrape();
  assert.equal(m.types.get('nv_inference_first_response_histogram_ms'), 'histogram');
  const labels = { model: 'stream_js', version: '1' };
  assert.deepEqual(m.find('nv_inference_first_response_histogram_ms_bucket', labels).map((x) => x.labels['le']), ['1', '10000', '+Inf']);
  assert.equal(m.value('nv_inference_first_response_histogram_ms_bucket', { ...labels, le: '10000' }), 1);
  assert.equal(m.value('nv_inference_first_response_histogram_ms_count', labels), 1);
  assert.ok(m.value('nv_inference_first_response_histogram_ms_sum', labels) > 0);
  assert.equal(m.find('nv_inference_first_response_histogram_ms_count', { model: 'simple' }).length, 0, 'only decoupled models have one, as in Triton');
  // The statistics extension carries the histogram's count and sum (nereid_first_response_ms), which the
  // web console turns into a mean time to first response.
  const stats = (await request(`${s.url}/v2/models/stream_js/stats`)).json().model_stats[0];
  assert.deepEqual(stats.nereid_first_response_ms, { count: 1, sum: m.value('nv_inference_first_response_histogram_ms_sum', labels) });
  assert.equal((await request(`${s.url}/v2/models/simple/stats`)).json().model_stats[0].nereid_first_response_ms, undefined);
});

test('a version that unloads disappears from the output', async () => {
  await s.server.unloadModel('faulty');
  const m = await s.scrape();
  assert.equal(m.find('nv_inference_request_success', { model: 'faulty' }).length, 0);
  assert.equal(m.find('nv_inference_request_failure', { model: 'faulty' }).length, 0);
  assert.equal(m.find('nv_inference_request_success', { model: 'simple' }).length, 1);
});

test('the endpoint as Triton\'s: /metrics/ too, other paths an empty 200, other methods 405', async () => {
  const base = `http://127.0.0.1:${s.metrics.port}`;
  assert.match((await request(`${base}/metrics/`)).body.toString(), /^# HELP nv_inference_request_success/);
  const other = await request(`${base}/v2/health/live`);
  assert.equal(other.status, 200);
  assert.equal(other.body.byteLength, 0);
  assert.equal((await request(`${base}/metrics`, { method: 'POST', body: '' })).status, 405);
});

test('summary_latencies and counter_latencies=false: summaries whose count and sum follow the requests; no duration counters', async () => {
  const t = await start({
    modelRepositories: [join(EXAMPLES)], modelControlMode: 'explicit', loadModels: ['simple'],
    metrics: { config: ['summary_latencies=true', 'counter_latencies=false', 'summary_quantiles=0.5:0.05,0.99:0.001'], cpu: false },
  });
  try {
    for (let i = 0; i < 4; i++) assert.equal((await postJson(`${t.url}/v2/models/simple/infer`, simpleBody())).status, 200);
    const m = await t.scrape();
    const labels = { model: 'simple', version: '1' };
    assert.equal(m.types.get('nv_inference_request_summary_us'), 'summary');
    assert.deepEqual(m.find('nv_inference_request_summary_us', labels).map((x) => x.labels['quantile']), ['0.5', '0.99']);
    assert.equal(m.value('nv_inference_request_summary_us_count', labels), 4);
    assert.equal(m.value('nv_inference_queue_summary_us_count', labels), 4);
    const median = m.value('nv_inference_compute_infer_summary_us', { ...labels, quantile: '0.5' });
    const sum = m.value('nv_inference_compute_infer_summary_us_sum', labels);
    assert.ok(median > 0 && median <= sum, `${median} of ${sum}`);
    assert.equal(m.find('nv_inference_request_duration_us').length, 0);
    assert.equal(m.types.has('nv_inference_request_duration_us'), false);
    assert.equal(m.types.has('nv_cpu_utilization'), false, '--allow-cpu-metrics=false');
    assert.equal(m.value('nv_inference_request_success', labels), 4);
    // The statistics extension carries the same window's request and queue quantiles (nereid_ fields).
    const stats = (await request(`${t.url}/v2/models/simple/stats`)).json().model_stats[0];
    assert.deepEqual(Object.keys(stats.nereid_latency_quantiles_us.request), ['0.5', '0.99']);
    assert.equal(stats.nereid_latency_quantiles_us.request['0.99'], m.value('nv_inference_request_summary_us', { ...labels, quantile: '0.99' }));
    assert.ok(stats.nereid_latency_quantiles_us.queue['0.5'] >= 0);
  } finally {
    await t.close();
  }
});

test('in process: metrics are off unless asked for, and then nothing is bound', async () => {
  const plain = await InferenceServer.create({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit', loadModels: ['simple'] }, { logger: quiet });
  try {
    assert.equal(plain.metricsRegistry, undefined);
    await assert.rejects(plain.metricsText(), /metrics are off/);
    assert.equal((plain as any).manager.resolve('simple').stats.observer, null);
  } finally {
    await plain.close();
  }
});

test('nereid serve: --allow-metrics serves on --metrics-port; --allow-metrics=false opens nothing', async () => {
  const on = await spawnServer(['--model-repository', EXAMPLES, '--model-control-mode=explicit', '--load-model=simple', '--allow-metrics=true', '--metrics-port=0']);
  try {
    const port = await waitFor(async () => /Started Metrics Service at 127\.0\.0\.1:(\d+)/.exec(on.output())?.[1]);
    const m = parseExposition((await request(`http://127.0.0.1:${port}/metrics`)).body.toString());
    assert.equal(m.value('nv_inference_request_success', { model: 'simple', version: '1' }), 0);
  } finally {
    on.child.kill('SIGTERM');
    assert.equal(await on.exited, 0);
  }
  const off = await spawnServer(['--model-repository', EXAMPLES, '--model-control-mode=explicit', '--load-model=simple', '--metrics-port=0']);
  try {
    assert.equal((await request(`${off.url}/v2/health/ready`)).status, 200);
    assert.doesNotMatch(off.output(), /Metrics Service/);
  } finally {
    off.child.kill('SIGTERM');
    assert.equal(await off.exited, 0);
  }
});

/** Polls `check` until it returns something truthy (at most 10 s). */
async function waitFor<T>(check: () => Promise<T | undefined | false>): Promise<T> {
  for (let i = 0; i < 500; i++) {
    const v = await check();
    if (v) return v;
    await sleep(20);
  }
  throw new Error('condition not reached in 10 s');
}
