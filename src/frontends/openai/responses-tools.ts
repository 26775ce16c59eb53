import { badRequest } from './errors.js';

/**
 * Function calling on the Responses API, mapped onto the chat request's: `tools` of type "function" are flat
 * ({type, name, description, parameters, strict}) where chat nests them under `function`; `tool_choice` names a
 * function as {type: "function", name}. The chat path (tool-requests.ts) then checks them as it checks a chat's,
 * and the model's backend honours them. The hosted tools (web_search, file_search, computer_use, mcp, …) run
 * on OpenAI's side, not here: each is refused naming its type.
 */
type Body = Record<string, unknown>;

/** A call as the chat path carries it in an assistant message. */
export interface ChatToolCall {
  readonly id: string;
  readonly type: 'function';
  readonly function: { readonly name: string; readonly arguments: string };
}

export interface ResponsesTools {
  /** The tools in the Responses shape, for the response to echo. */
  readonly tools: readonly Body[];
  readonly toolChoice: unknown;
  readonly parallelToolCalls: boolean;
  /** tools, tool_choice and parallel_tool_calls as a chat request body takes them; empty without tools. */
  readonly chat: Body;
}

/** Fields of a function tool that ask for something beyond a call the model writes: refused unless unset. */
const FUNCTION_FIELDS = new Set(['type', 'name', 'description', 'parameters', 'strict']);

export function responsesTools(b: Body): ResponsesTools {
  const list = b['tools'];
  if (list !== undefined && list !== null && !Array.isArray(list)) throw badRequest("'tools' must be an array", 'tools');
  const tools = (list ?? []) as unknown[];
  const chatTools = tools.map((t, i) => chatTool(t, `tools[${i}]`));
  const choice = b['tool_choice'];
  const parallel = b['parallel_tool_calls'];
  const chat: Body = {};
  if (chatTools.length > 0) chat['tools'] = chatTools;
  if (choice !== undefined && choice !== null) chat['tool_choice'] = chatChoice(choice);
  if (parallel !== undefined && parallel !== null) chat['parallel_tool_calls'] = parallel;
  return {
    tools: chatTools.map(({ function: f }) => ({ type: 'function', description: null, parameters: null, strict: null, ...f })),
    toolChoice: choice ?? 'auto', parallelToolCalls: parallel !== false, chat,
  };
}

function chatTool(t: unknown, at: string): { type: 'function'; function: Body } {
  if (!isObject(t)) throw badRequest(`'${at}' must be an object`, at);
  if (t['type'] !== 'function') throw badRequest(`'${at}.type' ${JSON.stringify(t['type'] ?? null)} is not supported by this server; only 'function' tools are`, `${at}.type`);
  for (const [key, v] of Object.entries(t)) {
    if (!FUNCTION_FIELDS.has(key) && v !== null && v !== undefined && v !== false) throw badRequest(`'${at}.${key}' is not supported by this server`, `${at}.${key}`);
  }
  const { name, description, parameters, strict } = t;
  const f: Body = { name };
  if (description !== undefined && description !== null) f['description'] = description;
  if (parameters !== undefined && parameters !== null) f['parameters'] = parameters;
  if (strict !== undefined && strict !== null) f['strict'] = strict;
  return { type: 'function', function: f };
}

/** tool_choice: none, auto, required or {type: "function", name}; any other object (allowed_tools, a hosted tool) refused by its type. */
function chatChoice(v: unknown): unknown {
  if (typeof v === 'string') return v;
  if (!isObject(v)) throw badRequest("'tool_choice' must be none, auto, required or {\"type\": \"function\", \"name\": …}", 'tool_choice');
  if (v['type'] !== 'function') throw badRequest(`'tool_choice.type' ${JSON.stringify(v['type'] ?? null)} is not supported by this server; only 'function' is`, 'tool_choice.type');
  if (typeof v['name'] !== 'string') throw badRequest("'tool_choice.name' must be the name of a function in 'tools'", 'tool_choice.name');
  return { type: 'function', function: { name: v['name'] } };
}

/** An input item {type: "function_call", call_id, name, arguments}: a call the model made earlier. */
export function functionCallItem(item: Body, where: string): ChatToolCall {
  const { type: _type, call_id: callId, name, arguments: args, id, status, ...rest } = item;
  checkRest(rest, where, id, status);
  if (typeof callId !== 'string' || callId === '') throw badRequest(`'${where}.call_id' must be a non-empty string`, `${where}.call_id`);
  if (typeof name !== 'string') throw badRequest(`'${where}.name' must be a string`, `${where}.name`);
  if (typeof args !== 'string') throw badRequest(`'${where}.arguments' must be a string (JSON text)`, `${where}.arguments`);
  return { id: callId, type: 'function', function: { name, arguments: args } };
}

/** An input item {type: "function_call_output", call_id, output}: a call's result, as the chat's tool message. */
export function functionCallOutputItem(item: Body, where: string, text: (content: unknown, where: string) => string): { role: 'tool'; content: string; tool_call_id: string } {
  const { type: _type, call_id: callId, output, id, status, ...rest } = item;
  checkRest(rest, where, id, status);
  if (typeof callId !== 'string' || callId === '') throw badRequest(`'${where}.call_id' must be a non-empty string`, `${where}.call_id`);
  return { role: 'tool', content: text(output, `${where}.output`), tool_call_id: callId };
}

/** An item sent back carries its id and status: they name it and change nothing; any other field is refused. */
function checkRest(rest: Body, where: string, id: unknown, status: unknown): void {
  const extra = Object.entries(rest).find(([, v]) => v !== null && v !== undefined)?.[0];
  if (extra !== undefined) throw badRequest(`'${where}.${extra}' is not supported by this server`, `${where}.${extra}`);
  if ((id !== undefined && id !== null && typeof id !== 'string') || (status !== undefined && status !== null && typeof status !== 'string')) {
    throw badRequest(`'${where}' has an id or status that is not a string`, where);
  }
}

function isObject(v: unknown): v is Body {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
