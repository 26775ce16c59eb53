import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { Ajv } from 'ajv';
import { EXAMPLES } from '../../helpers/paths.js';
import { postJson, request } from '../../helpers/http.js';
import { openAiUrl, spawnServer, type ServerProcess } from '../../helpers/server.js';
import { until } from '../../helpers/until.js';

// Function tools on OpenAI's Responses API, called with the official openai client over the example tiny_llm
// (llama.cpp, random weights). The calls go through the chat path's function calling: a forced call (tool_choice
// "required" or a named function) is written in the chat wrapper's syntax with its parameters held to their
// schema, so whatever gibberish the model prefers, every call parses and validates.

let p: ServerProcess;
let base: string;
let client: OpenAI;

before(async () => {
  p = await spawnServer(['--model-repository', EXAMPLES, '--model-control-mode=explicit', '--load-model=tiny_llm', '--openai-port=0', '--openai-address=127.0.0.1']);
  base = await openAiUrl(p);
  await until(async () => (await request(`${p.url}/v2/models/tiny_llm/ready`)).status === 200, 'tiny_llm');
  client = new OpenAI({ apiKey: 'unused', baseURL: `${base}/v1`, maxRetries: 0 });
});

after(async () => {
  p?.child.kill('SIGTERM');
  if (p) assert.equal(await p.exited, 0, p.output());
});

