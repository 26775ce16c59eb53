import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import type { ChatCompletionChunk, ChatCompletionTool } from 'openai/resources/chat/completions';
import { Ajv } from 'ajv';
import { EXAMPLES } from '../../helpers/paths.js';
import { postJson } from '../../helpers/http.js';
import { openAiUrl, spawnServer, type ServerProcess } from '../../helpers/server.js';

// Tool calls with the official openai client against `nereid serve` and the example tiny_llm (random weights,
// real llama.cpp). The functions are rendered by the model's chat wrapper in its function-calling syntax; a
// forced call (tool_choice "required" or a named function) starts in that syntax and its parameters are held
// to their schema by a grammar, so whatever gibberish the model prefers, every call parses and validates.

let p: ServerProcess;
let client: OpenAI;
let base: string;
before(async () => {
  p = await spawnServer(['--model-repository', EXAMPLES, '--model-control-mode=explicit', '--load-model=tiny_llm', '--openai-port=0', '--openai-address=127.0.0.1']);
  const openai = await openAiUrl(p);
  base = `${openai}/v1`;
  client = new OpenAI({ baseURL: base, apiKey: 'unused', maxRetries: 0 });
});
after(async () => {
  p.child.kill('SIGTERM');
  await p.exited;
});

// Small enumerations: node-llama-cpp's number grammar lets a model that writes at random give 1e999 or, for an
// integer, 1e-5 (which its own check of the call then refuses).
const ADD = { type: 'object', properties: { a: { type: 'integer', enum: [1, 2, 3] }, b: { type: 'integer', enum: [1, 2, 3] } }, required: ['a', 'b'], additionalProperties: false } as const;
const WEATHER = { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Oslo'] }, celsius: { type: 'boolean' } }, required: ['city', 'celsius'], additionalProperties: false } as const;
const TOOLS: ChatCompletionTool[] = [
  { type: 'function', function: { name: 'add', description: 'Adds two integers', parameters: ADD, strict: true } },
  { type: 'function', function: { name: 'weather', description: 'The weather in a city', parameters: WEATHER } },
];
const ajv = new Ajv();
const validate: Record<string, ReturnType<Ajv['compile']>> = { add: ajv.compile(ADD), weather: ajv.compile(WEATHER) };
const messages = [{ role: 'user' as const, content: 'What is 2 plus 3, and is it warm in Paris?' }];

function checkCall(call: { id: string; type: string; function: { name: string; arguments: string } }, names = ['add', 'weather']): void {
  assert.match(call.id, /^call_[A-Za-z0-9]{24}$/);
  assert.equal(call.type, 'function');
  assert.ok(names.includes(call.function.name), call.function.name);
  const args: unknown = JSON.parse(call.function.arguments);
  assert.ok(validate[call.function.name]!(args), `${call.function.arguments} ${JSON.stringify(validate[call.function.name]!.errors)}`);
}

test('the SDK\'s runTools: the named function is called with arguments its schema accepts; its result goes back and the model answers', async () => {
  const seen: unknown[] = [];
  const runner = client.chat.completions.runTools({
    model: 'tiny_llm', messages, max_tokens: 200, seed: 1,
    tool_choice: { type: 'function', function: { name: 'add' } },
    tools: [{ type: 'function', function: { name: 'add', description: 'Adds two integers', parameters: ADD as unknown as Record<string, unknown>, parse: (text: string) => JSON.parse(text) as { a: number; b: number }, function: (args: { a: number; b: number }) => {
      seen.push(args);
      return { sum: args.a + args.b };
    } } }],
  });
  await runner.done();
  assert.equal(seen.length, 1);
  assert.ok(validate['add']!(seen[0]), JSON.stringify(seen[0]));
  const history = runner.messages;
  const call = history.find((m) => m.role === 'assistant') as { tool_calls: { id: string; type: string; function: { name: string; arguments: string } }[]; content: unknown };
  assert.equal(call.content, null);
  checkCall(call.tool_calls[0]!, ['add']);
  const result = history.at(-1) as { role: string; tool_call_id: string; content: string };
  assert.deepEqual({ role: result.role, id: result.tool_call_id }, { role: 'tool', id: call.tool_calls[0]!.id });
  // The answer, with the call and its result in the conversation: text, no further call.
  const answer = await client.chat.completions.create({ model: 'tiny_llm', messages: history, tools: TOOLS, tool_choice: 'none', max_tokens: 8, seed: 1 });
  const choice = answer.choices[0]!;
  assert.equal(typeof choice.message.content, 'string');
  assert.equal(choice.message.tool_calls, undefined);
  assert.ok(['stop', 'length'].includes(choice.finish_reason), choice.finish_reason);
  // The call and the tool's result were in the prompt the model read.
  const plain = await client.chat.completions.create({ model: 'tiny_llm', messages, tool_choice: 'none', tools: TOOLS, max_tokens: 1 });
  assert.ok(answer.usage!.prompt_tokens > plain.usage!.prompt_tokens, `${answer.usage!.prompt_tokens} ${plain.usage!.prompt_tokens}`);
});

test('tool_choice required: every answer, whole or streamed, is calls that validate, finish_reason tool_calls', async () => {
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.create({ model: 'tiny_llm', messages, tools: TOOLS, tool_choice: 'required', max_tokens: 200, seed });
    const c = r.choices[0]!;
    assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c));
    assert.equal(c.message.content, null);
    assert.ok(c.message.tool_calls!.length >= 1);
    for (const call of c.message.tool_calls!) checkCall(call as Parameters<typeof checkCall>[0]);
    // The SDK's stream helper assembles the streamed pieces into the same kind of message.
    const stream = client.chat.completions.stream({ model: 'tiny_llm', messages, tools: TOOLS, tool_choice: 'required', max_tokens: 200, seed });
    const whole = await stream.finalChatCompletion();
    assert.equal(whole.choices[0]!.finish_reason, 'tool_calls');
    for (const call of whole.choices[0]!.message.tool_calls!) checkCall(call as Parameters<typeof checkCall>[0]);
    // The same draw: the same calls, arguments included (ids are new each time).
    const fns = (calls: unknown[] | undefined): unknown[] => (calls ?? []).map((t) => {
      const { name, arguments: args } = (t as { function: { name: string; arguments: string } }).function;
      return { name, args };
    });
    assert.deepEqual(fns(whole.choices[0]!.message.tool_calls), fns(c.message.tool_calls));
  }
});

