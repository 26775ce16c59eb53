import { after, before, test } from 'node:test';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { InferenceServer } from '../../src/server/inference-server.js';
import { startHttpFrontend, type HttpFrontend } from '../../src/frontends/http/server.js';
import { startGrpcFrontend, type GrpcFrontend } from '../../src/frontends/grpc/server.js';
import { createLogger } from '../../src/observability/logger.js';
import { EXAMPLES, FIXTURES } from '../helpers/paths.js';
import { tempRepository } from '../helpers/server.js';
import { request } from '../helpers/http.js';
import { connect, unary, type Client } from '../helpers/grpc.js';
import { assertDistinctRefusals, assertTritonWords } from '../helpers/triton-messages.js';
import { REQUEST_MESSAGES, type RequestRow } from './triton-messages.js';

// Every refusal of an inference request in the table, made on a real server (HTTP and gRPC on port 0) as a
// client makes it, and answered with Triton's words on each protocol the row gives a trigger for.

// Y is optional, so a request missing X is told the range of input counts the model takes.
const OPTIONAL_IN = `name: "optional_in"
backend: "javascript"
max_batch_size: 0
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] optional: true } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
`;
const OPTIONAL_IN_CODE = `
import { InferenceResponse, Tensor, getInputTensorByName } from 'nereid/backend-utils';
export default class OptionalIn {
  execute(requests) {
    return requests.map((r) => new InferenceResponse([new Tensor('OUT', Int32Array.from(getInputTensorByName(r, 'X').asArray()), [1])]));
  }
}
`;

// Waits IN milliseconds, then OUT = IN: one instance, so requests queue behind it.
const WAIT_CODE = `
import { setTimeout as sleep } from 'node:timers/promises';
import { InferenceResponse, Tensor, getInputTensorByName } from 'nereid/backend-utils';
export default class Wait {
  async execute(requests) {
    const out = [];
    for (const r of requests) {
      const ms = getInputTensorByName(r, 'IN').asArray()[0];
      await sleep(ms);
      out.push(new InferenceResponse([new Tensor('OUT', Int32Array.of(ms), [1, 1])]));
    }
    return out;
  }
}
`;
const waitConfig = (name: string, policy: string) => `name: "${name}"
backend: "javascript"
max_batch_size: 1
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
dynamic_batching { default_queue_policy { ${policy} } }
`;

let repo: { dir: string; remove(): Promise<void> };
let server: InferenceServer;
let http: HttpFrontend;
let grpcFrontend: GrpcFrontend;
let client: Client;

before(async () => {
  repo = await tempRepository([
    { from: join(EXAMPLES, 'simple') }, { from: join(EXAMPLES, 'simple_string') }, { from: join(EXAMPLES, 'simple_sequence') },
    { from: join(EXAMPLES, 'repeat_int32') }, { from: join(FIXTURES, 'dtypes', 'identity_fp16') },
  ]);
  await model('optional_in', OPTIONAL_IN, OPTIONAL_IN_CODE);
  await model('wait_queue', waitConfig('wait_queue', 'max_queue_size: 1'), WAIT_CODE);
  await model('wait_timeout', waitConfig('wait_timeout', 'timeout_action: REJECT default_timeout_microseconds: 50000'), WAIT_CODE);
  const logger = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
  server = await InferenceServer.create({ modelRepositories: [repo.dir] }, { logger });
  http = await startHttpFrontend(server, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20 }, logger);
  grpcFrontend = await startGrpcFrontend(server, { port: 0, address: '127.0.0.1' }, logger);
  client = connect(grpcFrontend.port);
});

after(async () => {
  client.close();
  await server.close(5);
  await Promise.all([http.close(), grpcFrontend.close()]);
  await repo.remove();
});

async function model(name: string, config: string, code: string): Promise<void> {
  await mkdir(join(repo.dir, name, '1'), { recursive: true });
  await writeFile(join(repo.dir, name, 'config.pbtxt'), config);
  await writeFile(join(repo.dir, name, '1', 'model.mjs'), code);
}

test('the table names each refusal once', () => assertDistinctRefusals(REQUEST_MESSAGES));

/** The error of one request as the HTTP client reads it, undefined when it succeeded. */
async function httpError(row: RequestRow): Promise<string | undefined> {
  const t = row.http!;
  const model = row.model ?? 'simple';
  const body = t.body ?? JSON.stringify(t.json);
  const headers = t.body === undefined ? { 'Content-Type': 'application/json', ...t.headers } : { ...t.headers };
  const r = await request(`http://127.0.0.1:${http.port}${t.path ?? `/v2/models/${model}/infer`}`, { body, headers });
  return r.status === 200 ? undefined : String(r.json().error);
}

function grpcError(row: RequestRow): Promise<string | undefined> {
  return unary(client, 'ModelInfer', { model_name: row.model ?? 'simple', ...row.grpc }).then(() => undefined, (e: { details: string }) => e.details);
}

/** The first refusal among the row's copies of the request, sent at once. */
async function refusal(row: RequestRow, send: (row: RequestRow) => Promise<string | undefined>, protocol: string): Promise<string> {
  const answers = await Promise.all(Array.from({ length: row.concurrent ?? 1 }, () => send(row)));
  const message = answers.find((a) => a !== undefined);
  if (message === undefined) throw new Error(`${row.refusal}: no ${protocol} request was refused`);
  return message;
}

for (const row of REQUEST_MESSAGES) {
  test(row.refusal, async () => {
    if (row.http) assertTritonWords({ ...row, refusal: `${row.refusal} (HTTP)` }, await refusal(row, httpError, 'HTTP'));
    if (row.grpc) assertTritonWords({ ...row, refusal: `${row.refusal} (gRPC)` }, await refusal(row, grpcError, 'gRPC'));
  });
}
