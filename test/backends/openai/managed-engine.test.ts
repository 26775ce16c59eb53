import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ROOT } from '../../helpers/paths.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { LLAMA_MODEL, llamaServer } from '../../helpers/llama-server.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { InferenceServer } from '../../../src/server/inference-server.js';
import { createLogger } from '../../../src/observability/logger.js';
import { postJson, request } from '../../helpers/http.js';
import { until } from '../../helpers/until.js';

// The gateway backend running its engine itself: a real llama-server started, watched, restarted and stopped
// by Nereid for a model whose config names the llama-server preset. What is checked is what the processes do
// (found in /proc by their process group), not what Nereid says of them.

const { bin, skip, missing } = llamaServer();
const ENGINE_ARGS = '-t 1 -c 1024 -np 2 --no-webui --no-warmup';

let repo: string;
let s: TestServer;

async function managedModel(name: string, params: Record<string, string>, file = true): Promise<void> {
  await mkdir(join(repo, name, '1'), { recursive: true });
  if (file) await copyFile(LLAMA_MODEL, join(repo, name, '1', 'model.gguf'));
  const lines = Object.entries(params).map(([k, v]) => `parameters { key: "${k}" value { string_value: ${JSON.stringify(v)} } }`);
  await writeFile(join(repo, name, 'config.pbtxt'), `name: "${name}"
backend: "openai"
max_batch_size: 0
model_transaction_policy { decoupled: true }
instance_group [ { count: 4 kind: KIND_CPU } ]
${lines.join('\n')}
`);
}

interface Proc {
  readonly pid: number;
  readonly pgid: number;
  readonly cmdline: string;
}

/** Every process whose command line mentions `needle`, with its process group. */
async function processes(needle: string): Promise<Proc[]> {
  const out: Proc[] = [];
  for (const d of await readdir('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmdline = (await readFile(`/proc/${d}/cmdline`, 'utf8')).split('\0').join(' ');
      if (!cmdline.includes(needle)) continue;
      const stat = await readFile(`/proc/${d}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z') continue; // a zombie is gone, its parent only has not read its status yet
      out.push({ pid: Number(d), pgid: Number(fields[2]), cmdline });
    } catch {
      // the process ended while we looked
    }
  }
  return out;
}

/** Processes in a process group (any command). */
async function inGroup(pgid: number): Promise<number[]> {
  const out: number[] = [];
  for (const d of await readdir('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = await readFile(`/proc/${d}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] !== 'Z' && Number(fields[2]) === pgid) out.push(Number(d));
    } catch {
      // gone
    }
  }
  return out;
}

/** The llama-server of the model in folder `name` (its model file is the folder's). */
async function engineOf(name: string): Promise<Proc & { port: number }> {
  const found = (await processes(join(repo, name, '1', 'model.gguf'))).filter((p) => p.cmdline.startsWith(bin));
  assert.equal(found.length, 1, `one engine for ${name}: ${JSON.stringify(found)}`);
  const port = Number(/--port (\d+)/.exec(found[0]!.cmdline)![1]);
  return { ...found[0]!, port };
}

const events = (text: string): any[] => text.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => JSON.parse(e.slice(6)));
const ready = async (name: string): Promise<boolean> => (await request(`${s.url}/v2/models/${name}/ready`)).status === 200;

