import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFile, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { modelConfigToJson, parseModelConfig } from '../../src/config/index.js';
import { EXAMPLES, FIXTURES, ROOT } from '../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../helpers/server.js';
import { postJson, request } from '../helpers/http.js';

// Every file a model's config names stays inside the folder it is relative to, symlinks resolved, for every
// backend and every field: a client that loads a model with a config override must not get a file from
// elsewhere served, nor learn from the error whether a file exists outside.

let s: TestServer;
let repo: { dir: string; remove(): Promise<void> };
let outside: string;

/** One config field that names a file: the model it is tried on, its folder, how to set it, a file to aim at. */
interface Field {
  readonly label: string;
  readonly model: string;
  /** The folder the field's names are relative to, inside the model folder ('' for the model folder itself). */
  readonly base: string;
  /** A real file of this kind, copied outside the repository: what an escape would reach. */
  readonly file: string;
  readonly set: (cfg: any, value: string) => void;
  /** How the field spells a path relative to its folder (EXECUTION_ENV_PATH: under $$TRITON_MODEL_DIRECTORY). */
  readonly spell?: (relativePath: string) => string;
}

const FIELDS: Field[] = [
  { label: 'onnxruntime default_model_filename', model: 'simple', base: '1', file: 'simple.onnx', set: (c, v) => { c.default_model_filename = v; } },
  { label: 'onnxruntime cc_model_filenames', model: 'simple', base: '1', file: 'simple.onnx', set: (c, v) => { c.cc_model_filenames = { '7.5': v }; } },
  { label: 'python default_model_filename', model: 'identity_fp32', base: '1', file: 'model.py', set: (c, v) => { c.default_model_filename = v; } },
  {
    label: 'python EXECUTION_ENV_PATH', model: 'identity_fp32', base: '', file: 'env.tar.gz',
    set: (c, v) => { c.parameters = { ...c.parameters, EXECUTION_ENV_PATH: { string_value: v } }; },
    spell: (p) => `$$TRITON_MODEL_DIRECTORY/${p}`,
  },
  { label: 'pytorch default_model_filename', model: 'add_sub_torch', base: '1', file: 'model.pt', set: (c, v) => { c.default_model_filename = v; } },
  { label: 'javascript default_model_filename', model: 'times_ten', base: '1', file: 'model.mjs', set: (c, v) => { c.default_model_filename = v; } },
  { label: 'llamacpp default_model_filename', model: 'tiny_llm', base: '1', file: 'model.gguf', set: (c, v) => { c.default_model_filename = v; } },
  { label: 'output label_filename', model: 'digits', base: '', file: 'labels.txt', set: (c, v) => { c.output[0].label_filename = v; } },
  { label: 'warmup input_data_file', model: 'warmup_file', base: 'warmup', file: 'input0_fp32.bin', set: (c, v) => { c.model_warmup[0].inputs.INPUT0.input_data_file = v; } },
  {
    label: 'sequence initial_state data_file', model: 'sequence_accumulator', base: 'initial_state', file: 'state.bin',
    set: (c, v) => { c.sequence_batching.state[0].initial_state = [{ name: 'init', data_type: 'TYPE_INT32', dims: ['1'], data_file: v }]; },
  },
];

/** The ways a name can reach outside its folder; each pair differs only in whether the target exists. */
const ESCAPES: { label: string; value: (f: Field, baseDir: string) => string; absolute?: boolean }[] = [
  { label: '../ to a file that exists', value: (f, b) => relative(b, join(outside, f.file)) },
  { label: '../ to a file that does not', value: (f, b) => relative(b, join(outside, `no-such-${f.file}`)) },
  { label: '/etc/passwd', value: () => '/etc/passwd', absolute: true },
  { label: 'a missing absolute path', value: () => '/etc/nereid-no-such-file', absolute: true },
  { label: 'a symlink to a file outside', value: () => 'link-out' },
  { label: 'a symlink to a missing file outside', value: () => 'link-missing' },
  { label: 'a symlinked folder, existing file', value: (f) => `link-dir/${f.file}` },
  { label: 'a symlinked folder, missing file', value: () => 'link-dir/no-such-file' },
];