test('streamed tool calls are in OpenAI\'s chunk shape: the first piece names the call, later ones carry arguments', async () => {
  const chunks: ChatCompletionChunk[] = [];
  const stream = await client.chat.completions.create({ model: 'tiny_llm', messages, tools: TOOLS, tool_choice: { type: 'function', function: { name: 'weather' } }, max_tokens: 200, seed: 4, stream: true });
  for await (const chunk of stream) chunks.push(chunk);
  assert.deepEqual(chunks[0]!.choices[0]!.delta, { role: 'assistant', content: '' });
  const deltas = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
  assert.ok(deltas.length >= 2, JSON.stringify(deltas));
  const [first, ...rest] = deltas;
  assert.deepEqual(Object.keys(first!).sort(), ['function', 'id', 'index', 'type']);
  assert.deepEqual({ ...first, id: 'x' }, { index: 0, id: 'x', type: 'function', function: { name: 'weather', arguments: '' } });
  for (const d of rest) {
    assert.deepEqual(Object.keys(d).sort(), ['function', 'index']);
    assert.deepEqual(Object.keys(d.function!), ['arguments']);
  }
  checkCall({ id: first!.id!, type: 'function', function: { name: 'weather', arguments: rest.map((d) => d.function!.arguments).join('') } }, ['weather']);
  const last = chunks.at(-1)!.choices[0]!;
  assert.deepEqual({ delta: last.delta, finish: last.finish_reason }, { delta: {}, finish: 'tool_calls' });
  // Only the tool's pieces: a forced call writes no text.
  assert.equal(chunks.some((c) => (c.choices[0]?.delta.content ?? '') !== ''), false);
});

