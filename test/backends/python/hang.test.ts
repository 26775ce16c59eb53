import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { InferenceServer } from '../../../src/server/inference-server.js';
import { startHttpFrontend } from '../../../src/frontends/http/server.js';
import { createLogger } from '../../../src/observability/logger.js';
import { isNereidError, type InferenceResponse } from '../../../src/index.js';
import { tempRepository } from '../../helpers/server.js';
import { postJson, request } from '../../helpers/http.js';
import { PYTHON_FIXTURES, int32, int32s, output, pythonSkip } from './helpers.js';

// Python models whose execute() hangs or whose stub cannot start again, through a real server: a request
// waiting behind a hung execution is answered at its own timeout, the execute timeout parameter stops and
// restarts the stub, and readiness, the repository index and the metrics agree on what they report.

const skip = pythonSkip();

/** A copy of a fixture model with extra config lines, in a repository of its own. */
async function modelCopy(name: string, extra: string): Promise<{ dir: string; remove(): Promise<void> }> {
  const repo = await tempRepository([{ from: join(PYTHON_FIXTURES, name) }]);
  const config = join(repo.dir, name, 'config.pbtxt');
  await writeFile(config, `${await readFile(config, 'utf8')}\n${extra}\n`);
  return repo;
}

async function serve(repo: string, models: string[]) {
  const logger = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
  const server = await InferenceServer.create({ modelRepositories: [repo], modelControlMode: 'explicit', loadModels: models, metrics: { intervalMs: 60_000, cpu: false } }, { logger });
  const http = await startHttpFrontend(server, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20 }, logger);
  return {
    server,
    url: `http://127.0.0.1:${http.port}`,
    close: async () => {
      // A hung execution is still running: the exit timeout ends it.
      await server.close(1);
      await http.close();
    },
  };
}

/** The promise's outcome, or 'pending' when it has none within `ms` (a generous bound: the point is "at all"). */
function within<T>(p: Promise<T>, ms: number): Promise<PromiseSettledResult<T> | 'pending'> {
  return Promise.race([
    p.then((value) => ({ status: 'fulfilled', value }) as const, (reason: unknown) => ({ status: 'rejected', reason }) as const),
    new Promise<'pending'>((resolve) => setTimeout(() => resolve('pending'), ms).unref()),
  ]);
}

const hangRequest = { model: 'hang', inputs: [int32('IN', [-1])] };

test('a request waiting behind a hung execution is answered when its own timeout passes', { skip }, async () => {
  const repo = await tempRepository([{ from: join(PYTHON_FIXTURES, 'hang') }]);
  const s = await serve(repo.dir, ['hang']);
  try {
    const hung = s.server.infer(hangRequest);
    hung.catch(() => undefined);
    // Two requests with a timeout (0.3 s and 0.5 s) behind the hung one, and one without.
    const timed = [300_000, 500_000].map((timeoutUs) => s.server.infer({ model: 'hang', inputs: [int32('IN', [1])], timeoutUs }));
    const untimed = s.server.infer({ model: 'hang', inputs: [int32('IN', [2])] });
    untimed.catch(() => undefined);
    for (const t of timed) {
      const r = await within(t, 20_000);
      assert.notEqual(r, 'pending', 'the request was answered');
      assert.equal((r as PromiseSettledResult<InferenceResponse>).status, 'rejected');
      const e = (r as PromiseRejectedResult).reason;
      assert.ok(isNereidError(e) && e.code === 'UNAVAILABLE', String(e));
      assert.match(e.message, /Request timeout expired/);
    }
    const stats = s.server.statistics('hang').model_stats[0] as any;
    assert.equal(Number(stats.inference_stats.fail.count), 2, 'two failed at their timeout');
    assert.equal(Number(stats.execution_count), 0, 'none of them executed');
  } finally {
    await s.close();
    await repo.remove();
  }
});

test("with dynamic batching, a request waiting behind a hung execution is answered at the model's queue timeout", { skip }, async () => {
  const repo = await modelCopy('hang', 'dynamic_batching { default_queue_policy { default_timeout_microseconds: 300000 } }');
  const s = await serve(repo.dir, ['hang']);
  try {
    s.server.infer(hangRequest).catch(() => undefined);
    const r = await within(s.server.infer({ model: 'hang', inputs: [int32('IN', [1])] }), 20_000);
    assert.notEqual(r, 'pending', 'the request was answered');
    assert.match(String((r as PromiseRejectedResult).reason), /Request timeout expired/);
  } finally {
    await s.close();
    await repo.remove();
  }
});

