import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InferenceServer } from '../../src/server/inference-server.js';
import { startHttpFrontend } from '../../src/frontends/http/server.js';
import { createLogger } from '../../src/observability/logger.js';
import { EXAMPLES } from '../helpers/paths.js';
import { postJson } from '../helpers/http.js';

// Request logs carry the request id, appear only once /v2/logging turns verbose logging on at run time, and
// go to --log-file.

test('verbose request logs: off by default, on through /v2/logging, tagged with the request id, in the log file', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'nereid-log-'));
  const file = join(dir, 'server.log');
  const logger = createLogger({ info: true, warning: true, error: true, verbose: 0, format: 'default', file });
  const server = await InferenceServer.create({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit', loadModels: ['simple'] }, { logger });
  const http = await startHttpFrontend(server, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20 }, logger);
  const url = `http://127.0.0.1:${http.port}`;
  const body = (id: string, n = 16) => ({
    id,
    inputs: [{ name: 'INPUT0', shape: [1, n], datatype: 'INT32', data: new Array(n).fill(1) }, { name: 'INPUT1', shape: [1, n], datatype: 'INT32', data: new Array(n).fill(2) }],
  });
  try {
    assert.equal((await postJson(`${url}/v2/models/simple/infer`, body('quiet-1'))).status, 200);
    const set = await postJson(`${url}/v2/logging`, { log_verbose_level: 1 });
    assert.equal(set.json().log_verbose_level, 1);
    assert.equal((await postJson(`${url}/v2/models/simple/infer`, body('loud-2'))).status, 200);
    assert.equal((await postJson(`${url}/v2/models/simple/infer`, body('bad-3', 3))).status, 400);
  } finally {
    await server.close(5);
    await http.close();
    await logger.close();
  }
  const log = await readFile(file, 'utf8');
  await rm(dir, { recursive: true, force: true });
  assert.doesNotMatch(log, /quiet-1/);
  assert.match(log, /^V.*\[request id: loud-2\] infer model 'simple': 2 input\(s\)"$/m);
  assert.match(log, /^V.*\[request id: loud-2\] model 'simple' ended after [0-9.]+ ms"$/m);
  assert.match(log, /^V.*\[request id: bad-3\] model 'simple' failed after [0-9.]+ ms: .*INPUT0/m);
});