// Small enumerations, as in the chat tool tests: a model that writes at random cannot pick a number out of range.
const ADD = { type: 'object', properties: { a: { type: 'integer', enum: [1, 2, 3] }, b: { type: 'integer', enum: [1, 2, 3] } }, required: ['a', 'b'], additionalProperties: false };
const WEATHER = { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Oslo'] } }, required: ['city'], additionalProperties: false };
const TOOLS: OpenAI.Responses.FunctionTool[] = [
  { type: 'function', name: 'add', description: 'Adds two integers', parameters: ADD, strict: true },
  { type: 'function', name: 'weather', description: 'The weather in a city', parameters: WEATHER, strict: false },
];
const ajv = new Ajv();
const validate: Record<string, ReturnType<Ajv['compile']>> = { add: ajv.compile(ADD), weather: ajv.compile(WEATHER) };
const INPUT = 'What is 2 plus 3, and is it warm in Paris?';

function checkCall(item: OpenAI.Responses.ResponseOutputItem, names = ['add', 'weather']): OpenAI.Responses.ResponseFunctionToolCall {
  assert.equal(item.type, 'function_call', JSON.stringify(item));
  const call = item as OpenAI.Responses.ResponseFunctionToolCall;
  assert.match(call.id!, /^fc_[0-9a-f]{48}$/);
  assert.match(call.call_id, /^call_[A-Za-z0-9]{24}$/);
  assert.equal(call.status, 'completed');
  assert.ok(names.includes(call.name), call.name);
  assert.ok(validate[call.name]!(JSON.parse(call.arguments)), `${call.arguments} ${JSON.stringify(validate[call.name]!.errors)}`);
  return call;
}

test('responses.create with tools: function_call items that validate; the output goes back by call_id and the model answers', async () => {
  const r = await client.responses.create({ model: 'tiny_llm', input: INPUT, tools: TOOLS, tool_choice: { type: 'function', name: 'add' }, parallel_tool_calls: false, max_output_tokens: 200, temperature: 0 });
  assert.equal(r.status, 'completed');
  assert.equal(r.output.length, 1);
  const call = checkCall(r.output[0]!, ['add']);
  assert.equal(r.output_text, '');
  // The request's tools, echoed in the Responses shape.
  assert.deepEqual(r.tools, TOOLS);
  assert.deepEqual(r.tool_choice, { type: 'function', name: 'add' });
  assert.equal(r.parallel_tool_calls, false);
  // The call and its result sent back as input items: the prompt holds both, the answer is text.
  const { a, b } = JSON.parse(call.arguments) as { a: number; b: number };
  const next = await client.responses.create({
    model: 'tiny_llm', tools: TOOLS, tool_choice: 'none', max_output_tokens: 4, temperature: 0,
    input: [{ role: 'user', content: INPUT }, call, { type: 'function_call_output', call_id: call.call_id, output: JSON.stringify({ sum: a + b }) }],
  });
  assert.deepEqual(next.output.map((o) => o.type), ['message']);
  assert.equal(typeof next.output_text, 'string');
  const plain = await client.responses.create({ model: 'tiny_llm', input: INPUT, max_output_tokens: 1, temperature: 0 });
  assert.ok(next.usage!.input_tokens > plain.usage!.input_tokens + 10, `${next.usage!.input_tokens} ${plain.usage!.input_tokens}`);
  // The same through previous_response_id: the stored call comes back as history, only its output is new.
  const chained = await client.responses.create({
    model: 'tiny_llm', previous_response_id: r.id, tools: TOOLS, tool_choice: 'none', max_output_tokens: 4, temperature: 0,
    input: [{ type: 'function_call_output', call_id: call.call_id, output: JSON.stringify({ sum: a + b }) }],
  });
  assert.equal(chained.output_text, next.output_text);
  assert.equal(chained.usage!.input_tokens, next.usage!.input_tokens);
  // The input items listed as they came: the function_call_output.
  const items = await client.responses.inputItems.list(chained.id);
  assert.deepEqual(items.data.map((i) => [i.type, (i as { call_id?: string }).call_id]), [['function_call_output', call.call_id]]);
  // The stored response gives its function_call back.
  assert.deepEqual((await client.responses.retrieve(r.id)).output, r.output);
});

test('tool_choice required: only calls, each validating; parallel calls allowed', async () => {
  for (const input of [INPUT, 'Add one and two.']) {
    const r = await client.responses.create({ model: 'tiny_llm', input, tools: TOOLS, tool_choice: 'required', max_output_tokens: 200, temperature: 0 });
    assert.ok(r.output.length >= 1);
    const ids = r.output.map((o) => checkCall(o).call_id);
    assert.equal(new Set(ids).size, ids.length);
    assert.equal(r.tool_choice, 'required');
    assert.equal(r.parallel_tool_calls, true);
  }
});

test('responses.stream: a function_call item added, its argument deltas, arguments done and item done; finalResponse() holds the call', async () => {
  const whole = await client.responses.create({ model: 'tiny_llm', input: INPUT, tools: TOOLS, tool_choice: { type: 'function', name: 'weather' }, max_output_tokens: 200, temperature: 0 });
  const stream = client.responses.stream({ model: 'tiny_llm', input: INPUT, tools: TOOLS, tool_choice: { type: 'function', name: 'weather' }, max_output_tokens: 200, temperature: 0 });
  const events: OpenAI.Responses.ResponseStreamEvent[] = [];
  stream.on('event', (e) => events.push(e));
  let deltas = '';
  stream.on('response.function_call_arguments.delta', (e) => (deltas += e.delta));
  const final = await stream.finalResponse();
  const types = events.map((e) => e.type);
  const n = types.filter((t) => t === 'response.function_call_arguments.delta').length;
  assert.ok(n >= 1, types.join());
  assert.deepEqual(types, [
    'response.created', 'response.in_progress', 'response.output_item.added', ...Array(n).fill('response.function_call_arguments.delta'),
    'response.function_call_arguments.done', 'response.output_item.done', 'response.completed',
  ]);
  assert.deepEqual(events.map((e) => e.sequence_number), types.map((_, i) => i));
  const added = events[2] as OpenAI.Responses.ResponseOutputItemAddedEvent;
  const item = added.item as OpenAI.Responses.ResponseFunctionToolCall;
  assert.deepEqual({ ...item, id: 'x', call_id: 'y' }, { id: 'x', type: 'function_call', status: 'in_progress', arguments: '', call_id: 'y', name: 'weather' });
  assert.equal(added.output_index, 0);
  const done = events.at(-3) as OpenAI.Responses.ResponseFunctionCallArgumentsDoneEvent;
  assert.deepEqual([done.item_id, done.output_index, done.arguments], [item.id, 0, deltas]);
  const call = checkCall(final.output[0]!, ['weather']);
  assert.deepEqual([call.id, call.call_id, call.arguments], [item.id, item.call_id, deltas]);
  // The same draw as the whole response: the same arguments (ids are new each time).
  assert.equal(call.arguments, (whole.output[0] as OpenAI.Responses.ResponseFunctionToolCall).arguments);
  assert.equal(final.usage!.input_tokens, whole.usage!.input_tokens);
});

test('input_tokens counts the tools in the prompt; a forced choice counts as the prompt it documents', async () => {
  const bare = await client.responses.inputTokens.count({ model: 'tiny_llm', input: INPUT });
  const counted = await client.responses.inputTokens.count({ model: 'tiny_llm', input: INPUT, tools: TOOLS, tool_choice: 'required' });
  assert.ok(counted.input_tokens > bare.input_tokens + 20, `${counted.input_tokens} ${bare.input_tokens}`);
  const r = await client.responses.create({ model: 'tiny_llm', input: INPUT, tools: TOOLS, max_output_tokens: 1, temperature: 0 });
  assert.equal(counted.input_tokens, r.usage!.input_tokens);
});

test('hosted tools and other tool choices are refused 400 naming the type; bad function items name their field', async () => {
  const refused = async (body: Record<string, unknown>, param: string, words: RegExp): Promise<void> => {
    const r = await postJson(`${base}/v1/responses`, { model: 'tiny_llm', input: INPUT, max_output_tokens: 4, ...body });
    assert.equal(r.status, 400, r.body.toString());
    const e = r.json().error;
    assert.equal(e.param, param, r.body.toString());
    assert.match(e.message, words);
  };
  for (const type of ['web_search', 'file_search', 'computer_use_preview', 'mcp', 'code_interpreter', 'custom']) {
    await refused({ tools: [TOOLS[0], { type }] }, 'tools[1].type', new RegExp(`"${type}" is not supported by this server; only 'function' tools are`));
  }
  await refused({ tools: TOOLS, tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [] } }, 'tool_choice.type', /"allowed_tools" is not supported/);
  await refused({ tools: TOOLS, tool_choice: { type: 'function', name: 'nope' } }, 'tool_choice', /"nope", which is not in 'tools'/);
  await refused({ tools: TOOLS, tool_choice: 'sometimes' }, 'tool_choice', /none, auto, required/);
  await refused({ tools: [{ type: 'function', name: 'has space', parameters: null, strict: null }] }, 'tools[0].function.name', /letters, digits/);
  await refused({ tools: [{ ...TOOLS[0], defer_loading: true }] }, 'tools[0].defer_loading', /not supported/);
  await refused({ input: [{ type: 'function_call', call_id: 'call_1', name: 'add' }] }, 'input[0].arguments', /JSON text/);
  await refused({ input: [{ type: 'function_call_output', output: '5' }] }, 'input[0].call_id', /non-empty string/);
  await refused({ input: [{ type: 'function_call_output', call_id: 'c', output: [{ type: 'input_image', image_url: 'x' }] }] }, 'input[0].output[0].type', /input_text/);
  // An output that answers no call made earlier in the conversation.
  const stray = await postJson(`${base}/v1/responses`, { model: 'tiny_llm', max_output_tokens: 4, input: [{ role: 'user', content: INPUT }, { type: 'function_call_output', call_id: 'call_x', output: '5' }] });
  assert.equal(stray.status, 400, stray.body.toString());
  assert.match(stray.json().error.message, /"call_x", which no earlier assistant message made/);
});