test('nereid_execute_timeout_ms fails a hung execution, restarts the stub and the model serves again', { skip }, async () => {
  const repo = await modelCopy('hang', 'parameters { key: "nereid_execute_timeout_ms" value { string_value: "1000" } }');
  const s = await serve(repo.dir, ['hang']);
  try {
    const first = int32s(output((await s.server.infer({ model: 'hang', inputs: [int32('IN', [1])] })).outputs, 'PID'))[0];
    // One hangs; one waits behind it (given to the stub) and runs on the next stub.
    const hung = within(s.server.infer(hangRequest), 20_000);
    const behind = within(s.server.infer({ model: 'hang', inputs: [int32('IN', [4])] }), 20_000);
    const h = await hung;
    assert.notEqual(h, 'pending');
    assert.equal((h as PromiseSettledResult<unknown>).status, 'rejected');
    assert.match(String((h as PromiseRejectedResult).reason), /did not finish within 1000 ms/);
    const b = await behind;
    assert.equal((b as PromiseSettledResult<InferenceResponse>).status, 'fulfilled', String((b as PromiseRejectedResult).reason));
    const after = (b as PromiseFulfilledResult<InferenceResponse>).value;
    assert.deepEqual(int32s(output(after.outputs, 'OUT')), [8]);
    assert.notEqual(int32s(output(after.outputs, 'PID'))[0], first, 'answered by a new stub');
    assert.ok(s.server.isModelReady('hang'));
  } finally {
    await s.close();
    await repo.remove();
  }
});

test('an invalid nereid_execute_timeout_ms fails the load with the parameter named', { skip }, async () => {
  const repo = await modelCopy('hang', 'parameters { key: "nereid_execute_timeout_ms" value { string_value: "soon" } }');
  const logger = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
  const server = await InferenceServer.create({ modelRepositories: [repo.dir], modelControlMode: 'explicit' }, { logger });
  try {
    await assert.rejects(server.loadModel('hang'), /nereid_execute_timeout_ms.*'soon'/);
  } finally {
    await server.close(1);
    await repo.remove();
  }
});

test('while its instance hangs past the execute timeout, readiness, the index and the metrics say so', { skip }, async () => {
  // The stub that replaces the killed one takes 3 s to initialize: the instance stays hung that long.
  const repo = await modelCopy('hang', [
    'parameters { key: "nereid_execute_timeout_ms" value { string_value: "500" } }',
    'parameters { key: "RESTART_DELAY_S" value { string_value: "3" } }',
  ].join('\n'));
  const s = await serve(repo.dir, ['hang']);
  try {
    const hungMetric = async () => /^nereid_model_hung_instance_count\{model="hang",version="1"\} (\d+)$/m.exec(await s.server.metricsText())?.[1];
    assert.equal(await hungMetric(), '0');
    assert.equal((await request(`${s.url}/v2/models/hang/ready`)).status, 200);
    await assert.rejects(s.server.infer(hangRequest), /did not finish within 500 ms/);
    assert.equal((await request(`${s.url}/v2/models/hang/ready`)).status, 400, 'not ready while hung');
    const index = (await postJson(`${s.url}/v2/repository/index`, {})).json();
    assert.equal(index[0].state, 'UNAVAILABLE', JSON.stringify(index));
    assert.match(index[0].reason, /hang_0.*did not finish within 500 ms/);
    assert.equal((await postJson(`${s.url}/v2/repository/index`, { ready: true })).json().length, 0);
    assert.equal(await hungMetric(), '1');
    // Once the new stub is up the model is ready again, everywhere at once.
    assert.deepEqual(int32s(output((await s.server.infer({ model: 'hang', inputs: [int32('IN', [3])] })).outputs, 'OUT')), [6]);
    assert.equal((await request(`${s.url}/v2/models/hang/ready`)).status, 200);
    assert.equal((await postJson(`${s.url}/v2/repository/index`, {})).json()[0].state, 'READY');
    assert.equal(await hungMetric(), '0');
  } finally {
    await s.close();
    await repo.remove();
  }
});

test('a model whose stub cannot start again: the index and the ready endpoint agree it is not ready', { skip }, async () => {
  const repo = await tempRepository([{ from: join(PYTHON_FIXTURES, 'no_restart') }]);
  const s = await serve(repo.dir, ['no_restart']);
  try {
    assert.equal((await request(`${s.url}/v2/models/no_restart/ready`)).status, 200);
    assert.equal((await postJson(`${s.url}/v2/repository/index`, {})).json()[0].state, 'READY');
    await assert.rejects(s.server.infer({ model: 'no_restart', inputs: [int32('IN', [-3])] }), /exit code 3/);
    // The restart fails (initialize raises); wait until the instance has given up.
    let reason = '';
    for (let i = 0; i < 200 && !/could not be started again/.test(reason); i++) {
      await new Promise((r) => setTimeout(r, 50));
      reason = (await postJson(`${s.url}/v2/repository/index`, {})).json()[0].reason ?? '';
    }
    const index = (await postJson(`${s.url}/v2/repository/index`, {})).json();
    assert.equal((await request(`${s.url}/v2/models/no_restart/ready`)).status, 400);
    assert.equal(s.server.isModelReady('no_restart'), false);
    assert.equal(index[0].state, 'UNAVAILABLE', JSON.stringify(index));
    assert.match(index[0].reason, /no_restart_0.*could not be started again.*starts only once/);
    assert.equal(await (async () => /^nereid_model_hung_instance_count\{model="no_restart",version="1"\} (\d+)$/m.exec(await s.server.metricsText())?.[1])(), '0', 'not hung: down');
  } finally {
    await s.close();
    await repo.remove();
  }
});
