import { badRequest } from './errors.js';

/**
 * OpenAI's function calling on a chat request: `tools`, `tool_choice`, `parallel_tool_calls`, and the two kinds
 * of messages a conversation with tools holds (an assistant's `tool_calls`, a `tool` message answering one by
 * `tool_call_id`). Each is checked in its shape here and passed on as request parameters (JSON text where the
 * value is not a scalar): `tools`, `tool_choice` ("auto", "none", "required" or the JSON text of
 * {"type": "function", "function": {"name"}}) and `parallel_tool_calls`. The model's backend reads the
 * parameter schemas (it knows which it can honour) and answers calls in the response parameter `tool_calls`.
 */

type Body = Record<string, unknown>;

/** Tools a request may declare: OpenAI's own bound. */
const MAX_TOOLS = 128;
/** A function's name as OpenAI takes it. */
const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** The request's tool parameters; none when it declares no tools (an empty list is none). */
export function toolParameters(b: Body): Record<string, string | boolean> {
  const names = toolNames(b['tools']);
  const choice = toolChoice(b['tool_choice'], names);
  const parallel = b['parallel_tool_calls'];
  if (parallel !== undefined && parallel !== null && typeof parallel !== 'boolean') throw badRequest("'parallel_tool_calls' must be a boolean", 'parallel_tool_calls');
  if (names === null) return {};
  const p: Record<string, string | boolean> = { tools: JSON.stringify(b['tools']) };
  if (choice !== undefined) p['tool_choice'] = choice;
  if (typeof parallel === 'boolean') p['parallel_tool_calls'] = parallel;
  return p;
}

/** The declared function names, checked; null when there are no tools. */
function toolNames(v: unknown): Set<string> | null {
  if (v === undefined || v === null) return null;
  if (!Array.isArray(v)) throw badRequest("'tools' must be an array", 'tools');
  if (v.length === 0) return null;
  if (v.length > MAX_TOOLS) throw badRequest(`'tools' may hold at most ${MAX_TOOLS} tools, got ${v.length}`, 'tools');
  const names = new Set<string>();
  v.forEach((t: unknown, i) => {
    const at = `tools[${i}]`;
    if (!isObject(t)) throw badRequest(`'${at}' must be an object`, at);
    if (t['type'] !== 'function') throw badRequest(`'${at}.type' must be 'function', got ${JSON.stringify(t['type'] ?? null)}`, `${at}.type`);
    const f = t['function'];
    if (!isObject(f)) throw badRequest(`'${at}.function' is required and must be an object`, `${at}.function`);
    const name = f['name'];
    if (typeof name !== 'string' || !NAME.test(name)) throw badRequest(`'${at}.function.name' must be 1 to 64 letters, digits, underscores or dashes`, `${at}.function.name`);
    if (names.has(name)) throw badRequest(`'${at}.function.name' repeats the name ${JSON.stringify(name)}`, `${at}.function.name`);
    names.add(name);
    if (f['description'] !== undefined && f['description'] !== null && typeof f['description'] !== 'string') throw badRequest(`'${at}.function.description' must be a string`, `${at}.function.description`);
    if (f['parameters'] !== undefined && f['parameters'] !== null && !isObject(f['parameters'])) throw badRequest(`'${at}.function.parameters' must be a JSON Schema object`, `${at}.function.parameters`);
    if (f['strict'] !== undefined && f['strict'] !== null && typeof f['strict'] !== 'boolean') throw badRequest(`'${at}.function.strict' must be a boolean`, `${at}.function.strict`);
  });
  return names;
}

/** tool_choice as the parameter carries it; a named function must be one of the tools. */
function toolChoice(v: unknown, names: Set<string> | null): string | undefined {
  if (v === undefined || v === null) return undefined;
  const wrong = (why: string): never => {
    throw badRequest(`'tool_choice' ${why}`, 'tool_choice');
  };
  if (v === 'none' || v === 'auto') return names === null ? undefined : v;
  if (names === null) wrong('is only allowed when tools are specified');
  if (v === 'required') return v;
  if (typeof v === 'string') wrong(`must be one of none, auto, required or a named function; got ${JSON.stringify(v)}`);
  if (!isObject(v) || v['type'] !== 'function' || !isObject(v['function']) || typeof v['function']['name'] !== 'string') {
    wrong('must be one of none, auto, required or {"type": "function", "function": {"name": …}}');
  }
  const name = ((v as Body)['function'] as Body)['name'] as string;
  if (!names!.has(name)) wrong(`names the function ${JSON.stringify(name)}, which is not in 'tools'`);
  return JSON.stringify({ type: 'function', function: { name } });
}

/** An assistant's tool_calls: each {id, type: "function", function: {name, arguments (JSON text)}}; none for an empty list. */
export function assistantToolCalls(v: unknown, where: string): Body[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.length > MAX_TOOLS) throw badRequest(`${where} must be an array of at most ${MAX_TOOLS} tool calls`, where);
  if (v.length === 0) return undefined;
  return v.map((c: unknown, i) => {
    const at = `${where}[${i}]`;
    if (!isObject(c) || typeof c['id'] !== 'string' || c['type'] !== 'function' || !isObject(c['function'])) {
      throw badRequest(`${at} must be {"id", "type": "function", "function": {"name", "arguments"}}`, at);
    }
    const { name, arguments: args } = c['function'];
    if (typeof name !== 'string' || typeof args !== 'string') throw badRequest(`${at}.function must have a string 'name' and 'arguments' (JSON text)`, `${at}.function`);
    return { id: c['id'], type: 'function', function: { name, arguments: args } };
  });
}

function isObject(v: unknown): v is Body {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