before(async () => {
  if (skip) return;
  if (missing) throw new Error(missing);
  repo = await mkdtemp(join(tmpdir(), 'nereid-managed-'));
  const preset = { engine: 'llama-server', engine_binary: bin, engine_args: ENGINE_ARGS, model_id: 'tiny' };
  await managedModel('llm', preset);
  await managedModel('llm_unload', preset);
  // The engine answers /health only once it listens: two seconds after it is started here.
  await managedModel('llm_slow', { engine_command: `sh -c "sleep 2 && exec ${bin} --model {model_file} --port {port} ${ENGINE_ARGS}"`, model_id: 'tiny' });
  // A shell that ignores SIGTERM and keeps starting llama-server again: only SIGKILL ends it.
  await managedModel('llm_stubborn', { engine_command: `sh -c "trap '' TERM; while true; do ${bin} --model {model_file} --port {port} ${ENGINE_ARGS}; sleep 0.2; done"` });
  // An engine that leaves a process behind in its group when it ends, one that SIGTERM does not end.
  await managedModel('llm_orphan', { engine_command: `sh -c "(trap '' TERM; exec sleep 1000) & exec ${bin} --model {model_file} --port {port} ${ENGINE_ARGS}"` });
  // Starts llama-server unless the model folder holds a file named 'broken'.
  await managedModel('llm_flaky', { engine_command: `sh -c "test -e {model_dir}/broken && exit 3; exec ${bin} --model {model_file} --port {port} ${ENGINE_ARGS}"` });
  await managedModel('llm_bad_flag', { engine: 'llama-server', engine_binary: bin, engine_args: '--no-such-flag' });
  await mkdir(join(repo, 'llm_sent', '1'), { recursive: true });
  await managedModel('llm_no_binary', { engine: 'llama-server', engine_binary: '/nonexistent/llama-server' });
  s = await startTestServer({ modelRepositories: [repo], modelControlMode: 'explicit', loadModels: ['llm'] });
});

after(async () => {
  if (skip) return;
  await s?.close();
  await rm(repo, { recursive: true, force: true });
});

test('the model is ready once its engine answers /health, and streams through Nereid', { skip }, async () => {
  assert.equal(await ready('llm'), true);
  const e = await engineOf('llm');
  assert.equal((await fetch(`http://127.0.0.1:${e.port}/health`)).status, 200);
  assert.equal(e.pgid, e.pid, 'the engine leads a process group of its own');
  assert.doesNotMatch(e.cmdline, /--host 0\.0\.0\.0/);
  const r = await postJson(`${s.url}/v2/models/llm/generate_stream`, { text_input: 'Once upon', max_tokens: 12, temperature: 0 });
  assert.equal(r.status, 200);
  const ev = events(r.body.toString());
  assert.ok(ev.length >= 3, `only ${ev.length} events`);
  assert.equal(ev.at(-1).completion_tokens, 12);
});

test('a slow engine: the load waits for its /health, and the model is ready only then', { skip }, async () => {
  const t0 = Date.now();
  const loading = s.server.loadModel('llm_slow', {});
  let sawStarting = false;
  let settled = false;
  void loading.finally(() => (settled = true)).catch(() => undefined);
  while (!settled) {
    const shell = await processes(`sleep 2 && exec ${bin}`);
    if (shell.length > 0 && !settled) {
      // The engine's process runs but does not listen yet: the model must not be ready.
      assert.equal(await ready('llm_slow'), false);
      sawStarting ||= !settled;
    }
    await sleep(100);
  }
  await loading;
  assert.ok(sawStarting, 'the engine was seen starting while the model was not ready');
  assert.ok(Date.now() - t0 >= 1900, `loaded after ${Date.now() - t0} ms, before the engine could answer`);
  assert.equal(await ready('llm_slow'), true);
  const e = await engineOf('llm_slow');
  assert.equal((await fetch(`http://127.0.0.1:${e.port}/health`)).status, 200);
  await s.server.unloadModel('llm_slow');
});

test('kill -9 of the engine mid-stream: the stream fails UNAVAILABLE, the model is unready, then a new engine serves', { skip }, async () => {
  const before = await engineOf('llm');
  const u = `${s.url}/v2/models/llm/generate_stream`;
  const streaming = fetch(u, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text_input: 'A long story', max_tokens: 100000, ignore_eos: true }) });
  const res = await streaming;
  assert.equal(res.status, 200);
  const reader = res.body!.getReader();
  const first = await reader.read();
  assert.ok(!first.done && first.value.byteLength > 0, 'tokens stream before the kill');
  process.kill(before.pid, 'SIGKILL');
  let rest = '';
  const dec = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    rest += dec.decode(value, { stream: true });
  }
  const last = events(rest).at(-1);
  assert.match(last.error, /Failed to process the request\(s\) for model instance '.*', message: Engine process .* is not healthy/, rest.slice(-500));
  // Not ready until the new engine answers its health check; a request sent meanwhile waits for it.
  await until(async () => !(await ready('llm')), 'the model to turn unready');
  const waiting = postJson(`${s.url}/v2/models/llm/generate_stream`, { text_input: 'x', max_tokens: 3 });
  await until(() => ready('llm'), 'the model to be ready again', 60_000);
  const after = await engineOf('llm');
  assert.notEqual(after.pid, before.pid);
  assert.equal((await fetch(`http://127.0.0.1:${after.port}/health`)).status, 200);
  const queued = await waiting;
  assert.equal(queued.status, 200, queued.body.toString());
  assert.equal(events(queued.body.toString()).at(-1).completion_tokens, 3, queued.body.toString());
  const again = await postJson(`${s.url}/v2/models/llm/generate_stream`, { text_input: 'Again', max_tokens: 5 });
  assert.equal(events(again.body.toString()).at(-1).completion_tokens, 5);
  assert.deepEqual(await inGroup(before.pgid), [], 'nothing left of the killed engine\'s group');
});

