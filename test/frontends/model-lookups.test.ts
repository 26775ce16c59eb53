import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { cp } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { InferenceServer } from '../../src/server/inference-server.js';
import { startHttpFrontend, type HttpFrontend } from '../../src/frontends/http/server.js';
import { startGrpcFrontend, type GrpcFrontend } from '../../src/frontends/grpc/server.js';
import { startOpenAiFrontend, type OpenAiFrontend } from '../../src/frontends/openai/server.js';
import { createLogger } from '../../src/observability/logger.js';
import { EXAMPLES } from '../helpers/paths.js';
import { tempRepository } from '../helpers/server.js';
import { postJson } from '../helpers/http.js';
import { connect, int32Bytes, unary, type Client } from '../helpers/grpc.js';

// Every frontend looks a request's model up once: the lookup that checks the request before it is decoded is
// the one the request runs on. Counted at the model manager's lookup, on real sockets.

let repo: { dir: string; remove(): Promise<void> };
let server: InferenceServer;
let http: HttpFrontend;
let grpcFrontend: GrpcFrontend;
let openai: OpenAiFrontend;
let client: Client;
let lookups = 0;

before(async () => {
  repo = await tempRepository([
    { from: join(EXAMPLES, 'simple') }, { from: join(EXAMPLES, 'repeat_int32') }, { from: join(EXAMPLES, 'tiny_llm') },
  ]);
  const logger = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
  server = await InferenceServer.create({ modelRepositories: [repo.dir] }, { logger });
  http = await startHttpFrontend(server, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20 }, logger);
  grpcFrontend = await startGrpcFrontend(server, { port: 0, address: '127.0.0.1' }, logger);
  openai = await startOpenAiFrontend(server, { port: 0, address: '127.0.0.1' }, logger);
  client = connect(grpcFrontend.port);
  // The model table answers every lookup (the manager's resolve and resolveRouted both end there).
  const table = (server as unknown as { manager: { table: { resolve: (...a: unknown[]) => unknown } } }).manager.table;
  const resolve = table.resolve.bind(table);
  table.resolve = (...a: unknown[]) => {
    lookups++;
    return resolve(...a);
  };
});
after(async () => {
  client.close();
  await server.close(5);
  await Promise.all([http.close(), grpcFrontend.close(), openai.close()]);
  await repo.remove();
});

/** The lookups `f` makes, after checking that it succeeded. */
async function counted(f: () => Promise<void>): Promise<number> {
  lookups = 0;
  await f();
  return lookups;
}

const IN = Array.from({ length: 16 }, (_, i) => i);
const simpleGrpc = {
  model_name: 'simple',
  inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }],
  raw_input_contents: [int32Bytes(IN), int32Bytes(IN)],
};
const repeatGrpc = {
  model_name: 'repeat_int32',
  inputs: [{ name: 'IN', datatype: 'INT32', shape: [2] }, { name: 'DELAY', datatype: 'UINT32', shape: [2] }, { name: 'WAIT', datatype: 'UINT32', shape: [1] }],
  raw_input_contents: [int32Bytes([1, 2]), Buffer.from(new Uint32Array([0, 0]).buffer), Buffer.from(new Uint32Array([0]).buffer)],
};

function streamOne(request: unknown): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    const call = client['ModelStreamInfer']!(new grpc.Metadata());
    const responses: unknown[] = [];
    call.on('data', (r: { error_message: string }) => (r.error_message === '' ? responses.push(r) : reject(new Error(r.error_message))));
    call.on('error', reject);
    call.on('status', () => resolve(responses));
    call.write(request);
    call.end();
  });
}

test('HTTP infer and generate look the model up once', async () => {
  const url = `http://127.0.0.1:${http.port}/v2/models`;
  const body = { inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: IN }, { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: IN }] };
  assert.equal(await counted(async () => assert.equal((await postJson(`${url}/simple/infer`, body)).status, 200)), 1);
  assert.equal(await counted(async () => assert.equal((await postJson(`${url}/simple/generate`, { INPUT0: IN, INPUT1: IN })).status, 200)), 1);
  assert.equal(await counted(async () => assert.equal((await postJson(`${url}/repeat_int32/generate_stream`, { IN: [1, 2], DELAY: [0, 0], WAIT: 0 })).status, 200)), 1);
});

test('gRPC ModelInfer and ModelStreamInfer look the model up once', async () => {
  assert.equal(await counted(async () => void await unary(client, 'ModelInfer', simpleGrpc)), 1);
  assert.equal(await counted(async () => assert.equal((await streamOne(simpleGrpc)).length, 1)), 1);
  assert.equal(await counted(async () => assert.equal((await streamOne(repeatGrpc)).length, 2)), 1);
});

test('gRPC ModelInfer refuses a decoupled model after one lookup, with Triton\'s words', async () => {
  let error: grpc.ServiceError | undefined;
  assert.equal(await counted(async () => {
    error = await unary(client, 'ModelInfer', repeatGrpc).then(() => undefined, (e: grpc.ServiceError) => e);
  }), 1);
  assert.equal(error?.code, grpc.status.UNIMPLEMENTED);
  assert.equal(error?.details, "ModelInfer RPC doesn't support models with decoupled transaction policy");
});

test('an OpenAI completion looks the model up once', async () => {
  const r = await counted(async () => {
    const res = await postJson(`http://127.0.0.1:${openai.port}/v1/completions`, { model: 'tiny_llm', prompt: 'Once', max_tokens: 2 });
    assert.equal(res.status, 200, res.body.toString());
  });
  assert.equal(r, 1);
});

test('a request whose model version is replaced while its body arrives runs on the new version', async () => {
  const swap = await tempRepository([{ from: join(EXAMPLES, 'simple') }]);
  const logger = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
  const s = await InferenceServer.create({ modelRepositories: [swap.dir], modelControlMode: 'explicit', loadModels: ['simple'] }, { logger });
  const f = await startHttpFrontend(s, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20 }, logger);
  try {
    const body = Buffer.from(JSON.stringify({ inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: IN }, { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: IN }] }));
    const half = body.byteLength >> 1;
    const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port: f.port, method: 'POST', path: '/v2/models/simple/infer', headers: { 'Content-Length': body.byteLength } }, (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      req.write(body.subarray(0, half));
      // The model was looked up when the headers arrived; version 2 replaces version 1 before the rest comes.
      setTimeout(() => {
        void (async () => {
          await cp(join(swap.dir, 'simple', '1'), join(swap.dir, 'simple', '2'), { recursive: true });
          await s.loadModel('simple');
          req.end(body.subarray(half));
        })().catch(reject);
      }, 50);
    });
    const r = await answer;
    assert.equal(r.status, 200, r.text);
    assert.equal(JSON.parse(r.text).model_version, '2');
  } finally {
    await s.close(5);
    await f.close();
    await swap.remove();
  }
});

test('a request that arrives while the server stops is refused as shutting down (503), not for its unloaded model', async () => {
  const logger = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
  const s = await InferenceServer.create({ modelRepositories: [repo.dir], modelControlMode: 'explicit', loadModels: ['simple'] }, { logger });
  const f = await startHttpFrontend(s, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20 }, logger);
  try {
    await s.close(5);
    const body = { inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: IN }, { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: IN }] };
    const r = await postJson(`http://127.0.0.1:${f.port}/v2/models/simple/infer`, body);
    assert.equal(r.status, 503, r.body.toString());
    assert.match(r.json().error, /shutting down/);
  } finally {
    await f.close();
  }
});