test('a named function is the one called; parallel_tool_calls false makes one call', async () => {
  for (const seed of [5, 6]) {
    const r = await client.chat.completions.create({ model: 'tiny_llm', messages, tools: TOOLS, tool_choice: { type: 'function', function: { name: 'add' } }, parallel_tool_calls: false, max_tokens: 200, seed });
    const c = r.choices[0]!;
    assert.equal(c.finish_reason, 'tool_calls');
    assert.equal(c.message.tool_calls!.length, 1);
    checkCall(c.message.tool_calls![0] as Parameters<typeof checkCall>[0], ['add']);
  }
});

test('tool_choice none renders no functions and answers text; auto documents them in the prompt', async () => {
  const none = await client.chat.completions.create({ model: 'tiny_llm', messages, tools: TOOLS, tool_choice: 'none', max_tokens: 4, seed: 1 });
  const bare = await client.chat.completions.create({ model: 'tiny_llm', messages, max_tokens: 4, seed: 1 });
  assert.equal(none.usage!.prompt_tokens, bare.usage!.prompt_tokens);
  assert.equal(none.choices[0]!.message.content, bare.choices[0]!.message.content);
  assert.equal(none.choices[0]!.message.tool_calls, undefined);
  const auto = await client.chat.completions.create({ model: 'tiny_llm', messages, tools: TOOLS, max_tokens: 4, seed: 1 });
  assert.ok(auto.usage!.prompt_tokens > bare.usage!.prompt_tokens + 20, `${auto.usage!.prompt_tokens} ${bare.usage!.prompt_tokens}`);
});

test('bad tool definitions and choices are refused 400 naming the field', async () => {
  const refused = async (body: Record<string, unknown>, param: string, words: RegExp): Promise<void> => {
    const r = await postJson(`${base}/chat/completions`, { model: 'tiny_llm', messages, max_tokens: 4, ...body });
    assert.equal(r.status, 400, r.body.toString());
    const e = r.json().error;
    assert.equal(e.param, param, r.body.toString());
    assert.match(e.message, words);
  };
  await refused({ tools: [{ type: 'retrieval' }] }, 'tools[0].type', /'function'/);
  await refused({ tools: [{ type: 'function', function: { name: 'has space' } }] }, 'tools[0].function.name', /letters, digits/);
  await refused({ tools: [{ type: 'function', function: { name: 'f', parameters: 'x' } }] }, 'tools[0].function.parameters', /JSON Schema/);
  await refused({ tools: TOOLS, tool_choice: { type: 'function', function: { name: 'nope' } } }, 'tool_choice', /"nope"/);
  await refused({ tools: TOOLS, tool_choice: 'sometimes' }, 'tool_choice', /none, auto, required/);
  await refused({ tool_choice: 'required' }, 'tool_choice', /only allowed when tools/);
  await refused({ tools: TOOLS, parallel_tool_calls: 'yes' }, 'parallel_tool_calls', /boolean/);
  await refused({ messages: [{ role: 'tool', content: '4' }] }, 'messages[0].tool_call_id', /required/);
  // A tool message must answer a call an earlier assistant message made.
  const stray = await postJson(`${base}/chat/completions`, { model: 'tiny_llm', max_tokens: 4, messages: [...messages, { role: 'tool', tool_call_id: 'call_x', content: '5' }] });
  assert.equal(stray.status, 400, stray.body.toString());
  assert.match(stray.json().error.message, /"call_x", which no earlier assistant message made/);
  // The model's backend refuses a schema keyword its grammar cannot honour, naming it and the tool.
  const r = await postJson(`${base}/chat/completions`, { model: 'tiny_llm', messages, max_tokens: 4, tool_choice: 'required',
    tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { s: { type: 'string', pattern: '^a' } } } } }] });
  assert.equal(r.status, 400, r.body.toString());
  assert.match(r.json().error.message, /tools\[0\]\.function\.parameters: .*'pattern' at #\/properties\/s/);
  // So does the SDK, as its BadRequestError.
  await assert.rejects(client.chat.completions.create({ model: 'tiny_llm', messages, tools: [{ type: 'function', function: { name: 'bad name' } }] }),
    (e: unknown) => e instanceof OpenAI.BadRequestError && (e.error as { param?: string }).param === 'tools[0].function.name');
});