test('an engine that keeps dying is started again after 1, 2, then 4 s', { skip }, async () => {
  await s.server.loadModel('llm_unload', {});
  try {
    const gaps: number[] = [];
    for (let i = 0; i < 3; i++) {
      const e = await engineOf('llm_unload');
      const t0 = Date.now();
      process.kill(e.pid, 'SIGKILL');
      await until(async () => !(await ready('llm_unload')), 'the model to turn unready');
      await until(() => ready('llm_unload'), 'the model to be ready again', 60_000);
      gaps.push(Date.now() - t0);
      assert.notEqual((await engineOf('llm_unload')).pid, e.pid);
    }
    // Lower bounds only: a timer never fires early, however busy the machine; it may fire late.
    assert.ok(gaps[0]! >= 950 && gaps[1]! >= 1950 && gaps[2]! >= 3950, `restarted after ${gaps.join(', ')} ms`);
  } finally {
    await s.server.unloadModel('llm_unload');
  }
});

test('an engine that hangs turns the model unready; killed then, it is started again, past starts that fail', { skip }, async () => {
  await s.server.loadModel('llm_flaky', {});
  try {
    const e = await engineOf('llm_flaky');
    // Stopped, it neither answers nor exits: the periodic health check (every 5 s) turns the model unready.
    process.kill(e.pid, 'SIGSTOP');
    await until(async () => !(await ready('llm_flaky')), 'the hung engine to make the model unready', 60_000);
    // The next starts fail (exit 3) until the file goes: the model stays unready, and the starts go on.
    await writeFile(join(repo, 'llm_flaky', 'broken'), '');
    process.kill(e.pid, 'SIGKILL');
    await sleep(4000);
    assert.equal(await ready('llm_flaky'), false);
    await rm(join(repo, 'llm_flaky', 'broken'));
    await until(() => ready('llm_flaky'), 'the model to be ready again', 60_000);
    const now = await engineOf('llm_flaky');
    assert.notEqual(now.pid, e.pid);
    const r = await postJson(`${s.url}/v2/models/llm_flaky/generate_stream`, { text_input: 'x', max_tokens: 2 });
    assert.equal(events(r.body.toString()).at(-1).completion_tokens, 2);
  } finally {
    await s.server.unloadModel('llm_flaky');
  }
});

test('unload stops the engine and its whole process group', { skip }, async () => {
  await s.server.loadModel('llm_unload', {});
  const e = await engineOf('llm_unload');
  assert.deepEqual(await inGroup(e.pgid), [e.pid]);
  await s.server.unloadModel('llm_unload');
  await until(async () => (await inGroup(e.pgid)).length === 0, 'the engine\'s group to be gone', 15_000);
  assert.deepEqual(await processes(join(repo, 'llm_unload', '1')), []);
});

test('an engine that leaves a process in its group: the group goes with the engine, without waiting for the grace', { skip }, async () => {
  await s.server.loadModel('llm_orphan', {});
  const e = await engineOf('llm_orphan');
  assert.equal((await inGroup(e.pgid)).length, 2);
  const t0 = Date.now();
  await s.server.unloadModel('llm_orphan');
  await until(async () => (await inGroup(e.pgid)).length === 0, 'the engine\'s group to be gone', 15_000);
  // SIGTERM ends llama-server, not its sleep; the 10 s grace before SIGKILL is not waited for.
  assert.ok(Date.now() - t0 < 9500, `took ${Date.now() - t0} ms: the grace was waited for`);
});

