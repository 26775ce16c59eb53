import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { Ajv } from 'ajv';
import { EXAMPLES } from '../../helpers/paths.js';
import { postJson, request } from '../../helpers/http.js';
import { openAiUrl, spawnServer, type ServerProcess } from '../../helpers/server.js';
import { until } from '../../helpers/until.js';

// Tool use on Anthropic's Messages API, called with the official @anthropic-ai/sdk over the example tiny_llm
// (llama.cpp, random weights). The calls go through the chat path's function calling: a forced choice ("any" or
// a named tool) is written in the chat wrapper's syntax with its input held to the tool's schema, so whatever
// gibberish the model prefers, every tool_use block's input validates.

let p: ServerProcess;
let base: string;
let claude: Anthropic;

before(async () => {
  p = await spawnServer(['--model-repository', EXAMPLES, '--model-control-mode=explicit', '--load-model=tiny_llm', '--openai-port=0', '--openai-address=127.0.0.1']);
  base = await openAiUrl(p);
  await until(async () => (await request(`${p.url}/v2/models/tiny_llm/ready`)).status === 200, 'tiny_llm');
  claude = new Anthropic({ apiKey: 'unused', baseURL: base, maxRetries: 0 });
});

after(async () => {
  p?.child.kill('SIGTERM');
  if (p) assert.equal(await p.exited, 0, p.output());
});

const ADD = { type: 'object' as const, properties: { a: { type: 'integer', enum: [1, 2, 3] }, b: { type: 'integer', enum: [1, 2, 3] } }, required: ['a', 'b'], additionalProperties: false };
const WEATHER = { type: 'object' as const, properties: { city: { type: 'string', enum: ['Paris', 'Oslo'] } }, required: ['city'], additionalProperties: false };
const TOOLS: Anthropic.Tool[] = [
  { name: 'add', description: 'Adds two integers', input_schema: ADD },
  { name: 'weather', description: 'The weather in a city', input_schema: WEATHER },
];
const ajv = new Ajv();
const validate: Record<string, ReturnType<Ajv['compile']>> = { add: ajv.compile(ADD), weather: ajv.compile(WEATHER) };
const MESSAGES: Anthropic.MessageParam[] = [{ role: 'user', content: 'What is 2 plus 3, and is it warm in Paris?' }];
/** temperature 0, which the server honours; this SDK's types no longer list the sampling fields, so it is spread in untyped. */
const GREEDY: object = { temperature: 0 };

function checkUse(block: Anthropic.ContentBlock, names = ['add', 'weather']): Anthropic.ToolUseBlock {
  assert.equal(block.type, 'tool_use', JSON.stringify(block));
  const use = block as Anthropic.ToolUseBlock;
  assert.match(use.id, /^toolu_[A-Za-z0-9]{24}$/);
  assert.ok(names.includes(use.name), use.name);
  assert.ok(validate[use.name]!(use.input), `${JSON.stringify(use.input)} ${JSON.stringify(validate[use.name]!.errors)}`);
  return use;
}

test('messages.create with tools: tool_use blocks whose input validates, stop_reason tool_use; a tool_result round trip answers in text', async () => {
  const m = await claude.messages.create({ model: 'tiny_llm', max_tokens: 200, ...GREEDY, messages: MESSAGES, tools: TOOLS, tool_choice: { type: 'tool', name: 'add', disable_parallel_tool_use: true } });
  assert.equal(m.stop_reason, 'tool_use');
  assert.equal(m.content.length, 1);
  const use = checkUse(m.content[0]!, ['add']);
  const { a, b } = use.input as { a: number; b: number };
  const next = await claude.messages.create({
    model: 'tiny_llm', max_tokens: 4, ...GREEDY, tools: TOOLS, tool_choice: { type: 'none' },
    messages: [...MESSAGES, { role: 'assistant', content: m.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: String(a + b) }] }],
  });
  assert.deepEqual(next.content.map((c) => c.type), ['text']);
  assert.notEqual(next.stop_reason, 'tool_use');
  // The call and its result are in the prompt the model read.
  const plain = await claude.messages.countTokens({ model: 'tiny_llm', messages: MESSAGES });
  assert.ok(next.usage.input_tokens > plain.input_tokens + 10, `${next.usage.input_tokens} ${plain.input_tokens}`);
  // A tool_result with text blocks and is_error, and text beside it in the same user message.
  const failed = await claude.messages.create({
    model: 'tiny_llm', max_tokens: 4, ...GREEDY, tools: TOOLS, tool_choice: { type: 'none' },
    messages: [...MESSAGES, { role: 'assistant', content: m.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, is_error: true, content: [{ type: 'text', text: 'overflow' }] }, { type: 'text', text: 'Try again.' }] }],
  });
  assert.ok(failed.usage.input_tokens > next.usage.input_tokens, `${failed.usage.input_tokens} ${next.usage.input_tokens}`);
});

test('tool_choice any: only tool_use blocks, each validating, with distinct ids', async () => {
  for (const content of ['What is 2 plus 3, and is it warm in Paris?', 'Add one and two.']) {
    const m = await claude.messages.create({ model: 'tiny_llm', max_tokens: 200, ...GREEDY, messages: [{ role: 'user', content }], tools: TOOLS, tool_choice: { type: 'any' } });
    assert.equal(m.stop_reason, 'tool_use');
    assert.ok(m.content.length >= 1);
    const ids = m.content.map((c) => checkUse(c).id);
    assert.equal(new Set(ids).size, ids.length);
  }
});

