import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { llamaCppBackend } from '../../../src/backends/llamacpp/backend.js';
import type { LlamaInstance } from '../../../src/backends/llamacpp/instance.js';
import type { BackendRequest } from '../../../src/backends/backend.js';
import { parseModelConfig } from '../../../src/config/index.js';
import type { NereidError } from '../../../src/errors.js';
import type { Parameters } from '../../../src/inference/index.js';
import { createLogger } from '../../../src/observability/logger.js';
import type { Tensor } from '../../../src/tensor/tensor.js';
import { EXAMPLES } from '../../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../../helpers/server.js';
import { postJson } from '../../helpers/http.js';

// The llamacpp backend with the example tiny_llm (random weights, real llama.cpp): Triton's generate and
// generate_stream with text_input / text_output and sampling parameters, through the real server.

let s: TestServer;
before(async () => {
  s = await startTestServer({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit', loadModels: ['tiny_llm'] });
});
after(() => s.close());

const generate = (body: Record<string, unknown>) => postJson(`${s.url}/v2/models/tiny_llm/generate`, body);
const generateStream = (body: Record<string, unknown>) => postJson(`${s.url}/v2/models/tiny_llm/generate_stream`, body);

function events(text: string): any[] {
  return text.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => JSON.parse(e.slice(6)));
}

test('generate: the whole text in one response, with finish_reason and token counts', async () => {
  const r = await generate({ text_input: 'Once upon a time', parameters: { max_tokens: 6, seed: 7, ignore_eos: true } });
  assert.equal(r.status, 200, r.body.toString());
  const j = r.json();
  assert.equal(j.model_name, 'tiny_llm');
  assert.equal(typeof j.text_output, 'string');
  assert.ok(j.text_output.length > 0);
  assert.equal(j.finish_reason, 'length');
  assert.equal(j.completion_tokens, 6);
  assert.ok(j.prompt_tokens >= 2, `prompt_tokens ${j.prompt_tokens}`);
});

test('generate_stream with stream: one event per piece of text, then a last one with the counts; same text as generate', async () => {
  const body = { text_input: 'Once upon a time', max_tokens: 8, seed: 11, temperature: 0.9, ignore_eos: true };
  const r = await generateStream({ ...body, stream: true });
  assert.equal(r.status, 200);
  const ev = events(r.body.toString());
  assert.ok(ev.length >= 3, `only ${ev.length} events`);
  const last = ev.at(-1);
  assert.equal(last.text_output, '');
  assert.equal(last.finish_reason, 'length');
  assert.equal(last.completion_tokens, 8);
  for (const e of ev.slice(0, -1)) assert.equal(e.finish_reason, undefined);
  const whole = (await generate(body)).json();
  assert.equal(ev.map((e) => e.text_output).join(''), whole.text_output);
});

test('seed: the same seed gives the same text; another seed another text', async () => {
  const ask = async (seed: number) => (await generate({ text_input: 'The', max_tokens: 12, seed, temperature: 1, ignore_eos: true })).json().text_output as string;
  const a = await ask(123);
  assert.equal(await ask(123), a);
  assert.notEqual(await ask(124), a);
});

test('no seed: each request draws its own text, as OpenAI and llama-server do; a seed stays reproducible', async () => {
  const body = { text_input: 'The', max_tokens: 24, temperature: 1, ignore_eos: true };
  // Sent together at the start of a wall-clock second, so that a seed taken from the current second (node-llama-cpp's
  // default) would be the same for all four. With fresh seeds, all four texts are equal only if three independent
  // draws of 24 tokens each repeat the first: even at a 1-in-2 chance per token (the tiny model's random weights
  // over a 32k vocabulary give far less), 2^-72.
  await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000)));
  const texts = await Promise.all([1, 2, 3, 4].map(async () => (await generate(body)).json().text_output as string));
  assert.ok(new Set(texts).size >= 2, `four requests without a seed gave the same text: ${JSON.stringify(texts[0])}`);
  // One after the other: a seed promises the same text to a request generated alone (see docs/llm-serving.md).
  const seeded = async () => (await generate({ ...body, seed: 99 })).json().text_output as string;
  assert.equal(await seeded(), await seeded());
});

