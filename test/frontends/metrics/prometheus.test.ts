import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { InferenceServer } from '../../../src/server/inference-server.js';
import { startHttpFrontend } from '../../../src/frontends/http/server.js';
import { startMetricsFrontend } from '../../../src/frontends/metrics/server.js';
import { createLogger } from '../../../src/observability/logger.js';
import { EXAMPLES } from '../../helpers/paths.js';
import { postJson } from '../../helpers/http.js';

// A real Prometheus (Debian's `prometheus`) scrapes Nereid's metrics port every second; the values are read
// back through Prometheus's HTTP query API. Outside CI the test is skipped when prometheus is not installed.

const PROMETHEUS = spawnSync('sh', ['-c', 'command -v prometheus'], { encoding: 'utf8' }).stdout.trim();
const missing = PROMETHEUS === '' ? 'prometheus is not installed (apt-get install prometheus); skipping the real-Prometheus scrape test' : false;
if (missing && process.env['CI'] === 'true') throw new Error('CI needs prometheus installed (see .ci/run)');
if (missing) process.stderr.write(`${missing}\n`);

test('a real Prometheus scrapes Nereid and serves its series through its query API', { skip: missing }, async () => {
  const quiet = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
  const server = await InferenceServer.create({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit', loadModels: ['simple'], metrics: {} }, { logger: quiet });
  const http = await startHttpFrontend(server, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20 }, quiet);
  const metrics = await startMetricsFrontend(server, { port: 0, address: '127.0.0.1' }, quiet);
  const dir = await mkdtemp(join(tmpdir(), 'nereid-prometheus-'));
  const promPort = await freePort();
  await writeFile(join(dir, 'prometheus.yml'), [
    'global:',
    '  scrape_interval: 1s',
    'scrape_configs:',
    '  - job_name: nereid',
    '    static_configs:',
    `      - targets: ['127.0.0.1:${metrics.port}']`,
    '',
  ].join('\n'));
  const prom = spawn(PROMETHEUS, [
    `--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${promPort}`,
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  prom.stderr.on('data', (b: Buffer) => (log += b.toString()));
  const exited = new Promise<void>((resolve) => prom.once('exit', () => resolve()));
  try {
    const inputs = ['INPUT0', 'INPUT1'].map((name) => ({ name, shape: [1, 16], datatype: 'INT32', data: new Array(16).fill(2) }));
    for (let i = 0; i < 3; i++) assert.equal((await postJson(`http://127.0.0.1:${http.port}/v2/models/simple/infer`, { inputs })).status, 200);
    const query = async (q: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]> => {
      const r = await fetch(`http://127.0.0.1:${promPort}/api/v1/query?query=${encodeURIComponent(q)}`).catch(() => undefined);
      if (!r || r.status !== 200) return [];
      const body = (await r.json()) as { status: string; data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
      return body.status === 'success' ? body.data.result : [];
    };
    let found: Awaited<ReturnType<typeof query>> = [];
    for (let i = 0; i < 150 && found.length === 0; i++) {
      found = await query('nv_inference_request_success{model="simple"} == 3');
      if (found.length === 0) await sleep(200);
    }
    assert.equal(found.length, 1, `Prometheus never saw the series; its log:\n${log}`);
    assert.deepEqual({ ...found[0]!.metric }, { __name__: 'nv_inference_request_success', instance: `127.0.0.1:${metrics.port}`, job: 'nereid', model: 'simple', version: '1' });
    assert.equal((await query('up{job="nereid"}'))[0]?.value[1], '1');
    const failures = await query('nv_inference_request_failure{model="simple"}');
    assert.deepEqual(failures.map((f) => f.metric['reason']).sort(), ['BACKEND', 'CANCELED', 'OTHER', 'REJECTED']);
    const exec = await query('nv_inference_exec_count{model="simple",version="1"}');
    assert.equal(exec[0]?.value[1], '3');
  } finally {
    prom.kill('SIGTERM');
    await exited;
    await server.close(5);
    await http.close();
    await metrics.close();
    await rm(dir, { recursive: true, force: true });
  }
});

/** A port free right now on the loopback interface (Prometheus takes no port 0). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}
