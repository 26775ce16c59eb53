import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { EXAMPLES } from '../../helpers/paths.js';
import { postJson, request } from '../../helpers/http.js';
import { tempRepository } from '../../helpers/server.js';
import { connect, unary, int32Bytes, type Client } from '../../helpers/grpc.js';
import { OtlpReceiver, type ReceivedSpan } from '../../helpers/otlp-receiver.js';
import { until } from '../../helpers/until.js';
import { PYTHON_EXAMPLES, PYTHON_FIXTURES, pythonSkip } from '../../backends/python/helpers.js';
import { InferenceServer } from '../../../src/server/inference-server.js';
import { startHttpFrontend, type HttpFrontend } from '../../../src/frontends/http/server.js';
import { startGrpcFrontend, type GrpcFrontend } from '../../../src/frontends/grpc/server.js';
import { startOpenAiFrontend, type OpenAiFrontend } from '../../../src/frontends/openai/server.js';
import { NOOP_LOGGER } from '../../../src/observability/logger.js';

// OpenTelemetry mode against a real OTLP/HTTP receiver on loopback that decodes the exporter's protobuf.
// rate=1000: only requests that carry a client's traceparent are traced here, as Triton traces those
// whatever the rate says.

const pythonMissing = pythonSkip();
let receiver: OtlpReceiver;
let server: InferenceServer;
let http: HttpFrontend;
let grpcFrontend: GrpcFrontend;
let openai: OpenAiFrontend;
let client: Client;
let repo: { dir: string; remove(): Promise<void> };
let url: string;

before(async () => {
  receiver = await OtlpReceiver.start();
  repo = await tempRepository([
    ...['simple', 'digits_pipeline', 'digits_preprocess', 'digits', 'digits_postprocess', 'tiny_llm'].map((m) => ({ from: join(EXAMPLES, m) })),
    ...(pythonMissing ? [] : [{ from: join(PYTHON_FIXTURES, 'bls_traced') }, { from: join(PYTHON_EXAMPLES, 'add_sub') }]),
  ]);
  server = await InferenceServer.create({
    modelRepositories: [repo.dir],
    trace: ['mode=opentelemetry', 'level=TIMESTAMPS', 'rate=1000', `opentelemetry,url=${receiver.url}`, 'opentelemetry,bsp_schedule_delay=20',
      'opentelemetry,resource=deployment.environment=test', 'opentelemetry,nereid_stage_spans=true'],
  }, { logger: NOOP_LOGGER });
  http = await startHttpFrontend(server, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 24 }, NOOP_LOGGER);
  grpcFrontend = await startGrpcFrontend(server, { port: 0, address: '127.0.0.1' }, NOOP_LOGGER);
  openai = await startOpenAiFrontend(server, { port: 0, address: '127.0.0.1' }, NOOP_LOGGER);
  client = connect(grpcFrontend.port);
  url = `http://127.0.0.1:${http.port}`;
});

after(async () => {
  client?.close();
  await server?.close(5);
  await http?.close();
  await grpcFrontend?.close();
  await openai?.close();
  await receiver?.close();
  await repo?.remove();
});

const SIMPLE = {
  inputs: [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
  ],
};

