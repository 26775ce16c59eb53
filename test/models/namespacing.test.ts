import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { postJson, request } from '../helpers/http.js';

// --model-namespacing as Triton's L0_model_namespacing pins it, in modes poll and explicit: two repositories,
// each its own namespace; a name in both is ambiguous for requests, and an ensemble runs the steps of its own
// repository (or, when its repository lacks one, the one model of that name elsewhere).

const IO = `
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]`;

/** OUTPUT0, OUTPUT1 = a+b, a-b (addsub) or a-b, a+b (subadd). */
const MODEL_JS = (kind: 'addsub' | 'subadd') => `
import { InferenceResponse, Tensor, getInputTensorByName } from 'nereid/backend-utils';
export default class M {
  execute(requests) {
    return requests.map((r) => {
      const a = getInputTensorByName(r, 'INPUT0').asArray();
      const b = getInputTensorByName(r, 'INPUT1').asArray();
      const add = a.map((x, i) => x + b[i]);
      const sub = a.map((x, i) => x - b[i]);
      return new InferenceResponse([new Tensor('OUTPUT0', ${kind === 'addsub' ? 'add' : 'sub'}, [16]), new Tensor('OUTPUT1', ${kind === 'addsub' ? 'sub' : 'add'}, [16])]);
    });
  }
}
`;

async function composing(repo: string, name: string, kind: 'addsub' | 'subadd'): Promise<void> {
  await mkdir(join(repo, name, '1'), { recursive: true });
  await writeFile(join(repo, name, 'config.pbtxt'), `name: "${name}"\nbackend: "javascript"\nmax_batch_size: 0\n${IO}\ninstance_group [ { kind: KIND_CPU count: 1 } ]\n`);
  await writeFile(join(repo, name, '1', 'model.js'), MODEL_JS(kind));
}

async function ensemble(repo: string, name: string, step: string): Promise<void> {
  await mkdir(join(repo, name, '1'), { recursive: true });
  await writeFile(join(repo, name, 'config.pbtxt'), `name: "${name}"\nplatform: "ensemble"\nmax_batch_size: 0\n${IO}
ensemble_scheduling { step [ { model_name: "${step}" model_version: -1
  input_map { key: "INPUT0" value: "INPUT0" } input_map { key: "INPUT1" value: "INPUT1" }
  output_map { key: "OUTPUT0" value: "OUTPUT0" } output_map { key: "OUTPUT1" value: "OUTPUT1" } } ] }\n`);
}

type Layout = 'no_duplication' | 'duplication' | 'ensemble_duplication';

/** The two repositories of one of Triton's cases. */
async function layout(kind: Layout): Promise<{ root: string; addsub: string; subadd: string }> {
  const root = await mkdtemp(join(tmpdir(), 'nereid-ns-'));
  const addsub = join(root, 'addsub_repo');
  const subadd = join(root, 'subadd_repo');
  if (kind === 'no_duplication') {
    await ensemble(addsub, 'simple_addsub', 'composing_addsub');
    await composing(addsub, 'composing_addsub', 'addsub');
    await ensemble(subadd, 'simple_subadd', 'composing_subadd');
    await composing(subadd, 'composing_subadd', 'subadd');
  } else if (kind === 'duplication') {
    await ensemble(addsub, 'simple_addsub', 'composing_model');
    await composing(addsub, 'composing_model', 'addsub');
    await ensemble(subadd, 'simple_subadd', 'composing_model');
    await composing(subadd, 'composing_model', 'subadd');
  } else {
    await ensemble(addsub, 'simple_ensemble', 'composing_addsub');
    await composing(addsub, 'composing_addsub', 'addsub');
    await ensemble(subadd, 'simple_ensemble', 'composing_subadd');
    await composing(subadd, 'composing_subadd', 'subadd');
  }
  return { root, addsub, subadd };
}

const A = Array.from({ length: 16 }, (_, i) => i);
const ADD = A.map((x) => x + x);
const SUB = A.map(() => 0);

async function infer(s: TestServer, model: string): Promise<{ status: number; body: any }> {
  const r = await postJson(`${s.url}/v2/models/${model}/infer`, {
    inputs: [{ name: 'INPUT0', shape: [16], datatype: 'INT32', data: A }, { name: 'INPUT1', shape: [16], datatype: 'INT32', data: A }],
  });
  return { status: r.status, body: r.json() };
}

async function acts(s: TestServer, model: string, as: 'addsub' | 'subadd'): Promise<void> {
  const r = await infer(s, model);
  assert.equal(r.status, 200, `${model}: ${JSON.stringify(r.body)}`);
  const out = new Map<string, number[]>(r.body.outputs.map((o: any) => [o.name, o.data]));
  assert.deepEqual([out.get('OUTPUT0'), out.get('OUTPUT1')], as === 'addsub' ? [ADD, SUB] : [SUB, ADD], `${model} acts as ${as}`);
}

