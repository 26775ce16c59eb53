import assert from 'node:assert/strict';
import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EXAMPLES, FIXTURES } from './paths.js';
import { postJson, request, type Reply } from './http.js';
import { spawnServer, tempRepository, type ServerProcess } from './server.js';
import { until } from './until.js';

// Repositories of memory/ballast copies (a model of known size and duration) and a `nereid serve` on them, for
// the memory-budget and load-on-demand tests.

export const MIB = 1024 * 1024;
const BALLAST = join(FIXTURES, 'memory', 'ballast');

export interface Model {
  name: string;
  mb: number;
  params?: Record<string, string>;
}

/** A repository of ballast copies (and, when asked, examples' sequence_accumulator with a long idle time). */
export async function repository(models: Model[], extra: { sequence?: boolean; ensemble?: string } = {}): Promise<{ dir: string; remove(): Promise<void> }> {
  const repo = await tempRepository([]);
  for (const m of models) {
    await cp(BALLAST, join(repo.dir, m.name), { recursive: true });
    const params = Object.entries({ nereid_test_ballast_mb: String(m.mb), ...m.params }).map(([k, v]) => `parameters { key: "${k}" value { string_value: "${v}" } }`);
    const config = (await readFile(join(BALLAST, 'config.pbtxt'), 'utf8')).replace('name: "ballast"', `name: "${m.name}"`).replace(/^parameters .*$/m, params.join('\n'));
    await writeFile(join(repo.dir, m.name, 'config.pbtxt'), config);
  }
  if (extra.sequence) {
    await cp(join(EXAMPLES, 'sequence_accumulator'), join(repo.dir, 'sequence_accumulator'), { recursive: true });
    const p = join(repo.dir, 'sequence_accumulator', 'config.pbtxt');
    await writeFile(p, (await readFile(p, 'utf8')).replace('max_sequence_idle_microseconds: 5000000', 'max_sequence_idle_microseconds: 120000000'));
  }
  if (extra.ensemble) {
    await cp(join(repo.dir, extra.ensemble), join(repo.dir, 'pipe'), { recursive: true });
    await writeFile(join(repo.dir, 'pipe', 'config.pbtxt'), `name: "pipe"
platform: "ensemble"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
ensemble_scheduling { step [ { model_name: "${extra.ensemble}" model_version: -1 input_map { key: "IN" value: "IN" } output_map { key: "OUT" value: "OUT" } } ] }
`);
  }
  return repo;
}

/** A server and its metrics text. */
export interface Served {
  readonly p: ServerProcess;
  metrics(): Promise<string>;
}

export async function serve(dir: string, args: string[]): Promise<Served> {
  const p = await spawnServer(['--model-repository', dir, '--model-load-on-demand=true', '--allow-metrics=true', '--metrics-port=0', ...args]);
  await until(() => /Started Metrics Service at [^:]+:(\d+)/.test(p.output()), 'the metrics port');
  const url = `http://127.0.0.1:${/Started Metrics Service at [^:]+:(\d+)/.exec(p.output())![1]}/metrics`;
  await until(async () => (await request(`${p.url}/v2/health/ready`)).status === 200, 'readiness');
  return { p, metrics: async () => (await request(url)).body.toString() };
}

export async function stop(p: ServerProcess | undefined): Promise<void> {
  if (!p) return;
  p.child.kill('SIGTERM');
  assert.equal(await p.exited, 0, p.output());
}

export const infer = (url: string, model: string, ms = 0): Promise<Reply> => postJson(`${url}/v2/models/${model}/infer`, { inputs: [{ name: 'IN', shape: [1], datatype: 'INT32', data: [ms] }] });

/** The loaded versions as the index shows them: name → nereid_memory_bytes. */
export async function loaded(url: string): Promise<Map<string, number>> {
  const idx = (await postJson(`${url}/v2/repository/index`, { ready: true })).json() as { name: string; nereid_memory_bytes: number }[];
  return new Map(idx.map((e) => [e.name, e.nereid_memory_bytes]));
}

export const sample = (text: string, family: string, model: string): number => {
  const m = new RegExp(`^${family}\\{model="${model}"[^}]*\\} (\\d+)`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
};

