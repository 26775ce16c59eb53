import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LimitRefusals } from '../../src/observability/limit-refusals.js';
import { InferenceServer } from '../../src/server/inference-server.js';
import { startHttpFrontend } from '../../src/frontends/http/server.js';
import { createLogger, type Logger } from '../../src/observability/logger.js';
import { postJson, request } from '../helpers/http.js';
import { EXAMPLES } from '../helpers/paths.js';

/** A logger that keeps its warnings. */
function recording(): { logger: Logger; warnings: string[] } {
  const warnings: string[] = [];
  const base = createLogger({ info: false, warning: false, error: true, verbose: 0, format: 'default', file: '' });
  const logger: Logger = {
    error: (m) => base.error(m), info: () => {}, verbose: () => {}, isVerbose: () => false,
    warn: (m) => warnings.push(m), warning: (m) => warnings.push(m), child: () => logger,
    settings: () => base.settings(), update: (p) => base.update(p), close: () => base.close(),
  };
  return { logger, warnings };
}

test('LimitRefusals counts every refusal and logs each limit at most once per interval, with the count it skipped', () => {
  const { logger, warnings } = recording();
  let now = 0;
  const r = new LimitRefusals(logger, 1000, () => now);
  for (let i = 0; i < 5; i++) r.refused('a', `refusal ${i}`);
  r.refused('b', 'other');
  assert.deepEqual([...r.entries()], [['a', 5], ['b', 1]]);
  assert.equal(warnings.length, 2);
  assert.match(warnings[0]!, /^limit 'a' refused a request: refusal 0$/);
  now = 999;
  r.refused('a', 'still quiet');
  assert.equal(warnings.length, 2);
  now = 1000;
  r.refused('a', 'logged again');
  assert.equal(warnings.length, 3);
  assert.match(warnings[2]!, /logged again \(and 5 more refusal\(s\) by this limit since it was last logged\)$/);
});

test('a body over --http-max-input-size is counted in nereid_limit_refusal_count and the server keeps serving', async () => {
  const { logger, warnings } = recording();
  const server = await InferenceServer.create({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit', loadModels: ['simple'], metrics: { cpu: false } }, { logger });
  const http = await startHttpFrontend(server, { port: 0, address: '127.0.0.1', maxInputSize: 2048 }, logger);
  const url = `http://127.0.0.1:${http.port}`;
  try {
    for (let i = 0; i < 3; i++) {
      const r = await request(`${url}/v2/models/simple/infer`, { body: Buffer.alloc(4096, 0x20), headers: { 'Content-Type': 'application/json' } });
      assert.equal(r.status, 400);
      assert.match(r.json().error, /--http-max-input-size/);
    }
    const ok = await postJson(`${url}/v2/models/simple/infer`, {
      inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: new Array(16).fill(1) }, { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: new Array(16).fill(2) }],
    });
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.json().outputs[0].data, new Array(16).fill(3));
    assert.match(await server.metricsText(), /^nereid_limit_refusal_count\{limit="http-max-input-size"\} 3$/m);
    assert.equal(warnings.filter((w) => w.includes("limit 'http-max-input-size'")).length, 1);
  } finally {
    await server.close(5);
    await http.close();
  }
});