test('the whole vocabulary (top_k 0, OpenAI\'s default) costs about the CPU of top_k 40, not a sort of every token', async () => {
  // CPU of this process (server and client) per generated token, both settings measured in alternating rounds
  // of the same test, so that a busy machine weighs on both alike. Sorting the 32k vocabulary on every token cost
  // 3-4x top_k 40's CPU per token; drawing unsorted, as llama-server does, costs about the same as top_k 40.
  const cpuPerToken = async (topK: number): Promise<number> => {
    const before = process.cpuUsage();
    const j = (await generate({ text_input: 'Story', max_tokens: 160, temperature: 1, top_p: 1, top_k: topK, ignore_eos: true })).json();
    const used = process.cpuUsage(before);
    assert.equal(j.completion_tokens, 160);
    return (used.user + used.system) / 160;
  };
  await cpuPerToken(0); // warm-up
  const whole: number[] = [];
  const top40: number[] = [];
  for (let i = 0; i < 3; i++) {
    whole.push(await cpuPerToken(0));
    top40.push(await cpuPerToken(40));
  }
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const ratio = sum(whole) / sum(top40);
  assert.ok(ratio < 2, `the whole vocabulary cost ${ratio.toFixed(2)}x top_k 40's CPU per token`);
});

test('max_tokens: generation stops at the count asked for', async () => {
  for (const n of [1, 5]) {
    const j = (await generate({ text_input: 'Hello', max_tokens: n, seed: 1, ignore_eos: true })).json();
    assert.equal(j.completion_tokens, n);
    assert.equal(j.finish_reason, 'length');
  }
});

test('ignore_eos: a prompt the model ends early still gets every token asked for', async () => {
  // With these settings the tiny model draws its end-of-sequence token after two tokens.
  const body = { text_input: 'Story 3', max_tokens: 64, temperature: 1, top_k: 40, top_p: 0.95, seed: 3 };
  const ended = (await generate(body)).json();
  assert.equal(ended.finish_reason, 'stop');
  assert.ok(ended.completion_tokens < 10, `completion_tokens ${ended.completion_tokens}`);
  const full = (await generate({ ...body, ignore_eos: true })).json();
  assert.equal(full.finish_reason, 'length');
  assert.equal(full.completion_tokens, 64);
});

test('stop: the text ends before the first stop string, finish_reason stop', async () => {
  const base = { text_input: 'Hello', max_tokens: 24, seed: 5, temperature: 1, ignore_eos: true };
  const full = (await generate(base)).json().text_output as string;
  // A stop string from the middle of the text the same seed gives without it.
  const at = Math.floor(full.length / 2);
  const stop = full.slice(at, at + 2);
  const expected = full.slice(0, full.indexOf(stop));
  const r = (await generate({ ...base, stop })).json();
  assert.equal(r.finish_reason, 'stop');
  assert.equal(r.text_output, expected);
  const list = (await generate({ ...base, stop: JSON.stringify(['\u0000never', stop]) })).json();
  assert.equal(list.text_output, expected);
});

test('chat: the messages parameter goes through the GGUF chat template', async () => {
  const messages = JSON.stringify([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }]);
  const j = (await generate({ text_input: '', parameters: { messages, max_tokens: 4, seed: 2, ignore_eos: true } })).json();
  assert.equal(j.completion_tokens, 4);
  // ChatML wraps each turn in <|im_start|> … <|im_end|>, so the prompt is far longer than the two words.
  assert.ok(j.prompt_tokens > 15, `prompt_tokens ${j.prompt_tokens}`);
});

test('two streams at once both complete', async () => {
  const body = { text_input: 'Two at once', max_tokens: 40, stream: true, ignore_eos: true };
  const [a, b] = await Promise.all([generateStream({ ...body, seed: 1 }), generateStream({ ...body, seed: 2 })]);
  for (const r of [a, b]) {
    const ev = events(r.body.toString());
    assert.equal(ev.at(-1).completion_tokens, 40);
  }
});

