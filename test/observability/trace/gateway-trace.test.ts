import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { LLAMA_MODEL, llamaServer } from '../../helpers/llama-server.js';
import { postJson } from '../../helpers/http.js';
import { OtlpReceiver, type ReceivedSpan } from '../../helpers/otlp-receiver.js';
import { until } from '../../helpers/until.js';
import { InferenceServer } from '../../../src/server/inference-server.js';
import { startHttpFrontend, type HttpFrontend } from '../../../src/frontends/http/server.js';
import { startOpenAiFrontend, type OpenAiFrontend } from '../../../src/frontends/openai/server.js';
import { NOOP_LOGGER } from '../../../src/observability/logger.js';

// The gateway backend in OpenTelemetry mode, against llama.cpp's llama-server (as the gateway tests run it),
// behind a relay that records the headers each engine request carried: a traced request's traceparent reaches
// the engine, naming the client's trace and the gateway model's span.

const { bin, skip, missing } = llamaServer();
let engine: ChildProcess | undefined;
let relay: Server;
const seen: { path: string; traceparent: string | undefined }[] = [];
let receiver: OtlpReceiver;
let server: InferenceServer;
let http: HttpFrontend;
let openai: OpenAiFrontend;
let repo: string;

async function startEngine(): Promise<{ child: ChildProcess; port: number }> {
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
  const child = spawn(bin, ['-m', LLAMA_MODEL, '--host', '127.0.0.1', '--port', String(port), '-t', '1', '-c', '512', '-np', '1', '--no-webui', '--no-warmup'], { stdio: 'ignore' });
  for (let i = 0; i < 300; i++) {
    if (await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)) return { child, port };
    if (child.exitCode !== null) break;
    await sleep(100);
  }
  child.kill('SIGKILL');
  throw new Error('llama-server did not become healthy');
}

async function model(name: string, base: string, decoupled: boolean): Promise<void> {
  await mkdir(join(repo, name, '1'), { recursive: true });
  await writeFile(join(repo, name, 'config.pbtxt'), `name: "${name}"
backend: "openai"
max_batch_size: 0
model_transaction_policy { decoupled: ${decoupled} }
parameters { key: "base_url" value { string_value: "${base}" } }
parameters { key: "model_id" value { string_value: "tiny" } }
`);
}

before(async () => {
  if (skip) return;
  if (missing) throw new Error(missing);
  const e = await startEngine();
  engine = e.child;
  relay = createServer((req, res) => {
    seen.push({ path: req.url ?? '', traceparent: req.headers['traceparent'] as string | undefined });
    const out = httpRequest({ host: '127.0.0.1', port: e.port, path: req.url, method: req.method, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.1', () => r()));
  const base = `http://127.0.0.1:${(relay.address() as { port: number }).port}`;
  repo = await mkdtemp(join(tmpdir(), 'nereid-gateway-trace-'));
  await model('llm_whole', base, false);
  await model('llm', base, true);
  receiver = await OtlpReceiver.start();
  server = await InferenceServer.create({
    modelRepositories: [repo],
    trace: ['mode=opentelemetry', 'level=TIMESTAMPS', 'rate=1000', `opentelemetry,url=${receiver.url}`, 'opentelemetry,bsp_schedule_delay=20', 'opentelemetry,nereid_stage_spans=true'],
  }, { logger: NOOP_LOGGER });
  http = await startHttpFrontend(server, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20 }, NOOP_LOGGER);
  openai = await startOpenAiFrontend(server, { port: 0, address: '127.0.0.1' }, NOOP_LOGGER);
});

after(async () => {
  await server?.close(5);
  await http?.close();
  await openai?.close();
  await receiver?.close();
  await new Promise<void>((r) => (relay ? relay.close(() => r()) : r()));
  engine?.kill('SIGKILL');
  if (repo) await rm(repo, { recursive: true, force: true });
});

const spansOf = async (traceId: string, names: string[]): Promise<ReceivedSpan[]> => {
  const of = () => receiver.spans.filter((s) => s.traceId === traceId);
  await until(() => names.every((n) => of().some((s) => s.name === n)), `spans ${names.join(', ')}`);
  return of();
};

test('the gateway hands a traced request’s traceparent to the engine: the client’s trace, the model span as parent', { skip }, async () => {
  const traceId = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';
  const r = await postJson(`http://127.0.0.1:${http.port}/v2/models/llm_whole/infer`, {
    inputs: [{ name: 'text_input', datatype: 'BYTES', shape: [1], data: ['Hello there'] }],
    parameters: { max_tokens: 4, temperature: 0 },
  }, { traceparent: `00-${traceId}-1111222233334444-01` });
  assert.equal(r.status, 200, r.body.toString());
  const spans = await spansOf(traceId, ['InferRequest', 'llm_whole', 'engine']);
  const gateway = spans.find((s) => s.name === 'llm_whole')!;
  const sent = seen.filter((x) => x.path.endsWith('/completions'));
  assert.equal(sent.length, 1);
  assert.equal(sent[0]!.traceparent, `00-${traceId}-${gateway.spanId}-01`);
  // nereid_stage_spans: the engine call as a span of its own under the model span.
  assert.equal(spans.find((s) => s.name === 'engine')!.parentSpanId, gateway.spanId);
});

test('the OpenAI frontend continues a client’s traceparent through a streaming gateway model to the engine', { skip }, async () => {
  const traceId = '0af7651916cd43dd8448eb211c80319c';
  const before = seen.length;
  const r = await postJson(`http://127.0.0.1:${openai.port}/v1/completions`, { model: 'llm', prompt: 'Once upon', max_tokens: 4, temperature: 0 },
    { traceparent: `00-${traceId}-b7ad6b7169203331-01` });
  assert.equal(r.status, 200, r.body.toString());
  const spans = await spansOf(traceId, ['InferRequest', 'llm']);
  assert.equal(spans.find((s) => s.name === 'InferRequest')!.parentSpanId, 'b7ad6b7169203331');
  const sent = seen.slice(before).filter((x) => x.path.endsWith('/completions'));
  assert.equal(sent[0]!.traceparent, `00-${traceId}-${spans.find((s) => s.name === 'llm')!.spanId}-01`);
});

test('an untraced request carries no traceparent to the engine', { skip }, async () => {
  const before = seen.length;
  const r = await postJson(`http://127.0.0.1:${http.port}/v2/models/llm_whole/infer`, {
    inputs: [{ name: 'text_input', datatype: 'BYTES', shape: [1], data: ['Hi'] }], parameters: { max_tokens: 2 },
  });
  assert.equal(r.status, 200);
  assert.deepEqual(seen.slice(before).filter((x) => x.path.endsWith('/completions')).map((x) => x.traceparent), [undefined]);
});