test('generate (Triton\'s extension) gives a chat\'s calls as the response parameter tool_calls', async () => {
  const http = p.url;
  const r = await postJson(`${http}/v2/models/tiny_llm/generate`, {
    text_input: '', messages: JSON.stringify(messages), tools: JSON.stringify(TOOLS), tool_choice: 'required', parallel_tool_calls: false, max_tokens: 200, seed: 1,
  });
  assert.equal(r.status, 200, r.body.toString());
  const out = r.json();
  assert.equal(out.finish_reason, 'tool_calls');
  assert.equal(out.text_output, '');
  const calls = JSON.parse(out.tool_calls);
  assert.equal(calls.length, 1);
  checkCall(calls[0]);
});

test('a client that leaves a streamed call mid-way cancels it: counted as a failure, its sequence free for the next requests', async () => {
  const stats = async (): Promise<{ fail: number; success: number }> => {
    const r = await fetch(`${p.url}/v2/models/tiny_llm/stats`).then((x) => x.json()) as any;
    const s = r.model_stats[0].inference_stats;
    return { fail: s.fail.count, success: s.success.count };
  };
  const before = await stats();
  // A string parameter the model fills with gibberish until max_tokens: the call is still being written when the client leaves.
  const note: ChatCompletionTool = { type: 'function', function: { name: 'note', parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } } };
  await Promise.all([1, 2, 3, 4].map(async (seed) => {
    const stream = await client.chat.completions.create({ model: 'tiny_llm', messages, tools: [note], tool_choice: 'required', max_tokens: 600, seed, stream: true });
    let pieces = 0;
    // Leaving the loop ends the SDK's stream, which closes the connection.
    for await (const chunk of stream) {
      if ((chunk.choices[0]?.delta.tool_calls?.length ?? 0) > 0 && ++pieces === 3) break;
    }
    assert.equal(pieces, 3);
  }));
  // Four sequences, all free again: four requests that need one each complete.
  const next = await Promise.all([1, 2, 3, 4].map((seed) => client.chat.completions.create({ model: 'tiny_llm', messages, max_tokens: 2, seed })));
  for (const r of next) assert.ok(r.usage!.completion_tokens <= 2);
  let now = await stats();
  for (let i = 0; i < 50 && now.fail - before.fail < 4; i++) {
    await new Promise((r) => setTimeout(r, 20));
    now = await stats();
  }
  assert.deepEqual({ fail: now.fail - before.fail, success: now.success - before.success }, { fail: 4, success: 4 });
});

test('a forced call must fit the context with its prefix: refused up front as context_length_exceeded, never cut short', async () => {
  const note: ChatCompletionTool = { type: 'function', function: { name: 'note', parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } } };
  const ask = (max: number): ReturnType<typeof postJson> => postJson(`${base}/chat/completions`, { model: 'tiny_llm', messages, tools: [note], tool_choice: 'required', max_tokens: max, seed: 1 });
  const prompt = (await ask(1)).json().usage.prompt_tokens as number;
  // tiny_llm's context holds 1024 tokens; the call prefix the answer starts with takes a few of them.
  const over = await ask(1024 - prompt);
  assert.equal(over.status, 400, over.body.toString());
  assert.deepEqual([over.json().error.code, over.json().error.param], ['context_length_exceeded', 'messages']);
  const fits = await ask(1024 - prompt - 16);
  assert.equal(fits.status, 200, fits.body.toString());
  assert.equal(fits.json().choices[0].finish_reason, 'length');
});