let n = 0;
/** A fresh client context: a trace id and the client's span id. */
function clientContext(): { traceId: string; spanId: string; traceparent: string } {
  n++;
  const traceId = `4bf92f3577b34da6a3ce929d0e0e${String(n).padStart(4, '0')}`;
  const spanId = `00f067aa0ba9${String(n).padStart(4, '0')}`;
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

async function spansOf(traceId: string, names: string[]): Promise<ReceivedSpan[]> {
  const of = () => receiver.spans.filter((s) => s.traceId === traceId);
  await until(() => names.every((name) => of().some((s) => s.name === name)), `spans ${names.join(', ')} of trace ${traceId}`);
  return of();
}

const one = (spans: ReceivedSpan[], name: string): ReceivedSpan => {
  const found = spans.filter((s) => s.name === name);
  assert.equal(found.length, 1, `one span ${name}: ${found.length}`);
  return found[0]!;
};

const eventNames = (s: ReceivedSpan): string[] => [...s.events].sort((a, b) => (a.ns < b.ns ? -1 : a.ns > b.ns ? 1 : 0)).map((e) => e.name);

test('a client’s traceparent continues through Triton’s spans: InferRequest, the model, compute, with the stage events and attributes', async () => {
  const untraced = await postJson(`${url}/v2/models/simple/infer`, { ...SIMPLE, id: 'no-context' });
  assert.equal(untraced.status, 200);
  const c = clientContext();
  const r = await postJson(`${url}/v2/models/simple/infer`, { ...SIMPLE, id: 'otel-1' }, { traceparent: c.traceparent, tracestate: 'vendor=abc' });
  assert.equal(r.status, 200);
  const spans = await spansOf(c.traceId, ['InferRequest', 'simple', 'compute']);
  const root = one(spans, 'InferRequest');
  const model = one(spans, 'simple');
  const compute = one(spans, 'compute');
  assert.equal(root.parentSpanId, c.spanId, 'the root span is the client span’s child');
  assert.equal(root.traceState, 'vendor=abc');
  assert.equal(root.kind, 2, 'SERVER');
  assert.equal(model.parentSpanId, root.spanId);
  assert.equal(compute.parentSpanId, model.spanId);
  assert.deepEqual(eventNames(root), ['HTTP_RECV_START', 'HTTP_RECV_END', 'INFER_RESPONSE_COMPLETE', 'HTTP_SEND_START', 'HTTP_SEND_END']);
  assert.deepEqual(eventNames(model), ['REQUEST_START', 'QUEUE_START', 'REQUEST_END']);
  assert.deepEqual(eventNames(compute), ['COMPUTE_START', 'COMPUTE_INPUT_END', 'COMPUTE_OUTPUT_START', 'COMPUTE_END']);
  assert.deepEqual({ ...model.attributes, 'triton.trace_id': typeof model.attributes['triton.trace_id'] }, {
    'triton.model_name': 'simple', 'triton.model_version': 1, 'triton.trace_id': 'number', 'triton.trace_parent_id': 0, 'triton.request_id': 'otel-1',
  });
  // Spans nest in time as in structure.
  assert.ok(root.startNs <= model.startNs && model.startNs <= compute.startNs && compute.endNs <= model.endNs && model.endNs <= root.endNs);
  assert.equal(root.resource['service.name'], 'triton-inference-server');
  assert.equal(root.resource['deployment.environment'], 'test');
  assert.ok(receiver.contentTypes.every((t) => t === 'application/x-protobuf'));
  // nereid_stage_spans: the wait in the queue under the model span, compute's three stages under compute.
  assert.equal(one(spans, 'queue').parentSpanId, model.spanId);
  for (const stage of ['compute_input', 'compute_infer', 'compute_output']) assert.equal(one(spans, stage).parentSpanId, compute.spanId, stage);
  assert.ok(!receiver.spans.some((s) => s.attributes['triton.request_id'] === 'no-context'), 'rate 1000: a request without a context is not traced');
});

test('an ensemble’s steps are model spans under the ensemble’s, their parent trace id its trace id', async () => {
  const c = clientContext();
  const r = await postJson(`${url}/v2/models/digits_pipeline/infer`, { inputs: [{ name: 'IMAGE', datatype: 'UINT8', shape: [1, 64], data: Array.from({ length: 64 }, (_, i) => i % 17) }] }, { traceparent: c.traceparent });
  assert.equal(r.status, 200);
  const steps = ['digits_preprocess', 'digits', 'digits_postprocess'];
  const spans = await spansOf(c.traceId, ['InferRequest', 'digits_pipeline', ...steps]);
  const ensemble = one(spans, 'digits_pipeline');
  assert.equal(ensemble.parentSpanId, one(spans, 'InferRequest').spanId);
  for (const step of steps) {
    const s = one(spans, step);
    assert.equal(s.parentSpanId, ensemble.spanId, step);
    assert.equal(s.attributes['triton.trace_parent_id'], ensemble.attributes['triton.trace_id'], step);
    assert.ok(s.startNs >= ensemble.startNs && s.endNs <= ensemble.endNs, step);
  }
  assert.ok(one(spans, 'digits_preprocess').endNs <= one(spans, 'digits_postprocess').startNs);
});

test('a Python model’s BLS call given request.trace() is a model span under the caller’s', { skip: pythonMissing }, async () => {
  const c = clientContext();
  const fp32 = [1, 2, 3, 4];
  const r = await postJson(`${url}/v2/models/bls_traced/infer`, {
    inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [4], data: fp32 }, { name: 'INPUT1', datatype: 'FP32', shape: [4], data: fp32 }],
  }, { traceparent: c.traceparent });
  assert.equal(r.status, 200, r.body.toString());
  const spans = await spansOf(c.traceId, ['bls_traced', 'add_sub']);
  const caller = one(spans, 'bls_traced');
  const callee = one(spans, 'add_sub');
  assert.equal(callee.parentSpanId, caller.spanId);
  assert.equal(callee.attributes['triton.trace_parent_id'], caller.attributes['triton.trace_id']);
  assert.ok(callee.startNs >= caller.startNs && callee.endNs <= caller.endNs);
});

