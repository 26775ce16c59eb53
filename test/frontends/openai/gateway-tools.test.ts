import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import type { ChatCompletionChunk, ChatCompletionTool } from 'openai/resources/chat/completions';
import { startOpenAiFrontend, type OpenAiFrontend } from '../../../src/frontends/openai/server.js';
import { createLogger } from '../../../src/observability/logger.js';
import { postJson } from '../../helpers/http.js';
import { LLAMA_MODEL, llamaServer } from '../../helpers/llama-server.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';

// Tool calls through the gateway backend ("openai"): tools, tool_choice and parallel_tool_calls go to the
// engine as the client sent them, and the engine's calls come back in OpenAI's shape, whole and streamed. The
// engine here is a stand-in that answers as an OpenAI-compatible engine does (a call while the conversation
// ends with the user, an answer once it ends with the tool's result): llama-server leaves tools out for the
// example tiny_llm, whose chat template has no place for them, and a random-weight model would not call one.
// Last, llama-server itself, given a chat template that renders tools: they reach it and it renders them.

const CALL = { id: 'call_engine0000000000000001', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":3}' } };
/** How the engine streams that call: named with empty arguments first, then the arguments in two pieces. */
const PIECES = [
  { index: 0, id: CALL.id, type: 'function', function: { name: 'add', arguments: '' } },
  { index: 0, function: { arguments: '{"a":2,' } },
  { index: 0, function: { arguments: '"b":3}' } },
];
/** A second call, which the engine makes after some text when the user says TWO. */
const CALL2 = { id: 'call_engine0000000000000002', type: 'function', function: { name: 'add', arguments: '{"a":1,"b":1}' } };
const TWO = 'Add twice';
const TOOLS: ChatCompletionTool[] = [{ type: 'function', function: { name: 'add', description: 'Adds two numbers', parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] } } }];
const messages = [{ role: 'user' as const, content: 'What is 2 plus 3?' }];

const { bin, skip, missing } = llamaServer();
let llama: ChildProcess | undefined;
let llamaPort = 0;
/**
 * tiny_llm's ChatML with a place for tools and calls (Hermes-style <tool_call> tags), so that llama-server's
 * --jinja path renders the tools a request sends.
 */
const TOOL_TEMPLATE = `{%- if tools %}<|im_start|>system
{% if messages[0].role == 'system' %}{{ messages[0].content }}

{% endif %}Functions you may call:
<tools>
{% for tool in tools %}{{ tool | tojson }}
{% endfor %}</tools>
A call is written <tool_call>{"name": <name>, "arguments": <arguments>}</tool_call><|im_end|>
{% elif messages[0].role == 'system' %}<|im_start|>system
{{ messages[0].content }}<|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == 'system' and loop.first %}
{%- elif message.role == 'assistant' and message.tool_calls %}<|im_start|>assistant
{% if message.content %}{{ message.content }}{% endif %}
{%- for tc in message.tool_calls %}<tool_call>
{"name": "{{ tc.function.name }}", "arguments": {{ tc.function.arguments | tojson }}}
</tool_call>{% endfor %}<|im_end|>
{% elif message.role == 'tool' %}<|im_start|>user
<tool_response>
{{ message.content }}
</tool_response><|im_end|>
{% else %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}`;