const EXTERNAL_DATA_MODEL = 'CAcSC25lcmVpZC90ZXN0OnUKDgoBWAoBVxIBWSIDQWRkEgFnKj4IBBAGQgFXahgKCGxvY2F0aW9uEgxleHQvZGF0YS5iaW5qCwoGb2Zmc2V0EgEw' +
  'agwKBmxlbmd0aBICMTZwAVoPCgFYEgoKCAgGEgQKAggEYg8KAVkSCgoICAYSBAoCCARCBAoAEA4=';

const SOURCES: Record<string, string> = {
  simple: join(EXAMPLES, 'simple'),
  identity_fp32: join(FIXTURES, 'python', 'identity_fp32'),
  add_sub_torch: join(ROOT, 'examples', 'python_repository', 'add_sub_torch'),
  times_ten: join(FIXTURES, 'js', 'times_ten'),
  tiny_llm: join(EXAMPLES, 'tiny_llm'),
  digits: join(EXAMPLES, 'digits'),
  warmup_file: join(FIXTURES, 'warmup', 'warmup_file'),
  sequence_accumulator: join(EXAMPLES, 'sequence_accumulator'),
};

before(async () => {
  outside = await mkdtemp(join(tmpdir(), 'nereid-outside-'));
  await copyFile(join(EXAMPLES, 'simple', '1', 'model.onnx'), join(outside, 'simple.onnx'));
  await copyFile(join(FIXTURES, 'python', 'identity_fp32', '1', 'model.py'), join(outside, 'model.py'));
  await copyFile(join(FIXTURES, 'js', 'times_ten', '1', 'model.mjs'), join(outside, 'model.mjs'));
  await copyFile(join(EXAMPLES, 'tiny_llm', '1', 'model.gguf'), join(outside, 'model.gguf'));
  await copyFile(join(ROOT, 'examples', 'python_repository', 'add_sub_torch', '1', 'model.pt'), join(outside, 'model.pt'));
  await copyFile(join(EXAMPLES, 'digits', 'digits_labels.txt'), join(outside, 'labels.txt'));
  await copyFile(join(FIXTURES, 'warmup', 'warmup_file', 'warmup', 'input0_fp32.bin'), join(outside, 'input0_fp32.bin'));
  await writeFile(join(outside, 'state.bin'), Buffer.alloc(4));
  await writeFile(join(outside, 'env.tar.gz'), Buffer.alloc(16));
  repo = await tempRepository(Object.entries(SOURCES).map(([name, from]) => ({ from, name })));
  for (const f of FIELDS) {
    const dir = join(repo.dir, f.model, f.base);
    await mkdir(dir, { recursive: true });
    await symlink(join(outside, f.file), join(dir, 'link-out')).catch(() => undefined);
    await symlink(join(outside, 'gone'), join(dir, 'link-missing')).catch(() => undefined);
    await symlink(outside, join(dir, 'link-dir')).catch(() => undefined);
  }
  s = await startTestServer({ modelRepositories: [repo.dir], modelControlMode: 'explicit' });
});

after(async () => {
  await s.close();
  await repo.remove();
  await rm(outside, { recursive: true, force: true });
});

async function configOf(model: string): Promise<any> {
  const file = join(repo.dir, model, 'config.pbtxt');
  return modelConfigToJson(parseModelConfig(await readFile(file, 'utf8'), file));
}

async function load(model: string, cfg: unknown): Promise<{ status: number; error: string }> {
  const r = await postJson(`${s.url}/v2/repository/models/${model}/load`, { parameters: { config: JSON.stringify(cfg) } });
  return { status: r.status, error: r.status === 200 ? '' : r.json().error };
}

