import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnServer } from '../../helpers/server.js';
import { postJson } from '../../helpers/http.js';
import { EXAMPLES } from '../../helpers/paths.js';
import { InferenceServer } from '../../../src/server/inference-server.js';
import { NOOP_LOGGER } from '../../../src/observability/logger.js';

const SIMPLE = {
  inputs: [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
  ],
};

test('nereid serve with the deprecated --trace-* flags writes Triton’s trace file when it stops', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'nereid-serve-trace-'));
  try {
    const file = join(dir, 'trace.json');
    const p = await spawnServer([`--model-repository=${EXAMPLES}`, '--model-control-mode=explicit', '--load-model=simple',
      `--trace-file=${file}`, '--trace-level=TIMESTAMPS', '--trace-rate=1']);
    assert.match(p.output(), /'--trace-file' has been deprecated/);
    for (let i = 0; i < 2; i++) assert.equal((await postJson(`${p.url}/v2/models/simple/infer`, { ...SIMPLE, id: `s${i}` })).status, 200);
    p.child.kill('SIGTERM');
    await p.exited;
    const records = JSON.parse(await readFile(file, 'utf8')) as { model_name?: string; request_id?: string }[];
    assert.deepEqual(records.filter((r) => r.model_name).map((r) => r.request_id), ['s0', 's1']);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('OpenTelemetry’s packages are loaded only for OpenTelemetry mode', async () => {
  const cache = createRequire(import.meta.url).cache;
  const loaded = () => Object.keys(cache).some((k) => k.includes(`${join('node_modules', '@opentelemetry')}`));
  const triton = await InferenceServer.create({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit', trace: ['level=TIMESTAMPS', 'triton,file=/dev/null'] }, { logger: NOOP_LOGGER });
  await triton.close();
  assert.equal(loaded(), false);
  const otel = await InferenceServer.create({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit', trace: ['mode=opentelemetry', 'opentelemetry,url=http://127.0.0.1:9/v1/traces'] }, { logger: NOOP_LOGGER });
  await otel.close();
  assert.equal(loaded(), true);
});