test('a reload with another engine command starts the new engine and stops the old one', { skip }, async () => {
  await s.server.loadModel('llm_unload', {});
  const old = await engineOf('llm_unload');
  await managedModel('llm_unload', { engine: 'llama-server', engine_binary: bin, engine_args: ENGINE_ARGS.replace('-np 2', '-np 3'), model_id: 'tiny' }, false);
  await s.server.loadModel('llm_unload', {});
  await until(async () => (await inGroup(old.pgid)).length === 0, 'the old engine\'s group to be gone', 15_000);
  const now = await engineOf('llm_unload');
  assert.notEqual(now.pid, old.pid);
  assert.match(now.cmdline, /-np 3/);
  const r = await postJson(`${s.url}/v2/models/llm_unload/generate_stream`, { text_input: 'x', max_tokens: 2 });
  assert.equal(events(r.body.toString()).at(-1).completion_tokens, 2);
  await s.server.unloadModel('llm_unload');
  await until(async () => (await inGroup(now.pgid)).length === 0, 'the engine\'s group to be gone', 15_000);
});

test('shutdown stops the engines it started within --exit-timeout-secs: no process is left, stubborn or orphaned', { skip }, async () => {
  const s2 = await startTestServer({ modelRepositories: [repo], modelControlMode: 'explicit', loadModels: ['llm_unload', 'llm_stubborn', 'llm_orphan'] });
  let clean: boolean | undefined;
  let took = 0;
  const groups: number[] = [];
  try {
    groups.push((await engineOf('llm_unload')).pgid);
    const stubborn = (await processes(join(repo, 'llm_stubborn', '1'))).filter((p) => p.cmdline.startsWith('sh '));
    assert.equal(stubborn.length, 1);
    groups.push(stubborn[0]!.pgid);
    const orphan = await engineOf('llm_orphan'); // the shell became llama-server (exec), its sleep stays beside it
    groups.push(orphan.pgid);
    assert.ok((await inGroup(orphan.pgid)).length >= 2, 'the orphan engine left a sleep in its group');
  } finally {
    const t0 = Date.now();
    clean = await s2.server.close(2);
    took = Date.now() - t0;
    await s2.http.close();
  }
  // The stubborn engine ignores SIGTERM: the exit timeout (2 s), not the 10 s grace, ends it.
  assert.equal(clean, false);
  assert.ok(took >= 1500 && took < 9000, `shutdown took ${took} ms`);
  for (const pgid of groups) {
    await until(async () => (await inGroup(pgid)).length === 0, `group ${pgid} to be gone`, 5000);
  }
  for (const name of ['llm_unload', 'llm_stubborn', 'llm_orphan']) assert.deepEqual(await processes(join(repo, name, '1')), []);
});