describe('a file named by the config must stay inside its folder', () => {
  for (const f of FIELDS) {
    test(`${f.label}: every escape is refused with one text that says nothing of the target`, async () => {
      const baseDir = join(repo.dir, f.model, f.base);
      const texts = new Set<string>();
      for (const e of ESCAPES) {
        const raw = e.value(f, baseDir);
        const value = e.absolute || !f.spell ? raw : f.spell(raw);
        const cfg = await configOf(f.model);
        f.set(cfg, value);
        const r = await load(f.model, cfg);
        assert.equal(r.status, 400, `${e.label} (${value}): ${r.status} ${r.error}`);
        assert.ok(!r.error.includes(outside) && !r.error.includes(repo.dir), `${e.label}: the error shows a server path: ${r.error}`);
        texts.add(r.error.split(value).join('<name>'));
        assert.equal((await request(`${s.url}/v2/models/${f.model}/ready`)).status === 200, false, `${e.label}: the model serves`);
      }
      assert.equal(texts.size, 1, `more than one text:\n${[...texts].join('\n')}`);
    });
  }

  test('a missing file inside the folder is named relative to the model folder, never by its server path', async () => {
    for (const f of FIELDS.filter((x) => x.label !== 'onnxruntime cc_model_filenames')) {
      const cfg = await configOf(f.model);
      const value = f.spell ? f.spell('no-such-file') : 'no-such-file';
      f.set(cfg, value);
      const r = await load(f.model, cfg);
      assert.equal(r.status, 400, `${f.label}: ${r.error}`);
      assert.match(r.error, /no-such-file/, f.label);
      assert.ok(!r.error.includes(repo.dir) && !r.error.includes(tmpdir()), `${f.label}: the error shows a server path: ${r.error}`);
    }
  });

  test("an ONNX model whose external data leaves its folder is refused, and ONNX Runtime's words show no server path", async () => {
    // model.onnx: Y = X + W, W (INT32 [4]) stored as external data at 'ext/data.bin'; 'ext' leads outside.
    const dir = join(repo.dir, 'external', '1');
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'model.onnx'), Buffer.from(EXTERNAL_DATA_MODEL, 'base64'));
    await writeFile(join(outside, 'data.bin'), Buffer.alloc(16, 1));
    await symlink(outside, join(dir, 'ext'));
    const cfg = { name: 'external', backend: 'onnxruntime', max_batch_size: 0,
      input: [{ name: 'X', data_type: 'TYPE_INT32', dims: [4] }], output: [{ name: 'Y', data_type: 'TYPE_INT32', dims: [4] }] };
    const r = await load('external', cfg);
    assert.equal(r.status, 400, r.error);
    assert.match(r.error, /onnx runtime error/);
    assert.ok(!r.error.includes(outside) && !r.error.includes(repo.dir), `the error shows a server path: ${r.error}`);
  });

  test("a repository config that does not parse is named from the model's folder on, not by its server path", async () => {
    await mkdir(join(repo.dir, 'badcfg', '1'), { recursive: true });
    await writeFile(join(repo.dir, 'badcfg', 'config.pbtxt'), 'name: "badcfg"\nmax_batch_size: [\n');
    const r = await postJson(`${s.url}/v2/repository/models/badcfg/load`, {});
    assert.equal(r.status, 400);
    assert.match(r.json().error, /failed to read text proto from badcfg\/config\.pbtxt: Error parsing text-format inference\.ModelConfig: 2:/);
    assert.ok(!r.json().error.includes(repo.dir), r.json().error);
  });

  test("an absolute EXECUTION_ENV_PATH stays the operator's choice in a repository's config, as in Triton", async () => {
    const dir = join(repo.dir, 'shared_env');
    await mkdir(join(dir, '1'), { recursive: true });
    await copyFile(join(FIXTURES, 'python', 'identity_fp32', '1', 'model.py'), join(dir, '1', 'model.py'));
    const text = (await readFile(join(FIXTURES, 'python', 'identity_fp32', 'config.pbtxt'), 'utf8')).replace('identity_fp32', 'shared_env');
    await writeFile(join(dir, 'config.pbtxt'), `${text}\nparameters { key: "EXECUTION_ENV_PATH" value { string_value: "${outside}/no-env" } }\n`);
    const r = await postJson(`${s.url}/v2/repository/models/shared_env/load`, {});
    assert.equal(r.status, 400);
    assert.match(r.json().error, /Failed to get the canonical path for .*no-env\. \(EXECUTION_ENV_PATH does not exist\)/);
  });

  test('a file inside the folder, also through a symlink that stays inside, still loads', async () => {
    await symlink('model.onnx', join(repo.dir, 'simple', '1', 'inside.onnx'));
    const cfg = await configOf('simple');
    cfg.default_model_filename = 'inside.onnx';
    assert.deepEqual(await load('simple', cfg), { status: 200, error: '' });
    assert.equal((await request(`${s.url}/v2/models/simple/ready`)).status, 200);
  });
});
