import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseExposition } from '../../src/backends/openai/engine-metrics.js';
import { EXAMPLES } from '../helpers/paths.js';
import { LLAMA_MODEL, llamaServer } from '../helpers/llama-server.js';
import { startTestServer, tempRepository, type TestServer } from '../helpers/server.js';
import { postJson } from '../helpers/http.js';
import { until } from '../helpers/until.js';

// The gauges of the Gateway API Inference Extension's model-server protocol (waiting requests, running
// requests, KV-cache use), per model, with Triton's TensorRT-LLM names, read from the metrics endpoint while a
// real engine generates: llama.cpp in the server (the example tiny_llm), and llama-server behind the gateway
// backend. Each engine gets one generation slot and three long requests: one runs, two wait.

interface Gauges {
  waiting: number | undefined;
  running: number | undefined;
  kv: number | undefined;
}

async function gauges(s: TestServer, model: string): Promise<Gauges> {
  const samples = parseExposition(await s.server.metricsText());
  const one = (name: string, label: string, value: string): number | undefined =>
    samples.get(name)?.find((x) => x.labels['model'] === model && x.labels['version'] === '1' && x.labels[label] === value)?.value;
  return {
    waiting: one('nv_trt_llm_request_metrics', 'request_type', 'waiting'),
    running: one('nv_trt_llm_request_metrics', 'request_type', 'scheduled'),
    kv: one('nv_trt_llm_kv_cache_block_metrics', 'kv_cache_block_type', 'fraction'),
  };
}

/** Three long generations at once; resolves when all are answered. */
function threeGenerations(s: TestServer, model: string, maxTokens: number): Promise<number[]> {
  const body = { text_input: 'once upon a time', parameters: { max_tokens: maxTokens, ignore_eos: true, temperature: 0 } };
  return Promise.all([0, 1, 2].map(() => postJson(`${s.url}/v2/models/${model}/generate`, body).then((r) => r.status)));
}

test('llama.cpp: waiting, running and KV-cache gauges follow the generations and fall back to zero', { timeout: 180_000 }, async () => {
  const repo = await tempRepository([{ from: join(EXAMPLES, 'tiny_llm') }]);
  const config = join(repo.dir, 'tiny_llm', 'config.pbtxt');
  const original = await readFile(config, 'utf8');
  const text = original
    .replace(/(key: "parallel"\s*value: \{ string_value: )"4"/, '$1"1"')
    .replace(/(key: "context_size"\s*value: \{ string_value: )"1024"/, '$1"2048"');
  assert.equal(text.split('"1"').length - original.split('"1"').length, 1, 'parallel set to 1');
  assert.ok(text.includes('"2048"'), 'context_size set to 2048');
  await writeFile(config, text);
  const s = await startTestServer({ modelRepositories: [repo.dir], metrics: { cpu: false } });
  try {
    const idle = await gauges(s, 'tiny_llm');
    assert.deepEqual(idle, { waiting: 0, running: 0, kv: 0 });
    const done = threeGenerations(s, 'tiny_llm', 1800);
    let seen: Gauges | undefined;
    // The running request's tokens fill its share of the cache once its prompt is evaluated.
    await until(async () => {
      seen = await gauges(s, 'tiny_llm');
      return seen.running === 1 && seen.waiting === 2 && seen.kv! > 0;
    }, 'one generation running, two waiting, the KV cache in use');
    assert.ok(seen!.kv! <= 1, `KV-cache use ${seen!.kv}`);
    assert.deepEqual(await done, [200, 200, 200]);
    await until(async () => {
      const g = await gauges(s, 'tiny_llm');
      return g.waiting === 0 && g.running === 0 && g.kv === 0;
    }, 'the gauges back at zero');
    // A model of another backend reports no engine load.
    assert.equal(parseExposition(await s.server.metricsText()).get('nv_trt_llm_request_metrics')!.length, 2);
  } finally {
    await s.close();
    await repo.remove();
  }
});

const engine = llamaServer();

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

async function startEngine(port: number): Promise<ChildProcess> {
  const child = spawn(engine.bin, ['-m', LLAMA_MODEL, '--host', '127.0.0.1', '--port', String(port), '-t', '1', '-c', '2048', '-np', '1', '--no-webui', '--no-warmup', '--metrics'], { stdio: 'ignore' });
  for (let i = 0; i < 200; i++) {
    if (await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)) return child;
    if (child.exitCode !== null) break;
    await sleep(100);
  }
  child.kill('SIGKILL');
  throw new Error('llama-server did not become healthy');
}

test("gateway backend: the engine's waiting and running requests from its /metrics, per model; no KV gauge where the engine reports none", { skip: engine.skip, timeout: 180_000 }, async () => {
  if (engine.missing) throw new Error(engine.missing);
  const port = await freePort();
  const child = await startEngine(port);
  const repo = await tempRepository([]);
  try {
    await mkdir(join(repo.dir, 'llm', '1'), { recursive: true });
    await writeFile(join(repo.dir, 'llm', 'config.pbtxt'), `name: "llm"
backend: "openai"
max_batch_size: 0
parameters { key: "base_url" value { string_value: "http://127.0.0.1:${port}" } }
parameters { key: "model_id" value { string_value: "tiny" } }
`);
    const s = await startTestServer({ modelRepositories: [repo.dir], metrics: { cpu: false } });
    try {
      assert.deepEqual(await gauges(s, 'llm'), { waiting: 0, running: 0, kv: undefined });
      const done = threeGenerations(s, 'llm', 1800);
      await until(async () => {
        const g = await gauges(s, 'llm');
        return g.running === 1 && g.waiting === 2;
      }, "the engine's one slot generating and two requests deferred");
      // llama-server reports no KV-cache use on /metrics: the gauge is left out rather than made up.
      assert.equal((await gauges(s, 'llm')).kv, undefined);
      assert.deepEqual(await done, [200, 200, 200]);
      await until(async () => {
        const g = await gauges(s, 'llm');
        return g.waiting === 0 && g.running === 0;
      }, 'the gauges back at zero');
    } finally {
      await s.close();
    }
  } finally {
    child.kill('SIGTERM');
    await repo.remove();
  }
});