test('a process that exits without stopping its server takes its engines with it', { skip }, async () => {
  const server = new URL('../../../src/server/inference-server.js', import.meta.url).href;
  const program = `const { InferenceServer } = await import(${JSON.stringify(server)});
await InferenceServer.create({ modelRepositories: [${JSON.stringify(repo)}], modelControlMode: 'explicit', loadModels: ['llm_unload'] });
process.stdout.write('loaded\\n');
setTimeout(() => process.exit(0), 200);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', program], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  let pgid = 0;
  await until(async () => {
    const found = (await processes(join(repo, 'llm_unload', '1', 'model.gguf'))).filter((p) => p.cmdline.startsWith(bin));
    if (found.length === 1) pgid = found[0]!.pgid;
    return pgid !== 0 || child.exitCode !== null;
  }, 'the engine to start');
  await new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : child.once('exit', resolve)));
  assert.match(out, /loaded/);
  assert.ok(pgid > 0, 'the engine was seen running');
  await until(async () => (await inGroup(pgid)).length === 0, "the engine's group to be gone", 5000);
});

test("the engine's output is in Nereid's log under the model's name", { skip }, async () => {
  const file = join(repo, 'nereid.log');
  const logger = createLogger({ info: true, warning: true, error: true, verbose: 0, format: 'default', file });
  const server = await InferenceServer.create({ modelRepositories: [repo], modelControlMode: 'explicit', loadModels: ['llm_unload'] }, { logger });
  await server.close(5);
  await logger.close();
  const log = await readFile(file, 'utf8');
  // llama-server's own words, one record per line of its output, each under the model's name.
  const lines = log.split('\n').filter((l) => l.includes("model 'llm_unload' engine: "));
  assert.ok(lines.some((l) => /listening on http:\/\/127\.0\.0\.1:\d+/.test(l)), log.slice(-3000));
  assert.ok(lines.length >= 5, `${lines.length} lines`);
  assert.match(log, /model 'llm_unload': started the engine \(pid \d+\) on 127\.0\.0\.1:\d+: /);
});

test("the engine's own metrics are re-exported under the model's labels, and feed the inference-extension gauges", { skip }, async () => {
  const server = await InferenceServer.create({ modelRepositories: [repo], modelControlMode: 'explicit', loadModels: ['llm_unload'], metrics: { cpu: false } }, {});
  try {
    const e = await engineOf('llm_unload');
    const direct = await (await fetch(`http://127.0.0.1:${e.port}/metrics`)).text();
    assert.match(direct, /^llamacpp:prompt_tokens_total \d+/m, 'llama-server serves its metrics (the preset turns them on)');
    const text = await server.metricsText();
    // Beside Nereid's own families, the engine's, each sample under the model's labels, with HELP and TYPE.
    assert.match(text, /^nv_inference_request_success\{model="llm_unload",version="1"\} 0$/m);
    assert.match(text, /^# TYPE llamacpp:prompt_tokens_total counter$/m);
    assert.match(text, /^llamacpp:prompt_tokens_total\{model="llm_unload",version="1"\} \d+/m);
    assert.match(text, /^llamacpp:requests_processing\{model="llm_unload",version="1"\} 0/m);
    assert.match(text, /^nv_trt_llm_request_metrics\{model="llm_unload",request_type="scheduled",version="1"\} 0$/m);
    assert.equal(text.match(/^# TYPE llamacpp:prompt_tokens_total /gm)?.length, 1);
  } finally {
    await server.close(5);
  }
});

test('the llama-server config of docs/llm-serving.md serves as written, with llama-server on PATH', { skip }, async () => {
  const doc = await readFile(join(ROOT, 'docs', 'llm-serving.md'), 'utf8');
  const config = /```\n(name: "llama_local"\n[\s\S]*?)```/.exec(doc)![1]!;
  await mkdir(join(repo, 'llama_local', '1'), { recursive: true });
  await copyFile(LLAMA_MODEL, join(repo, 'llama_local', '1', 'model.gguf'));
  await writeFile(join(repo, 'llama_local', 'config.pbtxt'), config);
  const path = process.env['PATH'];
  process.env['PATH'] = `${dirname(bin)}:${path ?? ''}`;
  try {
    await s.server.loadModel('llama_local', {});
  } finally {
    process.env['PATH'] = path;
  }
  const r = await postJson(`${s.url}/v2/models/llama_local/generate_stream`, { text_input: 'Hello', max_tokens: 4 });
  assert.equal(events(r.body.toString()).at(-1).completion_tokens, 4);
  await s.server.unloadModel('llama_local');
});

test('an engine command that cannot start is a load error naming its failure', { skip }, async () => {
  await assert.rejects(s.server.loadModel('llm_bad_flag', {}), (e: Error) => {
    assert.match(e.message, /the engine command '.*llama-server' exited with code \d+ before it answered \/health; its last output: .*no-such-flag/);
    return true;
  });
  await assert.rejects(s.server.loadModel('llm_no_binary', {}), /the engine command '\/nonexistent\/llama-server' could not start: spawn \/nonexistent\/llama-server ENOENT/);
  // A client that may load models must not be able to make the server run a command of its choosing.
  const sent = await postJson(`${s.url}/v2/repository/models/llm_sent/load`, { parameters: { config: JSON.stringify({ name: 'llm_sent', backend: 'openai', parameters: { engine_command: { string_value: 'touch {model_dir}/owned --port {port}' } } }) } });
  assert.equal(sent.status, 400, sent.body.toString());
  assert.match(sent.json().error, /a config given with a load request cannot start an engine/);
  const r = await request(`${s.url}/v2/models/llm_bad_flag/ready`);
  assert.equal(r.status, 400);
  assert.deepEqual(await processes(join(repo, 'llm_bad_flag', '1')), []);
});
