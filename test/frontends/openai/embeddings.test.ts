import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';
import { LLAMA_MODEL, llamaServer } from '../../helpers/llama-server.js';
import { EXAMPLES, FIXTURES } from '../../helpers/paths.js';
import { postJson } from '../../helpers/http.js';
import { openAiUrl, spawnServer, type ServerProcess } from '../../helpers/server.js';
import { writeKeysFile } from '../../helpers/api-keys.js';

// /v1/embeddings with the official openai client against `nereid serve`: tiny_embed is the fixture made by
// scripts/models/make_tiny_llm.py --embedding, a GGUF that names its pooling (mean), served with parameter
// embedding "true". Its vectors are compared with llama.cpp's own server, run with --embeddings on the same file
// and no --pooling, so that it too pools as the GGUF says (built by scripts/build-llama-server.mjs; without it
// that test skips, and fails under CI). Both scale the vector to unit length.

const { bin, skip, missing } = llamaServer();
const KEY = 'embeddings-test-key';
const READER_KEY = 'embeddings-test-reader';
const EMBED_MODEL = join(FIXTURES, 'embedding', 'tiny_embed', '1', 'model.gguf');
let repo: string;
let p: ServerProcess;
let client: OpenAI;
let base: string;

before(async () => {
  repo = await mkdtemp(join(tmpdir(), 'nereid-embeddings-'));
  // An embedding model that does not declare its vector output: refused at load.
  await mkdir(join(repo, 'bad_embed', '1'), { recursive: true });
  await copyFile(LLAMA_MODEL, join(repo, 'bad_embed', '1', 'model.gguf'));
  await writeFile(join(repo, 'bad_embed', 'config.pbtxt'), `backend: "llamacpp"
max_batch_size: 0
input [ { name: "text_input" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "text_output" data_type: TYPE_STRING dims: [ -1 ] } ]
parameters { key: "embedding" value { string_value: "true" } }
`);
  // The gateway's embedding model: llama-server run by Nereid with --embeddings on the same GGUF (loaded by its test).
  await mkdir(join(repo, 'remote_embed', '1'), { recursive: true });
  await copyFile(EMBED_MODEL, join(repo, 'remote_embed', '1', 'model.gguf'));
  await writeFile(join(repo, 'remote_embed', 'config.pbtxt'), `backend: "openai"
max_batch_size: 0
parameters { key: "embedding" value { string_value: "true" } }
parameters { key: "engine" value { string_value: "llama-server" } }
parameters { key: "engine_binary" value { string_value: "${bin}" } }
parameters { key: "engine_args" value { string_value: "--embeddings -t 1 -c 256 --no-webui --no-warmup" } }
parameters { key: "model_id" value { string_value: "tiny" } }
`);
  // A gateway embedding model must answer one vector per request: decoupled is refused at load.
  await mkdir(join(repo, 'bad_remote_embed', '1'), { recursive: true });
  await writeFile(join(repo, 'bad_remote_embed', 'config.pbtxt'), `backend: "openai"
max_batch_size: 0
model_transaction_policy { decoupled: true }
parameters { key: "embedding" value { string_value: "true" } }
parameters { key: "base_url" value { string_value: "http://127.0.0.1:9" } }
`);
  const keys = await writeKeysFile(repo, [['admin', '*', KEY], ['reader', 'metadata', READER_KEY]]);
  p = await spawnServer(['--model-repository', repo, '--model-repository', join(FIXTURES, 'embedding'), '--model-repository', EXAMPLES, '--model-control-mode=explicit', '--load-model=tiny_embed', '--load-model=tiny_llm', '--openai-port=0', '--openai-address=127.0.0.1', `--api-keys-file=${keys}`]);
  const openai = await openAiUrl(p);
  base = `${openai}/v1`;
  client = new OpenAI({ baseURL: base, apiKey: KEY, maxRetries: 0 });
});

after(async () => {
  p.child.kill('SIGTERM');
  await p.exited;
  await rm(repo, { recursive: true, force: true });
});

const norm = (v: readonly number[]): number => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

