import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commandLine, engineCommandOf } from '../../../src/backends/openai/engine-command.js';
import { parseModelConfig } from '../../../src/config/index.js';

// The engine command a gateway model's config gives: presets, placeholders, environment, and the refusals
// that name the parameter at fault.

async function folder(): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'nereid-engine-cmd-'));
  await mkdir(join(dir, 'm', '1'), { recursive: true });
  await writeFile(join(dir, 'm', '1', 'model.gguf'), 'gguf');
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

function of(dir: string, params: Record<string, string>) {
  const text = Object.entries(params).map(([k, v]) => `parameters { key: "${k}" value { string_value: ${JSON.stringify(v)} } }`).join('\n');
  const config = parseModelConfig(`name: "m"\nbackend: "openai"\n${text}`, 'config.pbtxt');
  const files = { name: 'm', modelDir: join(dir, 'm'), versionDir: join(dir, 'm', '1'), backendConfig: {} };
  return engineCommandOf(files, config, 'served-id');
}

test('a preset with a binary, extra arguments and placeholders filled; a clean environment', async () => {
  const f = await folder();
  process.env['NEREID_TEST_ENGINE_SECRET'] = 'sesame';
  try {
    const c = (await of(f.dir, { engine: 'llama-server', engine_binary: '/opt/llama server/llama-server', engine_args: `-t 2 --chat-template "a b" -np 4`, engine_env: 'NEREID_TEST_ENGINE_SECRET, CUDA_VISIBLE_DEVICES=0,UNSET_ONE' }))!;
    assert.deepEqual(commandLine(c, 4321), ['/opt/llama server/llama-server', '--model', join(f.dir, 'm', '1', 'model.gguf'), '--host', '127.0.0.1', '--port', '4321', '--alias', 'served-id', '--metrics', '-t', '2', '--chat-template', 'a b', '-np', '4']);
    assert.equal(c.healthPath, '/health');
    // Nothing of Nereid's environment but PATH, HOME and what engine_env names (UNSET_ONE: Nereid has none).
    const expected = ['CUDA_VISIBLE_DEVICES', 'NEREID_TEST_ENGINE_SECRET', ...['HOME', 'PATH'].filter((k) => process.env[k] !== undefined)];
    assert.deepEqual(Object.keys(c.env).sort(), expected.sort());
    assert.equal(c.env['NEREID_TEST_ENGINE_SECRET'], 'sesame');
    assert.equal(c.env['CUDA_VISIBLE_DEVICES'], '0');
    const vllm = (await of(f.dir, { engine: 'vllm', engine_model: 'meta-llama/Llama-3.1-8B-Instruct' }))!;
    assert.deepEqual(commandLine(vllm, 9), ['vllm', 'serve', 'meta-llama/Llama-3.1-8B-Instruct', '--host', '127.0.0.1', '--port', '9', '--served-model-name', 'served-id']);
    const own = (await of(f.dir, { engine_command: 'my-engine --root {model_dir} --listen={host}:{port}', engine_health_path: '/ready' }))!;
    assert.deepEqual(commandLine(own, 7), ['my-engine', '--root', join(f.dir, 'm'), '--listen=127.0.0.1:7']);
    assert.equal(own.healthPath, '/ready');
    assert.equal(await of(f.dir, { base_url: 'http://x:1' }), undefined);
  } finally {
    delete process.env['NEREID_TEST_ENGINE_SECRET'];
    await f.remove();
  }
});

test('refusals name what is wrong', async () => {
  const f = await folder();
  try {
    const cases: [Record<string, string>, RegExp][] = [
      [{ engine: 'ollama' }, /unknown engine 'ollama'; the presets are llama-server, vllm, sglang, tgi/],
      [{ engine: 'vllm', base_url: 'http://x:1' }, /base_url and engine\/engine_command exclude each other/],
      [{ engine_command: 'e --port 8000' }, /must take \{port\}/],
      [{ engine_command: 'e --port {port} --x {nope}' }, /unknown placeholder \{nope\}/],
      [{ engine_command: 'e --port {port} "unclosed' }, /unclosed quote/],
      [{ engine: 'llama-server', engine_model_file: 'missing.gguf' }, /missing\.gguf/],
      [{ engine: 'llama-server', engine_model_file: '../../etc/passwd' }, /engine_model_file/],
      [{ engine: 'vllm', engine_env: 'BAD NAME' }, /engine_env entries are NAME or NAME=value/],
      [{ engine: 'vllm', engine_startup_timeout_s: '0' }, /engine_startup_timeout_s must be a positive number/],
    ];
    for (const [params, pattern] of cases) await assert.rejects(of(f.dir, params), pattern, JSON.stringify(params));
  } finally {
    await f.remove();
  }
});