async function ambiguous(s: TestServer, model: string): Promise<void> {
  const r = await infer(s, model);
  assert.equal(r.status, 400);
  assert.match(r.body.error, /There are 2 identifiers of model '.*' in global map, model namespace must be provided to resolve ambiguity\./);
  const ready = await request(`${s.url}/v2/models/${model}/ready`);
  assert.equal(ready.status, 400);
}

async function withServer(kind: Layout, mode: 'poll' | 'explicit', body: (s: TestServer, dirs: { root: string; addsub: string; subadd: string }) => Promise<void>): Promise<void> {
  const dirs = await layout(kind);
  const s = await startTestServer({ modelRepositories: [dirs.addsub, dirs.subadd], modelNamespacing: true, modelControlMode: mode, repositoryPollSecs: 3600 });
  try {
    assert.equal((await postJson(`${s.url}/v2/health/ready`, undefined)).status, 200);
    await body(s, dirs);
  } finally {
    await s.close();
    await rm(dirs.root, { recursive: true, force: true });
  }
}

const load = async (s: TestServer, m: string) => {
  const r = await postJson(`${s.url}/v2/repository/models/${m}/load`, {});
  assert.equal(r.status, 200, `${m}: ${r.body.toString()}`);
};

for (const mode of ['poll', 'explicit'] as const) {
  const start = async (s: TestServer, ...models: string[]) => {
    if (mode === 'explicit') for (const m of models) await load(s, m);
  };

  test(`${mode}: no duplication: every model serves on its own`, () => withServer('no_duplication', mode, async (s) => {
    await start(s, 'simple_addsub', 'simple_subadd');
    for (const m of ['simple_addsub', 'composing_addsub']) await acts(s, m, 'addsub');
    for (const m of ['simple_subadd', 'composing_subadd']) await acts(s, m, 'subadd');
  }));

  test(`${mode}: a composing model in both repositories: each ensemble runs its own, the name alone is ambiguous`, () => withServer('duplication', mode, async (s) => {
    await start(s, 'simple_addsub', 'simple_subadd');
    await acts(s, 'simple_addsub', 'addsub');
    await acts(s, 'simple_subadd', 'subadd');
    await ambiguous(s, 'composing_model');
  }));

  test(`${mode}: an ensemble in both repositories: both load, each with its own steps, its name ambiguous`, () => withServer('ensemble_duplication', mode, async (s) => {
    await start(s, 'simple_ensemble');
    await acts(s, 'composing_addsub', 'addsub');
    await acts(s, 'composing_subadd', 'subadd');
    await ambiguous(s, 'simple_ensemble');
    const index = (await postJson(`${s.url}/v2/repository/index`, {})).json() as { name: string; version?: string; state?: string }[];
    assert.deepEqual(index.filter((e) => e.name === 'simple_ensemble').map((e) => [e.version, e.state]), [['1', 'READY'], ['1', 'READY']]);
  }));

  test(`${mode}: a composing model that leaves its repository is found in the other, and again in its own when back`, () => withServer('duplication', mode, async (s, dirs) => {
    const inRepo = join(dirs.addsub, 'composing_model');
    const outside = join(dirs.root, 'composing_model');
    await rename(inRepo, outside);
    if (mode === 'poll') await s.server.pollRepository();
    else await start(s, 'simple_addsub', 'simple_subadd');
    for (const m of ['simple_subadd', 'simple_addsub', 'composing_model']) await acts(s, m, 'subadd');
    await rename(outside, inRepo);
    if (mode === 'poll') await s.server.pollRepository();
    else await start(s, 'simple_addsub');
    await acts(s, 'simple_addsub', 'addsub');
    await acts(s, 'simple_subadd', 'subadd');
    await ambiguous(s, 'composing_model');
  }));
}

test('explicit: the index lists a name once per repository before anything loads; unload by name unloads both', () => withServer('ensemble_duplication', 'explicit', async (s) => {
  const before = (await postJson(`${s.url}/v2/repository/index`, {})).json();
  assert.deepEqual(before, [{ name: 'composing_addsub' }, { name: 'composing_subadd' }, { name: 'simple_ensemble' }, { name: 'simple_ensemble' }]);
  await load(s, 'simple_ensemble');
  assert.equal((await postJson(`${s.url}/v2/repository/models/simple_ensemble/unload`, {})).status, 200);
  const after = (await postJson(`${s.url}/v2/repository/index`, { ready: true })).json() as { name: string }[];
  assert.deepEqual(after.map((e) => e.name), ['composing_addsub', 'composing_subadd']);
}));