test('string and list input: one unit vector per string, in order, with usage; base64 decodes to the same floats', async () => {
  const one = await client.embeddings.create({ model: 'tiny_embed', input: 'The quick brown fox', encoding_format: 'float' });
  assert.equal(one.object, 'list');
  assert.equal(one.model, 'tiny_embed');
  assert.equal(one.data.length, 1);
  const v = one.data[0]!.embedding;
  assert.ok(v.length > 0);
  assert.ok(Math.abs(norm(v) - 1) < 1e-5, String(norm(v)));
  assert.ok(one.usage.prompt_tokens > 0);
  assert.equal(one.usage.total_tokens, one.usage.prompt_tokens);

  const list = await client.embeddings.create({ model: 'tiny_embed', input: ['jumps over', 'The quick brown fox', 'the lazy dog'], encoding_format: 'float', user: 'u1' });
  assert.deepEqual(list.data.map((d) => [d.object, d.index]), [['embedding', 0], ['embedding', 1], ['embedding', 2]]);
  assert.deepEqual(list.data[1]!.embedding, v);
  assert.notDeepEqual(list.data[0]!.embedding, v);
  assert.ok(list.usage.prompt_tokens > one.usage.prompt_tokens);

  // The client asks for base64 by default and decodes it; the raw answer is little-endian float32 bytes.
  const decoded = await client.embeddings.create({ model: 'tiny_embed', input: 'The quick brown fox' });
  assert.deepEqual(decoded.data[0]!.embedding, v);
  const raw = await postJson(`${base}/embeddings`, { model: 'tiny_embed', input: 'The quick brown fox', encoding_format: 'base64' }, { authorization: `Bearer ${KEY}` });
  const bytes = Buffer.from(raw.json().data[0].embedding as string, 'base64');
  assert.equal(bytes.length, v.length * 4);
  assert.deepEqual(Array.from({ length: v.length }, (_, i) => bytes.readFloatLE(i * 4)), v);
  // The same model on KServe infer: the vector in its output 'embedding'.
  const kserve = await postJson(`${p.url}/v2/models/tiny_embed/infer`, { inputs: [{ name: 'text_input', datatype: 'BYTES', shape: [1], data: ['The quick brown fox'] }] }, { authorization: `Bearer ${KEY}` });
  assert.equal(kserve.status, 200, kserve.body.toString());
  const out = kserve.json().outputs[0];
  assert.deepEqual([out.name, out.datatype, out.shape], ['embedding', 'FP32', [v.length]]);
  assert.deepEqual(out.data, v);
});

test('dimensions other than the model size, a text model, and bad inputs are refused by name', async () => {
  const size = (await client.embeddings.create({ model: 'tiny_embed', input: 'x', encoding_format: 'float' })).data[0]!.embedding.length;
  const same = await client.embeddings.create({ model: 'tiny_embed', input: 'x', encoding_format: 'float', dimensions: size });
  assert.equal(same.data[0]!.embedding.length, size);
  const refused = async (body: Record<string, unknown>, param: string, message: RegExp): Promise<void> => {
    await assert.rejects(client.embeddings.create(body as never), (e: InstanceType<typeof OpenAI.BadRequestError>) => {
      assert.ok(e instanceof OpenAI.BadRequestError, String(e));
      assert.equal(e.param, param);
      assert.match(e.message, message);
      return true;
    });
  };
  await refused({ model: 'tiny_embed', input: 'x', dimensions: 8 }, 'dimensions', /'dimensions' is not supported/);
  await refused({ model: 'tiny_llm', input: 'x' }, 'model', /not an embedding model/);
  await refused({ model: 'tiny_embed', input: [1, 2, 3] }, 'input', /token ids is not supported/);
  await refused({ model: 'tiny_embed', input: Array(2049).fill('a') }, 'input', /at most 2048/);
  await refused({ model: 'tiny_embed', input: 'x', encoding_format: 'int8' }, 'encoding_format', /'float' or 'base64'/);
  await refused({ model: 'tiny_embed', input: 'word '.repeat(400) }, 'input', /context/);
  await assert.rejects(client.embeddings.create({ model: 'no_such_model', input: 'x' }), OpenAI.NotFoundError);
});

test('a model marked embedding without an FP32 output \'embedding\' fails to load, saying so', async () => {
  const r = await postJson(`${p.url}/v2/repository/models/bad_embed/load`, {}, { authorization: `Bearer ${KEY}` });
  assert.equal(r.status, 400, r.body.toString());
  assert.match(r.json().error, /needs an output 'embedding' of TYPE_FP32/);
  const decoupled = await postJson(`${p.url}/v2/repository/models/bad_remote_embed/load`, {}, { authorization: `Bearer ${KEY}` });
  assert.equal(decoupled.status, 400, decoupled.body.toString());
  assert.match(decoupled.json().error, /embedding model .* cannot be decoupled/);
});

test('under --api-keys-file the scope is inference: a metadata-only key is refused', async () => {
  const reader = new OpenAI({ baseURL: base, apiKey: READER_KEY, maxRetries: 0 });
  await assert.rejects(reader.embeddings.create({ model: 'tiny_embed', input: 'x' }), (e: Error) => {
    assert.ok(e instanceof OpenAI.PermissionDeniedError, String(e));
    assert.match(e.message, /inference/);
    return true;
  });
  await assert.rejects(new OpenAI({ baseURL: base, apiKey: 'wrong', maxRetries: 0 }).embeddings.create({ model: 'tiny_embed', input: 'x' }), OpenAI.AuthenticationError);
});

