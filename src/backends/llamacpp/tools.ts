import type { ChatModelFunctions, GbnfJsonSchema } from 'node-llama-cpp';
import { invalidArg } from '../../errors.js';
import type { Parameters } from '../../inference/index.js';
import { checkJsonSchema } from './response-format.js';

/**
 * Function calling on a chat request. The request parameters (OpenAI's fields; the OpenAI frontend passes them
 * as they came): `tools`, the JSON text of OpenAI's list of {"type": "function", "function": {"name",
 * "description", "parameters", "strict"}}; `tool_choice`, "auto" (the default), "none", "required" or the JSON
 * text of {"type": "function", "function": {"name"}}; `parallel_tool_calls`, a boolean (default true).
 *
 * The functions are rendered by the model's chat wrapper in its own function-calling syntax, and the calls the
 * model writes in that syntax are parsed back. Parameters are always written through a grammar made from
 * their schema, so a call is well formed JSON its schema accepts; "required" and a named function also force
 * the call itself. "none" renders no functions at all. A schema is checked as response_format's is (strict or
 * not: the grammar always holds the model to it) and refused by the first keyword the grammar cannot honour.
 */
export const TOOLS_PARAMETER = 'tools';
export const TOOL_CHOICE_PARAMETER = 'tool_choice';
export const PARALLEL_TOOL_CALLS_PARAMETER = 'parallel_tool_calls';

/** Calls one answer may make when parallel calls are allowed. */
export const MAX_PARALLEL_CALLS = 8;
const MAX_TOOLS = 128;

export interface ToolRequest {
  /** Every function, as the prompt documents them. */
  readonly functions: ChatModelFunctions;
  /** The functions the model may call: all, or the one tool_choice names. */
  readonly callable: ChatModelFunctions;
  /** true for "required" and a named function: the answer is a call. */
  readonly forced: boolean;
  readonly maxCalls: number;
}

type Json = Record<string, unknown>;

/** The request's tools; null when it has none or tool_choice is "none" (the model then writes text only). */
export function readTools(p: Parameters | undefined): ToolRequest | null {
  const text = p?.[TOOLS_PARAMETER];
  if (text === undefined) return null;
  const choice = toolChoice(p![TOOL_CHOICE_PARAMETER]);
  if (choice === 'none') return null;
  const functions = readFunctions(text);
  const parallel = p![PARALLEL_TOOL_CALLS_PARAMETER];
  if (parallel !== undefined && typeof parallel !== 'boolean') throw invalidArg(`parameter '${PARALLEL_TOOL_CALLS_PARAMETER}' must be a boolean`);
  const maxCalls = parallel === false ? 1 : MAX_PARALLEL_CALLS;
  if (choice === 'auto') return { functions, callable: functions, forced: false, maxCalls };
  if (choice === 'required') return { functions, callable: functions, forced: true, maxCalls };
  const named = functions[choice.name];
  if (named === undefined) throw invalidArg(`parameter '${TOOL_CHOICE_PARAMETER}' names the function ${JSON.stringify(choice.name)}, which is not in '${TOOLS_PARAMETER}'`);
  return { functions, callable: { [choice.name]: named }, forced: true, maxCalls };
}

function toolChoice(v: Parameters[string] | undefined): 'auto' | 'none' | 'required' | { name: string } {
  if (v === undefined || v === 'auto' || v === 'none' || v === 'required') return v ?? 'auto';
  const wrong = (): Error => invalidArg(`parameter '${TOOL_CHOICE_PARAMETER}' must be auto, none, required or the JSON text of {"type": "function", "function": {"name": …}}`);
  if (typeof v !== 'string') throw wrong();
  const o = parse(v, wrong);
  if (!isObject(o) || o['type'] !== 'function' || !isObject(o['function']) || typeof o['function']['name'] !== 'string') throw wrong();
  return { name: o['function']['name'] };
}

function readFunctions(text: Parameters[string]): ChatModelFunctions {
  const wrong = (why = ''): Error => invalidArg(`parameter '${TOOLS_PARAMETER}' must be the JSON text of a list of {"type": "function", "function": {"name", "description", "parameters"}}${why}`);
  if (typeof text !== 'string') throw wrong();
  const list = parse(text, wrong);
  if (!Array.isArray(list) || list.length > MAX_TOOLS) throw wrong(` of at most ${MAX_TOOLS} tools`);
  const functions: Record<string, ChatModelFunctions[string]> = {};
  list.forEach((t: unknown, i) => {
    const at = `tools[${i}].function`;
    if (!isObject(t) || t['type'] !== 'function' || !isObject(t['function'])) throw wrong(`: tools[${i}] is not`);
    const { name, description, parameters } = t['function'];
    if (typeof name !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(name) || Object.hasOwn(functions, name)) throw wrong(`: ${at}.name is not a distinct name of 1 to 64 letters, digits, _ or -`);
    const params = parameters === undefined || parameters === null || (isObject(parameters) && Object.keys(parameters).length === 0) ? undefined : checkJsonSchema(parameters, `${at}.parameters`) as GbnfJsonSchema;
    functions[name] = { ...(typeof description === 'string' ? { description } : {}), params };
  });
  return functions;
}

function parse(text: string, wrong: () => Error): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw wrong();
  }
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