test('bad input is refused with 400 before any generation', async () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ text_input: '' }, /empty/],
    [{ text_input: 'x', max_tokens: -1 }, /max_tokens/],
    [{ text_input: 'x', max_tokens: 0 }, /max_tokens/],
    [{ text_input: 'x', max_tokens: 1_000_000 }, /context holds 1024 tokens/],
    [{ text_input: 'x', temperature: 'hot' }, /temperature/],
    [{ text_input: 'x', top_p: 3 }, /top_p/],
    [{ text_input: 'x', stream: 'yes' }, /stream/],
    [{ text_input: 'x', stop: JSON.stringify(['a', 'b', 'c', 'd', 'e']) }, /stop/],
    [{ text_input: '', messages: 'not json' }, /messages.*JSON/],
    [{ text_input: '', messages: '[]' }, /non-empty/],
    [{ text_input: '', messages: '[{"role":"robot","content":"x"}]' }, /role/],
    [{ text_input: '', messages: '[{"role":"user"}]' }, /content/],
  ];
  for (const [body, message] of cases) {
    const r = await generate(body);
    assert.equal(r.status, 400, `${JSON.stringify(body)} → ${r.status} ${r.body.toString()}`);
    assert.match(r.json().error, message);
  }
  const unknown = await postJson(`${s.url}/v2/models/no_such_llm/generate`, { text_input: 'x' });
  assert.equal(unknown.status, 400);
});

test('KServe infer refuses the decoupled text model, as Triton does: generate is the way', async () => {
  const r = await postJson(`${s.url}/v2/models/tiny_llm/infer`, { inputs: [{ name: 'text_input', shape: [1], datatype: 'BYTES', data: ['Hello'] }] });
  assert.equal(r.status, 501);
  assert.match(r.json().error, /decoupled/);
});

test('a text model that is not decoupled answers KServe infer with the whole text, stream or not', async () => {
  const repo = await tempRepository([{ from: join(EXAMPLES, 'tiny_llm'), name: 'tiny_llm_whole' }]);
  const config = join(repo.dir, 'tiny_llm_whole', 'config.pbtxt');
  await writeFile(config, (await readFile(config, 'utf8')).replace('name: "tiny_llm"', 'name: "tiny_llm_whole"').replace('decoupled: True', 'decoupled: False'));
  const whole = await startTestServer({ modelRepositories: [repo.dir] });
  try {
    for (const stream of [false, true]) {
      const r = await postJson(`${whole.url}/v2/models/tiny_llm_whole/infer`, {
        inputs: [{ name: 'text_input', shape: [1], datatype: 'BYTES', data: ['Hello'] }],
        parameters: { max_tokens: 5, seed: 1, ignore_eos: true, stream },
      });
      assert.equal(r.status, 200, r.body.toString());
      const j = r.json();
      assert.ok(j.outputs[0].data[0].length > 0);
      assert.equal(j.parameters.completion_tokens, 5);
      assert.equal(j.parameters.finish_reason, 'length');
    }
  } finally {
    await whole.close();
    await repo.remove();
  }
});

test('a text model that is not decoupled generates concurrent requests together, up to its sequences', async () => {
  const repo = await tempRepository([{ from: join(EXAMPLES, 'tiny_llm'), name: 'tiny_llm_whole' }]);
  const config = join(repo.dir, 'tiny_llm_whole', 'config.pbtxt');
  await writeFile(config, (await readFile(config, 'utf8')).replace('name: "tiny_llm"', 'name: "tiny_llm_whole"').replace('decoupled: True', 'decoupled: False'));
  const whole = await startTestServer({ modelRepositories: [repo.dir] });
  try {
    const ask = async (seed: number): Promise<number> => {
      const r = await postJson(`${whole.url}/v2/models/tiny_llm_whole/generate`, { text_input: `Story ${seed}`, max_tokens: 128, seed, ignore_eos: true });
      assert.equal(r.json().completion_tokens, 128);
      return performance.now();
    };
    const t0 = performance.now();
    const alone = (await ask(9)) - t0;
    // Four at once (the config's parallel): generated together, they end in the same batch, a few ms apart; one
    // after another, the last would end about three times one request's time after the first.
    const ends = await Promise.all([1, 2, 3, 4].map(ask));
    const spread = Math.max(...ends) - Math.min(...ends);
    assert.ok(spread < alone / 2, `four requests ended ${spread.toFixed(0)} ms apart; one alone takes ${alone.toFixed(0)} ms`);
  } finally {
    await whole.close();
    await repo.remove();
  }
});