test('the vectors equal llama.cpp server\'s own for the same GGUF and text', { skip }, async () => {
  if (missing) throw new Error(missing);
  await withLlamaServer(async (engine) => {
    const input = ['The quick brown fox', 'jumps over the lazy dog'];
    const theirs = (await postJson(`${engine}/v1/embeddings`, { model: 'tiny', input })).json();
    const ours = await client.embeddings.create({ model: 'tiny_embed', input, encoding_format: 'float' });
    assert.equal(ours.usage.prompt_tokens, theirs.usage.prompt_tokens);
    for (let i = 0; i < input.length; i++) assertSameVector(ours.data[i]!.embedding, theirs.data[i].embedding as number[], 1e-4);
  });
});

test('a gateway model marked embedding forwards to its engine\'s /v1/embeddings: float, base64, dimensions, usage and KServe infer', { skip }, async () => {
  if (missing) throw new Error(missing);
  const load = await postJson(`${p.url}/v2/repository/models/remote_embed/load`, {}, { authorization: `Bearer ${KEY}` });
  assert.equal(load.status, 200, load.body.toString());
  await withLlamaServer(async (engine) => {
    const input = ['The quick brown fox', 'jumps over the lazy dog', 'the lazy dog'];
    const theirs = (await postJson(`${engine}/v1/embeddings`, { model: 'tiny', input })).json();
    const ours = await client.embeddings.create({ model: 'remote_embed', input, encoding_format: 'float' });
    assert.deepEqual(ours.data.map((d) => d.index), [0, 1, 2]);
    assert.equal(ours.model, 'remote_embed');
    assert.equal(ours.usage.prompt_tokens, theirs.usage.prompt_tokens);
    assert.equal(ours.usage.total_tokens, theirs.usage.prompt_tokens);
    for (let i = 0; i < input.length; i++) assertSameVector(ours.data[i]!.embedding, theirs.data[i].embedding as number[], 1e-6);
    // The client's default, base64, is Nereid's encoding of the engine's floats.
    const decoded = await client.embeddings.create({ model: 'remote_embed', input: input[0]! });
    assert.deepEqual(decoded.data[0]!.embedding, ours.data[0]!.embedding);
    // The in-process model on the same GGUF gives the same vector.
    const local = await client.embeddings.create({ model: 'tiny_embed', input: input[0]!, encoding_format: 'float' });
    assertSameVector(local.data[0]!.embedding, ours.data[0]!.embedding, 1e-4);
  });
  const size = (await client.embeddings.create({ model: 'remote_embed', input: 'x', encoding_format: 'float', dimensions: 32 })).data[0]!.embedding.length;
  assert.equal(size, 32);
  await assert.rejects(client.embeddings.create({ model: 'remote_embed', input: 'x', dimensions: 8 }), (e: InstanceType<typeof OpenAI.BadRequestError>) => {
    assert.ok(e instanceof OpenAI.BadRequestError, String(e));
    assert.equal(e.param, 'dimensions');
    return true;
  });
  const kserve = await postJson(`${p.url}/v2/models/remote_embed/infer`, { inputs: [{ name: 'text_input', datatype: 'BYTES', shape: [1], data: ['x'] }] }, { authorization: `Bearer ${KEY}` });
  assert.equal(kserve.status, 200, kserve.body.toString());
  const out = kserve.json().outputs[0];
  assert.deepEqual([out.name, out.datatype, out.shape], ['embedding', 'FP32', [32]]);
  assert.equal(kserve.json().parameters?.prompt_tokens, 2);
});

/** Equal within `tolerance` per element, and pointing the same way. */
function assertSameVector(a: readonly number[], b: readonly number[], tolerance: number): void {
  assert.equal(a.length, b.length);
  const cosine = a.reduce((s, x, j) => s + x * b[j]!, 0) / (norm(a) * norm(b));
  assert.ok(cosine > 0.9999, `cosine ${cosine}`);
  assert.ok(a.every((x, j) => Math.abs(x - b[j]!) < tolerance), `vectors differ by more than ${tolerance}`);
}

/** llama.cpp's own server with --embeddings on the fixture's GGUF, pooling as the GGUF says, for one test. */
async function withLlamaServer(fn: (url: string) => Promise<void>): Promise<void> {
  const port = await freePort();
  const engine: ChildProcess = spawn(bin, ['-m', EMBED_MODEL, '--host', '127.0.0.1', '--port', String(port), '-t', '1', '-c', '256', '--embeddings', '--no-webui', '--no-warmup'], { stdio: 'ignore' });
  try {
    for (let i = 0; !(await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)); i++) {
      if (i > 200) throw new Error('llama-server did not start');
      await sleep(100);
    }
    await fn(`http://127.0.0.1:${port}`);
  } finally {
    engine.kill('SIGKILL');
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}