async function startLlama(dir: string): Promise<void> {
  if (skip) return;
  if (missing) throw new Error(missing);
  const probe = createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => probe.once('listening', resolve));
  llamaPort = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  await writeFile(join(dir, 'tools.jinja'), TOOL_TEMPLATE);
  llama = spawn(bin, ['-m', LLAMA_MODEL, '--host', '127.0.0.1', '--port', String(llamaPort), '-t', '1', '-c', '1024', '-np', '1', '--no-webui', '--no-warmup',
    '--jinja', '--chat-template-file', join(dir, 'tools.jinja')], { stdio: 'ignore' });
  for (let i = 0; !(await fetch(`http://127.0.0.1:${llamaPort}/health`).then((r) => r.ok, () => false)); i++) {
    if (i > 200) throw new Error('llama-server did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  await mkdir(join(dir, 'llama_llm', '1'), { recursive: true });
  await writeFile(join(dir, 'llama_llm', 'config.pbtxt'), `backend: "openai"
max_batch_size: 0
input [ { name: "text_input" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "text_output" data_type: TYPE_STRING dims: [ -1 ] } ]
parameters { key: "base_url" value { string_value: "http://127.0.0.1:${llamaPort}" } }
parameters { key: "model_id" value { string_value: "tiny" } }
`);
}

let engine: Server;
/** The bodies the engine received, latest last. */
const received: Record<string, any>[] = [];
let s: TestServer;
let openai: OpenAiFrontend;
let repo: string;
let client: OpenAI;
let base: string;

function answer(req: IncomingMessage, res: ServerResponse, body: Record<string, any>): void {
  received.push(body);
  const calling = body.messages.at(-1).role !== 'tool';
  if (body.messages.at(-1).content === 'broken') {
    // A call with neither index, id nor name.
    res.writeHead(200, { 'content-type': body.stream ? 'text/event-stream' : 'application/json' });
    const choice = body.stream ? { index: 0, delta: { tool_calls: [{ type: 'function' }] } } : { index: 0, message: { role: 'assistant', content: null, tool_calls: [{ type: 'function' }] } };
    return void res.end(body.stream ? `data: ${JSON.stringify({ choices: [choice] })}\n\ndata: [DONE]\n\n` : JSON.stringify({ choices: [choice] }));
  }
  const head = { id: 'chatcmpl-engine', created: 1, model: body.model };
  if (body.messages.at(-1).content === TWO) return twoCalls(res, body, head);
  const usage = { prompt_tokens: 20, completion_tokens: 7, total_tokens: 27 };
  if (!body.stream) {
    const message = calling ? { role: 'assistant', content: null, tool_calls: [CALL] } : { role: 'assistant', content: 'It is 5.' };
    res.writeHead(200, { 'content-type': 'application/json' });
    return void res.end(JSON.stringify({ ...head, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: calling ? 'tool_calls' : 'stop' }], usage }));
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const chunk = (delta: unknown, finish: string | null = null): void => void res.write(`data: ${JSON.stringify({ ...head, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
  chunk({ role: 'assistant', content: null });
  if (calling) for (const p of PIECES) chunk({ tool_calls: [p] });
  else chunk({ content: 'It is 5.' });
  chunk({}, calling ? 'tool_calls' : 'stop');
  res.write(`data: ${JSON.stringify({ ...head, object: 'chat.completion.chunk', choices: [], usage })}\n\n`);
  res.end('data: [DONE]\n\n');
}

/** Text, then two calls: whole, or streamed as the text, the first call's pieces, then the second call whole in one piece. */
function twoCalls(res: ServerResponse, body: Record<string, any>, head: Record<string, unknown>): void {
  const usage = { prompt_tokens: 20, completion_tokens: 9, total_tokens: 29 };
  if (!body.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    const message = { role: 'assistant', content: 'Sure.', tool_calls: [CALL, CALL2] };
    return void res.end(JSON.stringify({ ...head, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: 'tool_calls' }], usage }));
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const chunk = (delta: unknown, finish: string | null = null): void => void res.write(`data: ${JSON.stringify({ ...head, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
  chunk({ role: 'assistant', content: 'Sure.' });
  for (const p of PIECES) chunk({ tool_calls: [p] });
  chunk({ tool_calls: [{ index: 1, ...CALL2 }] });
  chunk({}, 'tool_calls');
  res.write(`data: ${JSON.stringify({ ...head, object: 'chat.completion.chunk', choices: [], usage })}\n\n`);
  res.end('data: [DONE]\n\n');
}

before(async () => {
  engine = createServer((req, res) => {
    if (req.method === 'GET') return void res.end('{}');
    let text = '';
    req.on('data', (b: Buffer) => (text += b.toString()));
    req.on('end', () => answer(req, res, JSON.parse(text)));
  });
  await new Promise<void>((resolve) => engine.listen(0, '127.0.0.1', resolve));
  repo = await mkdtemp(join(tmpdir(), 'nereid-gateway-tools-'));
  await mkdir(join(repo, 'remote_llm', '1'), { recursive: true });
  await writeFile(join(repo, 'remote_llm', 'config.pbtxt'), `backend: "openai"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [ { name: "text_input" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "text_output" data_type: TYPE_STRING dims: [ -1 ] } ]
parameters { key: "base_url" value { string_value: "http://127.0.0.1:${(engine.address() as AddressInfo).port}" } }
parameters { key: "model_id" value { string_value: "engine-model" } }
`);
  await startLlama(repo);
  s = await startTestServer({ modelRepositories: [repo], modelControlMode: 'explicit', loadModels: skip ? ['remote_llm'] : ['remote_llm', 'llama_llm'] });
  const logger = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
  openai = await startOpenAiFrontend(s.server, { port: 0, address: '127.0.0.1' }, logger);
  base = `http://127.0.0.1:${openai.port}/v1`;
  client = new OpenAI({ baseURL: base, apiKey: 'unused', maxRetries: 0 });
});

after(async () => {
  await s.close();
  await openai.close();
  await new Promise((resolve) => engine.close(resolve));
  llama?.kill('SIGKILL');
  await rm(repo, { recursive: true, force: true });
});

test('the SDK\'s runTools through the gateway: the engine\'s call runs, its result goes back, the engine answers', async () => {
  const seen: unknown[] = [];
  const runner = client.chat.completions.runTools({
    model: 'remote_llm', messages, max_tokens: 50,
    tools: [{ type: 'function', function: { name: 'add', description: 'Adds two numbers', parameters: (TOOLS[0] as { function: { parameters: Record<string, unknown> } }).function.parameters, parse: (t: string) => JSON.parse(t) as { a: number; b: number }, function: (args: { a: number; b: number }) => {
      seen.push(args);
      return { sum: args.a + args.b };
    } } }],
  });
  assert.equal(await runner.finalContent(), 'It is 5.');
  assert.deepEqual(seen, [{ a: 2, b: 3 }]);
  // The second request carried the call and its result to the engine, as OpenAI's messages.
  const second = received.at(-1)!;
  assert.deepEqual(second.messages.slice(1), [
    { role: 'assistant', content: null, tool_calls: [CALL] },
    { role: 'tool', content: '{"sum":5}', tool_call_id: CALL.id },
  ]);
  assert.deepEqual(second.tools, TOOLS);
  assert.equal(second.tool_choice, 'auto');
});

test('tool_choice (named) and parallel_tool_calls reach the engine unchanged; a whole answer\'s calls come back', async () => {
  const r = await client.chat.completions.create({ model: 'remote_llm', messages, tools: TOOLS, tool_choice: { type: 'function', function: { name: 'add' } }, parallel_tool_calls: false, max_tokens: 50 });
  const sent = received.at(-1)!;
  assert.deepEqual([sent.tools, sent.tool_choice, sent.parallel_tool_calls], [TOOLS, { type: 'function', function: { name: 'add' } }, false]);
  const c = r.choices[0]!;
  assert.deepEqual([c.finish_reason, c.message.content, c.message.tool_calls], ['tool_calls', null, [CALL]]);
  assert.equal(r.usage?.completion_tokens, 7);
  for (const choice of ['none', 'required'] as const) {
    await client.chat.completions.create({ model: 'remote_llm', messages, tools: TOOLS, tool_choice: choice, max_tokens: 50 });
    assert.equal(received.at(-1)!.tool_choice, choice);
  }
});

test('streamed: the engine\'s call pieces come through in OpenAI\'s chunk shape, then finish_reason tool_calls', async () => {
  const chunks: ChatCompletionChunk[] = [];
  for await (const chunk of await client.chat.completions.create({ model: 'remote_llm', messages, tools: TOOLS, tool_choice: 'required', max_tokens: 50, stream: true })) chunks.push(chunk);
  assert.deepEqual(chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []), PIECES);
  assert.equal(chunks.at(-1)!.choices[0]!.finish_reason, 'tool_calls');
  assert.equal(chunks.some((c) => (c.choices[0]?.delta.content ?? '') !== ''), false);
  // The SDK's stream helper puts the pieces back together.
  const whole = await client.chat.completions.stream({ model: 'remote_llm', messages, tools: TOOLS, tool_choice: 'required', max_tokens: 50 }).finalChatCompletion();
  const calls = whole.choices[0]!.message.tool_calls as unknown as { function: { name: string; arguments: string } }[];
  assert.deepEqual(calls.map((t) => ({ ...t, function: { name: t.function.name, arguments: t.function.arguments } })), [CALL]);
});

test('generate on the gateway model: its call as the response parameter tool_calls', async () => {
  const r = await postJson(`${s.url}/v2/models/remote_llm/generate`, { text_input: '', messages: JSON.stringify(messages), tools: JSON.stringify(TOOLS), tool_choice: 'required', max_tokens: 50 });
  assert.equal(r.status, 200, r.body.toString());
  assert.deepEqual([r.json().finish_reason, JSON.parse(r.json().tool_calls)], ['tool_calls', [CALL]]);
  assert.deepEqual(received.at(-1)!.tools, TOOLS);
  // A tools parameter that is not JSON is refused before the engine is asked.
  const bad = await postJson(`${s.url}/v2/models/remote_llm/generate`, { text_input: '', messages: JSON.stringify(messages), tools: 'not json', max_tokens: 5 });
  assert.equal(bad.status, 400);
  assert.match(bad.json().error, /'tools'/);
});

test('an engine\'s call not in OpenAI\'s shape is an error naming the engine, not a reply that clients would misread', async () => {
  const r = await postJson(`${base}/chat/completions`, { model: 'remote_llm', messages: [{ role: 'user', content: 'broken' }], tools: TOOLS });
  assert.equal(r.status, 500, r.body.toString());
  assert.match(r.json().error.message, /^engine http:\/\/127\.0\.0\.1:\d+ \(model 'engine-model'\) answered tool calls not in OpenAI's shape/);
});

test('a bad tool definition is refused by the frontend, naming the field; the engine is not asked', async () => {
  const before = received.length;
  const r = await postJson(`${base}/chat/completions`, { model: 'remote_llm', messages, tools: [{ type: 'function', function: { name: 'add', parameters: [] } }] });
  assert.equal(r.status, 400);
  assert.equal(r.json().error.param, 'tools[0].function.parameters');
  assert.equal(received.length, before);
});

test('the Responses API through the gateway: the engine\'s call as a function_call item, whole and streamed; its output goes back as the tool message', async () => {
  const fns: OpenAI.Responses.FunctionTool[] = [{ type: 'function', name: 'add', description: 'Adds two numbers', parameters: (TOOLS[0] as { function: { parameters: Record<string, unknown> } }).function.parameters, strict: null }];
  const ask = { model: 'remote_llm', input: messages[0]!.content, tools: fns, tool_choice: 'required' as const, parallel_tool_calls: false, max_output_tokens: 50 };
  for (const r of [await client.responses.create(ask), await client.responses.stream(ask).finalResponse()]) {
    assert.deepEqual([received.at(-1)!.tools, received.at(-1)!.tool_choice, received.at(-1)!.parallel_tool_calls], [TOOLS, 'required', false]);
    const item = r.output[0] as OpenAI.Responses.ResponseFunctionToolCall;
    assert.deepEqual([r.output.length, item.type, item.call_id, item.name, item.arguments], [1, 'function_call', CALL.id, 'add', CALL.function.arguments]);
  }
  const first = await client.responses.create(ask);
  const next = await client.responses.create({ model: 'remote_llm', previous_response_id: first.id, tools: fns, max_output_tokens: 50, input: [{ type: 'function_call_output', call_id: CALL.id, output: '{"sum":5}' }] });
  assert.equal(next.output_text, 'It is 5.');
  assert.deepEqual(received.at(-1)!.messages, [...messages, { role: 'assistant', content: null, tool_calls: [CALL] }, { role: 'tool', content: '{"sum":5}', tool_call_id: CALL.id }]);
});

test('Anthropic\'s Messages through the gateway: the engine\'s call as a tool_use block, whole and streamed; a tool_result goes back as the tool message', async () => {
  const claude = new Anthropic({ baseURL: base.replace(/\/v1$/, ''), apiKey: 'unused', maxRetries: 0 });
  const tools: Anthropic.Tool[] = [{ name: 'add', description: 'Adds two numbers', input_schema: (TOOLS[0] as unknown as { function: { parameters: Anthropic.Tool.InputSchema } }).function.parameters }];
  const ask = { model: 'remote_llm', max_tokens: 50, messages, tools, tool_choice: { type: 'any' as const, disable_parallel_tool_use: true } };
  const use = { type: 'tool_use', id: 'toolu_engine0000000000000001', name: 'add', input: { a: 2, b: 3 }, caller: { type: 'direct' } };
  for (const m of [await claude.messages.create(ask), await claude.messages.stream(ask).finalMessage()]) {
    assert.deepEqual([received.at(-1)!.tools, received.at(-1)!.tool_choice, received.at(-1)!.parallel_tool_calls], [TOOLS, 'required', false]);
    assert.deepEqual([m.stop_reason, m.content], ['tool_use', [use]]);
  }
  const answer = await claude.messages.create({ ...ask, tool_choice: { type: 'auto' }, messages: [...messages, { role: 'assistant', content: [use as Anthropic.ToolUseBlockParam] }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '{"sum":5}' }] }] });
  assert.deepEqual(answer.content, [{ type: 'text', text: 'It is 5.' }]);
  assert.deepEqual(received.at(-1)!.messages, [...messages, { role: 'assistant', content: null, tool_calls: [{ ...CALL, id: use.id }] }, { role: 'tool', content: '{"sum":5}', tool_call_id: use.id }]);
});

test('text then two calls through the gateway: a message then two function_call items, a text block then two tool_use blocks, each closed before the next opens', async () => {
  const fns: OpenAI.Responses.FunctionTool[] = [{ type: 'function', name: 'add', parameters: (TOOLS[0] as { function: { parameters: Record<string, unknown> } }).function.parameters, strict: null }];
  const ask = { model: 'remote_llm', input: TWO, tools: fns, max_output_tokens: 50 };
  const whole = await client.responses.create(ask);
  const stream = client.responses.stream(ask);
  const events: { type: string; output_index?: number }[] = [];
  stream.on('event', (e) => events.push(e as { type: string; output_index?: number }));
  const streamed = await stream.finalResponse();
  for (const r of [whole, streamed]) {
    assert.deepEqual(r.output.map((o) => o.type), ['message', 'function_call', 'function_call']);
    assert.equal(r.output_text, 'Sure.');
    assert.deepEqual(r.output.slice(1).map((o) => [(o as OpenAI.Responses.ResponseFunctionToolCall).call_id, (o as OpenAI.Responses.ResponseFunctionToolCall).arguments]),
      [[CALL.id, CALL.function.arguments], [CALL2.id, CALL2.function.arguments]]);
  }
  const items = events.filter((e) => e.type.startsWith('response.output_item.')).map((e) => `${e.type.slice(21)} ${e.output_index}`);
  assert.deepEqual(items, ['added 0', 'done 0', 'added 1', 'done 1', 'added 2', 'done 2']);
  assert.deepEqual(events.filter((e) => e.type === 'response.function_call_arguments.done').map((e) => e.output_index), [1, 2]);
  const claude = new Anthropic({ baseURL: base.replace(/\/v1$/, ''), apiKey: 'unused', maxRetries: 0 });
  const tools: Anthropic.Tool[] = [{ name: 'add', input_schema: { type: 'object' } }];
  const message = { model: 'remote_llm', max_tokens: 50, messages: [{ role: 'user' as const, content: TWO }], tools };
  const m = await claude.messages.create(message);
  const live = claude.messages.stream(message);
  const blocks: string[] = [];
  live.on('streamEvent', (e) => {
    if (e.type === 'content_block_start') blocks.push(`start ${e.index} ${e.content_block.type}`);
    if (e.type === 'content_block_stop') blocks.push(`stop ${e.index}`);
  });
  const final = await live.finalMessage();
  for (const x of [m, final]) {
    assert.equal(x.stop_reason, 'tool_use');
    assert.deepEqual(x.content.map((c) => (c.type === 'text' ? c.text : (c as Anthropic.ToolUseBlock).input)), ['Sure.', { a: 2, b: 3 }, { a: 1, b: 1 }]);
  }
  assert.deepEqual(blocks, ['start 0 text', 'stop 0', 'start 1 tool_use', 'stop 1', 'start 2 tool_use', 'stop 2']);
});

test('llama-server as the engine: the tools reach it and its template renders them into the prompt', { skip }, async () => {
  const ask = (extra: Record<string, unknown>) => client.chat.completions.create({ model: 'llama_llm', messages, max_tokens: 4, seed: 1, ...extra });
  const plain = await ask({});
  const withTools = await ask({ tools: TOOLS, tool_choice: 'auto', parallel_tool_calls: false });
  assert.ok(withTools.usage!.prompt_tokens > plain.usage!.prompt_tokens + 20, `${withTools.usage!.prompt_tokens} ${plain.usage!.prompt_tokens}`);
  assert.equal(typeof withTools.choices[0]!.message.content, 'string');
  // The conversation's call and result reach it too, in the template's own syntax.
  const turn = await ask({ tools: TOOLS, messages: [...messages, { role: 'assistant', content: null, tool_calls: [CALL] }, { role: 'tool', tool_call_id: CALL.id, content: '{"sum":5}' }] });
  assert.ok(turn.usage!.prompt_tokens > withTools.usage!.prompt_tokens + 10, `${turn.usage!.prompt_tokens} ${withTools.usage!.prompt_tokens}`);
});