// The instance itself, to see its sequences and its context's batches.
async function loadInstance(): Promise<LlamaInstance> {
  const dir = join(EXAMPLES, 'tiny_llm');
  const config = parseModelConfig(readFileSync(join(dir, 'config.pbtxt'), 'utf8'), 'config.pbtxt');
  const logger = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
  return await llamaCppBackend.createInstance({
    name: 'tiny_llm', modelDir: dir, versionDir: join(dir, '1'), backendConfig: {}, version: 1, config,
    instanceName: 'tiny_llm_0', kind: 'KIND_CPU', logger,
  }) as LlamaInstance;
}

test('concurrent requests decode together: one llama.cpp batch per generated token, as llama-server\'s slots', async () => {
  const instance = await loadInstance();
  try {
    // Counts the context's decodes (node-llama-cpp's binding of llama_decode).
    const context = (instance as unknown as { context: { _ctx: Record<string, unknown> } }).context;
    let decodes = 0;
    const native = context._ctx;
    context._ctx = new Proxy(native, {
      get(target, key) {
        const v = target[key as string];
        if (key === 'decodeBatch') decodes++;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const tokens = 48;
    const answers: Promise<Parameters | undefined>[] = [];
    const requests: BackendRequest[] = [1, 2, 3, 4].map((seed) => {
      let done!: (p: Parameters | undefined) => void;
      let failed!: (e: NereidError) => void;
      answers.push(new Promise((resolve, reject) => ((done = resolve), (failed = reject))));
      const input: Tensor = { name: 'text_input', datatype: 'BYTES', shape: [1], data: [Buffer.from(`Story ${seed}`)] };
      return {
        inputs: [input], outputs: ['text_output'], parameters: { max_tokens: tokens, seed, ignore_eos: true },
        sender: { send: (_o, final, parameters) => final && done(parameters), fail: (e) => failed(e) },
      };
    });
    await instance.execute(requests);
    for (const p of await Promise.all(answers)) assert.equal(p?.completion_tokens, tokens);
    // The four prompts, then a token for all four per batch (the last token drawn is never decoded): 48.
    // Batches that each missed a sequence made 64 to 66 here.
    assert.ok(decodes <= tokens + 4, `${decodes} batches for 4 × ${tokens} tokens`);
  } finally {
    await instance.close();
  }
});

// A request cancelled mid-stream stops generating and gives its sequence back.
test('a cancelled request stops generating and frees its sequence', async () => {
  const instance = await loadInstance();
  try {
    const ac = new AbortController();
    let pieces = 0;
    const failed = new Promise<NereidError>((resolve, reject) => {
      const input: Tensor = { name: 'text_input', datatype: 'BYTES', shape: [1], data: [Buffer.from('Go on')] };
      const parameters: Parameters = { max_tokens: 1000, stream: true, ignore_eos: true };
      const request: BackendRequest = {
        inputs: [input], outputs: ['text_output'], parameters, signal: ac.signal,
        sender: {
          send: (_outputs, final) => {
            if (final) reject(new Error('the request finished instead of stopping'));
            if (++pieces === 3) ac.abort();
          },
          fail: resolve,
        },
      };
      void instance.execute([request]);
    });
    const error = await failed;
    assert.equal(error.code, 'CANCELLED');
    assert.ok(pieces < 100, `${pieces} pieces were sent after the cancel`);
    // The sequence is cleared, then given back.
    for (let i = 0; i < 100 && instance.busySequences > 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(instance.busySequences, 0);
  } finally {
    await instance.close();
  }
});

// Log probabilities are asked of llama.cpp only for a request that wants them (token-logprobs.ts).
test('only a request with logprobs asks llama.cpp for probabilities; its sequence forgets it once released', async () => {
  const instance = await loadInstance();
  try {
    // What each draw asks of node-llama-cpp's binding: sampleToken(index, sampler, probabilities, confidence).
    const context = (instance as unknown as { context: { _ctx: Record<string, unknown> } }).context;
    const asked: boolean[] = [];
    const native = context._ctx;
    context._ctx = new Proxy(native, {
      get(target, key) {
        const v = target[key as string] as (...a: unknown[]) => unknown;
        if (key !== 'sampleToken') return typeof v === 'function' ? v.bind(target) : v;
        return (...a: unknown[]) => {
          asked.push(a[2] === true || a[3] === true);
          return v.apply(target, a);
        };
      },
    });
    const run = (parameters: Parameters): Promise<Parameters | undefined> => new Promise((resolve, reject) => {
      const input: Tensor = { name: 'text_input', datatype: 'BYTES', shape: [1], data: [Buffer.from('Once upon a time')] };
      void instance.execute([{
        inputs: [input], outputs: ['text_output'], parameters: { max_tokens: 4, ignore_eos: true, seed: 1, ...parameters },
        sender: { send: (_o, final, p) => final && resolve(p), fail: reject },
      }]);
    });
    const figures = JSON.parse(String((await run({ logprobs: true, top_logprobs: 2 }))?.['logprobs'])) as unknown[];
    assert.equal(figures.length, 4);
    assert.deepEqual(asked, [true, true, true, true]);
    asked.length = 0;
    // Every sequence, the one just used included, samples plainly again.
    const plain = await Promise.all([1, 2, 3, 4].map(() => run({})));
    for (const p of plain) assert.equal(p?.['logprobs'], undefined);
    assert.deepEqual(asked, new Array(16).fill(false));
  } finally {
    await instance.close();
  }
});

// The choices of one OpenAI request (n) share the prompt's evaluation (prompt-sharing.ts).
test('choices of one request (nereid_choices) evaluate their prompt once: the others copy its KV cache', async () => {
  const instance = await loadInstance();
  try {
    // Counts the tokens put into the context's batches (node-llama-cpp's binding of llama_batch_add).
    const context = (instance as unknown as { context: { _ctx: Record<string, unknown> } }).context;
    let added = 0;
    const native = context._ctx;
    context._ctx = new Proxy(native, {
      get(target, key) {
        const v = target[key as string] as (...a: unknown[]) => unknown;
        if (key !== 'addToBatch') return typeof v === 'function' ? v.bind(target) : v;
        return (...a: unknown[]) => {
          added += (a[2] as Uint32Array).length;
          return v.apply(target, a);
        };
      },
    });
    const evaluated = (): number => added;
    const prompt = 'Once upon a time there was a story that went on and on. '.repeat(12);
    const choices = async (parameters: Parameters): Promise<{ tokens: number; prompt: number; texts: string[] }> => {
      // Sequences go back to the pool just after their answers: wait for all, so that each choice finds one free.
      while (instance.busySequences > 0) await new Promise((r) => setTimeout(r, 10));
      const before = evaluated();
      const answers = await Promise.all([0, 1, 2].map((i) => new Promise<{ p: Parameters | undefined; text: string }>((resolve, reject) => {
        const input: Tensor = { name: 'text_input', datatype: 'BYTES', shape: [1], data: [Buffer.from(prompt)] };
        void instance.execute([{
          inputs: [input], outputs: ['text_output'], parameters: { max_tokens: 3, ignore_eos: true, temperature: 0, seed: i, ...parameters },
          sender: { send: (o, final, p) => final && resolve({ p, text: Buffer.from((o[0] as Tensor & { data: Uint8Array[] }).data[0]!).toString() }), fail: reject },
        }]);
      })));
      for (const a of answers) assert.equal(a.p?.['completion_tokens'], 3);
      return { tokens: evaluated() - before, prompt: answers[0]!.p!['prompt_tokens'] as number, texts: answers.map((a) => a.text) };
    };
    const apart = await choices({});
    const shared = await choices({ nereid_choices: 'one request' });
    assert.ok(apart.prompt > 100, `${apart.prompt} prompt tokens`);
    // Apart: three prompts and two tokens each (the last drawn is never evaluated); shared: one prompt, then for
    // each choice its prompt's last token and two more.
    assert.ok(apart.tokens >= 3 * apart.prompt, `apart: ${apart.tokens} tokens evaluated for 3 × ${apart.prompt}`);
    assert.ok(shared.tokens <= apart.prompt + 3 * 3, `shared: ${shared.tokens} tokens evaluated for 3 × ${apart.prompt}`);
    // The copied cache is the prompt's: greedy choices write what they write without it.
    assert.deepEqual(shared.texts, apart.texts);
  } finally {
    await instance.close();
  }
});
