import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { EXAMPLES } from '../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../helpers/server.js';
import { postJson, request } from '../helpers/http.js';
import { connect, failure, unary, type Client } from '../helpers/grpc.js';
import { startGrpcFrontend, type GrpcFrontend } from '../../src/frontends/grpc/server.js';
import { createLogger } from '../../src/observability/logger.js';

// Repository control outside explicit mode answers as Triton's model repository manager does: with model control
// off (modes none and poll alike) load and unload are UNAVAILABLE, HTTP 503, with Triton's words.

const TRITON_WORDS = 'explicit model load / unload is not allowed if polling is enabled';

let repo: { dir: string; remove(): Promise<void> };
const servers: { mode: 'none' | 'poll'; http: TestServer; grpc: GrpcFrontend; client: Client }[] = [];

before(async () => {
  repo = await tempRepository([{ from: join(EXAMPLES, 'simple') }]);
  const logger = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
  for (const mode of ['none', 'poll'] as const) {
    const http = await startTestServer({ modelRepositories: [repo.dir], modelControlMode: mode, repositoryPollSecs: 3600 });
    const frontend = await startGrpcFrontend(http.server, { port: 0, address: '127.0.0.1' }, logger);
    servers.push({ mode, http, grpc: frontend, client: connect(frontend.port) });
  }
});

after(async () => {
  for (const s of servers) {
    s.client.close();
    await s.http.close();
    await s.grpc.close();
  }
  await repo.remove();
});

const CASES = [
  { op: 'load', path: 'simple/load', body: {}, rpc: 'RepositoryModelLoad' },
  { op: 'load with a config', path: 'simple/load', body: { parameters: { config: '{"max_batch_size": 4}' } }, rpc: 'RepositoryModelLoad' },
  { op: 'load of a model the repository lacks', path: 'nothere/load', body: {}, rpc: 'RepositoryModelLoad' },
  { op: 'unload', path: 'simple/unload', body: {}, rpc: 'RepositoryModelUnload' },
];

test('load and unload in modes none and poll: HTTP 503 and gRPC UNAVAILABLE with Triton\'s words; the model keeps serving', async () => {
  for (const s of servers) {
    for (const c of CASES) {
      const r = await postJson(`${s.http.url}/v2/repository/models/${c.path}`, c.body);
      assert.equal(r.status, 503, `${s.mode} HTTP ${c.op}: ${r.body.toString()}`);
      assert.equal(r.json().error, TRITON_WORDS, `${s.mode} HTTP ${c.op}`);
      const model_name = c.path.split('/')[0];
      const parameters = 'parameters' in c.body ? { config: { string_param: (c.body as any).parameters.config } } : {};
      const e = await failure(unary(s.client, c.rpc, { model_name, parameters }));
      assert.equal(e.code, grpc.status.UNAVAILABLE, `${s.mode} gRPC ${c.op}: ${e.details}`);
      assert.equal(e.details, TRITON_WORDS, `${s.mode} gRPC ${c.op}`);
    }
    assert.equal((await request(`${s.http.url}/v2/models/simple/ready`)).status, 200, s.mode);
  }
});