test('gRPC: traceparent metadata continues the client’s trace; the root span holds the gRPC timestamps', async () => {
  const c = clientContext();
  const md = new grpc.Metadata();
  md.set('traceparent', c.traceparent);
  await unary(client, 'ModelInfer', {
    model_name: 'simple', id: 'grpc-1',
    inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }],
    raw_input_contents: [int32Bytes(Array.from({ length: 16 }, (_, i) => i)), int32Bytes(Array.from({ length: 16 }, () => 1))],
  }, { metadata: md });
  const spans = await spansOf(c.traceId, ['InferRequest', 'simple']);
  const root = one(spans, 'InferRequest');
  assert.equal(root.parentSpanId, c.spanId);
  assert.deepEqual(eventNames(root), ['GRPC_WAITREAD_START', 'GRPC_WAITREAD_END', 'INFER_RESPONSE_COMPLETE', 'GRPC_SEND_START', 'GRPC_SEND_END']);
  assert.equal(one(spans, 'simple').attributes['triton.request_id'], 'grpc-1');
});

test('gRPC ModelStreamInfer: a streamed request with traceparent metadata is traced too', async () => {
  const c = clientContext();
  const md = new grpc.Metadata();
  md.set('traceparent', c.traceparent);
  const call = client.ModelStreamInfer(md);
  const got = new Promise<void>((resolve, reject) => {
    call.on('data', () => resolve());
    call.on('error', reject);
  });
  call.write({
    model_name: 'simple', id: 'stream-1',
    inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }],
    raw_input_contents: [int32Bytes(Array.from({ length: 16 }, (_, i) => i)), int32Bytes(Array.from({ length: 16 }, () => 1))],
  });
  await got;
  call.end();
  const spans = await spansOf(c.traceId, ['InferRequest', 'simple', 'compute']);
  assert.equal(one(spans, 'InferRequest').parentSpanId, c.spanId);
  assert.deepEqual(eventNames(one(spans, 'InferRequest')), ['GRPC_WAITREAD_START', 'GRPC_WAITREAD_END', 'INFER_RESPONSE_COMPLETE']);
  assert.equal(one(spans, 'simple').attributes['triton.request_id'], 'stream-1');
});

test('the llama.cpp backend’s prompt and generation are spans of their own with nereid_stage_spans, in that order', async () => {
  const c = clientContext();
  const r = await postJson(`http://127.0.0.1:${openai.port}/v1/completions`, { model: 'tiny_llm', prompt: 'Once upon a time', max_tokens: 4, temperature: 0 }, { traceparent: c.traceparent });
  assert.equal(r.status, 200, r.body.toString());
  const spans = await spansOf(c.traceId, ['InferRequest', 'tiny_llm', 'prompt', 'generation']);
  const model = one(spans, 'tiny_llm');
  const prompt = one(spans, 'prompt');
  const generation = one(spans, 'generation');
  assert.equal(prompt.parentSpanId, model.spanId);
  assert.equal(generation.parentSpanId, model.spanId);
  assert.ok(prompt.endNs <= generation.startNs);
  assert.equal(one(spans, 'InferRequest').parentSpanId, c.spanId);
});

test('a Responses API request, streamed, continues the client’s trace as a chat completion does', async () => {
  const c = clientContext();
  const r = await postJson(`http://127.0.0.1:${openai.port}/v1/responses`, { model: 'tiny_llm', input: 'Once upon a time', max_output_tokens: 4, temperature: 0, stream: true }, { traceparent: c.traceparent });
  assert.equal(r.status, 200, r.body.toString());
  assert.match(r.body.toString(), /event: response\.completed|event: response\.incomplete/);
  const spans = await spansOf(c.traceId, ['InferRequest', 'tiny_llm', 'prompt', 'generation']);
  assert.equal(one(spans, 'InferRequest').parentSpanId, c.spanId);
  assert.equal(one(spans, 'tiny_llm').parentSpanId, one(spans, 'InferRequest').spanId);
});

test('the trace settings in OpenTelemetry mode show its options and no file keys', async () => {
  const s = (await request(`${url}/v2/trace/setting`)).json();
  assert.deepEqual(s, {
    trace_level: ['TIMESTAMPS'], trace_rate: '1000', trace_count: '-1', trace_mode: 'opentelemetry', url: receiver.url,
    resource: 'deployment.environment=test', bsp_max_queue_size: '2048', bsp_schedule_delay: '20', bsp_max_export_batch_size: '512',
  });
});