test('messages.stream: content_block_start tool_use with input {}, input_json_delta pieces, content_block_stop; inputJson and finalMessage() hold the input', async () => {
  const whole = await claude.messages.create({ model: 'tiny_llm', max_tokens: 200, ...GREEDY, messages: MESSAGES, tools: TOOLS, tool_choice: { type: 'tool', name: 'weather' } });
  const stream = claude.messages.stream({ model: 'tiny_llm', max_tokens: 200, ...GREEDY, messages: MESSAGES, tools: TOOLS, tool_choice: { type: 'tool', name: 'weather' } });
  const events: Anthropic.MessageStreamEvent[] = [];
  stream.on('streamEvent', (e) => events.push(e));
  let json = '';
  let snapshot: unknown;
  stream.on('inputJson', (partial, snap) => {
    json += partial;
    snapshot = snap;
  });
  const final = await stream.finalMessage();
  const types = events.map((e) => e.type);
  const n = types.filter((t) => t === 'content_block_delta').length;
  assert.ok(n >= 1, types.join());
  assert.deepEqual(types, ['message_start', 'content_block_start', ...Array(n).fill('content_block_delta'), 'content_block_stop', 'message_delta', 'message_stop']);
  const start = events[1] as Anthropic.ContentBlockStartEvent;
  assert.equal(start.index, 0);
  assert.deepEqual({ ...start.content_block, id: 'x' }, { type: 'tool_use', id: 'x', name: 'weather', input: {}, caller: { type: 'direct' } });
  for (const e of events.filter((x) => x.type === 'content_block_delta') as Anthropic.ContentBlockDeltaEvent[]) {
    assert.deepEqual([e.index, e.delta.type], [0, 'input_json_delta']);
  }
  assert.equal((events.at(-2) as Anthropic.MessageDeltaEvent).delta.stop_reason, 'tool_use');
  const use = checkUse(final.content[0]!, ['weather']);
  assert.equal(use.id, (start.content_block as Anthropic.ToolUseBlock).id);
  assert.deepEqual(JSON.parse(json), use.input);
  assert.deepEqual(snapshot, use.input);
  assert.equal(final.stop_reason, 'tool_use');
  // The same draw as the whole message: the same input (ids are new each time).
  assert.deepEqual(use.input, (whole.content[0] as Anthropic.ToolUseBlock).input);
});

test('count_tokens counts the tools; a forced choice counts as the prompt it documents', async () => {
  const bare = await claude.messages.countTokens({ model: 'tiny_llm', messages: MESSAGES });
  const counted = await claude.messages.countTokens({ model: 'tiny_llm', messages: MESSAGES, tools: TOOLS, tool_choice: { type: 'any' } });
  assert.ok(counted.input_tokens > bare.input_tokens + 20, `${counted.input_tokens} ${bare.input_tokens}`);
  const m = await claude.messages.create({ model: 'tiny_llm', max_tokens: 1, ...GREEDY, messages: MESSAGES, tools: TOOLS });
  assert.equal(counted.input_tokens, m.usage.input_tokens);
});

test('server tools, bad tools and tool blocks are refused 400 in Anthropic\'s error shape, naming the field', async () => {
  const refused = async (body: Record<string, unknown>, words: RegExp): Promise<void> => {
    const r = await postJson(`${base}/v1/messages`, { model: 'tiny_llm', max_tokens: 4, messages: MESSAGES, ...body });
    assert.equal(r.status, 400, r.body.toString());
    const e = r.json();
    assert.equal(e.type, 'error');
    assert.equal(e.error.type, 'invalid_request_error');
    assert.match(e.error.message, words);
  };
  for (const type of ['web_search_20250305', 'bash_20250124', 'text_editor_20250728', 'code_execution_20250825']) {
    await refused({ tools: [TOOLS[0], { type, name: 'x' }] }, new RegExp(`^tools\\.1\\.type: tools of type "${type}" are not supported by this server`));
  }
  await refused({ tools: [{ name: 'f', input_schema: { type: 'string' } }] }, /^tools\.0\.input_schema: must be a JSON Schema of type object/);
  await refused({ tools: [{ name: 'has space', input_schema: ADD }] }, /^tools\.0\.name: /);
  await refused({ tools: [{ ...TOOLS[0], cache_control: { type: 'ephemeral' } }] }, /^tools\.0\.cache_control: not supported/);
  await refused({ tools: TOOLS, tool_choice: { type: 'sometimes' } }, /^tool_choice\.type: must be one of auto, any, tool, none/);
  await refused({ tools: TOOLS, tool_choice: { type: 'tool' } }, /^tool_choice\.name: Field required/);
  await refused({ tools: TOOLS, tool_choice: { type: 'tool', name: 'nope' } }, /"nope", which is not in 'tools'/);
  await refused({ messages: [{ role: 'user', content: [{ type: 'tool_use', id: 'toolu_1', name: 'add', input: {} }] }] }, /^messages\.0\.content\.0\.type: content blocks of type "tool_use" are not supported/);
  await refused({ messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'add', input: '{}' }] }] }, /^messages\.0\.content\.0\.input: must be an object/);
  await refused({ messages: [...MESSAGES, { role: 'user', content: [{ type: 'tool_result', content: '5' }] }] }, /^messages\.1\.content\.0\.tool_use_id: Field required/);
  // A result for no tool_use earlier in the conversation.
  await refused({ messages: [...MESSAGES, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_x', content: '5' }] }] }, /"toolu_x", which no earlier assistant message made/);
});
