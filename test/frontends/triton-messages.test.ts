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
import { connect, failure, unary, type Client } from '../helpers/grpc.js';
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
  await mkdir(join(repo.dir, 'optional_in', '1'), { recursive: true });
  await writeFile(join(repo.dir, 'optional_in', 'config.pbtxt'), OPTIONAL_IN);
  await writeFile(join(repo.dir, 'optional_in', '1', 'model.mjs'), OPTIONAL_IN_CODE);
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

test('the table names each refusal once', () => assertDistinctRefusals(REQUEST_MESSAGES));

async function httpMessage(row: RequestRow): Promise<string> {
  const t = row.http!;
  const model = row.model ?? 'simple';
  const body = t.body ?? JSON.stringify(t.json);
  const headers = t.body === undefined ? { 'Content-Type': 'application/json', ...t.headers } : { ...t.headers };
  const r = await request(`http://127.0.0.1:${http.port}${t.path ?? `/v2/models/${model}/infer`}`, { body, headers });
  if (r.status === 200) throw new Error(`${row.refusal}: HTTP answered 200`);
  return String(r.json().error);
}

async function grpcMessage(row: RequestRow): Promise<string> {
  const e = await failure(unary(client, 'ModelInfer', { model_name: row.model ?? 'simple', ...row.grpc }));
  return e.details;
}

for (const row of REQUEST_MESSAGES) {
  test(row.refusal, async () => {
    if (row.http) assertTritonWords({ ...row, refusal: `${row.refusal} (HTTP)` }, await httpMessage(row));
    if (row.grpc) assertTritonWords({ ...row, refusal: `${row.refusal} (gRPC)` }, await grpcMessage(row));
  });
}
