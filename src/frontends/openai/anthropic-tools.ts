import { badRequest } from './errors.js';

/**
 * Tool use on Anthropic's Messages API, mapped onto the chat request's function calling: `tools` ({name,
 * description, input_schema}) become chat functions, `tool_choice` ({type: auto | any | tool | none, name,
 * disable_parallel_tool_use}) the chat's tool_choice and parallel_tool_calls; an assistant's tool_use blocks
 * become its tool_calls and a user's tool_result blocks the chat's tool messages. Anthropic's server tools
 * (web_search, bash, text editor, code execution, …) run on Anthropic's side, not here: each is refused naming
 * its type. Errors name the field in Anthropic's dotted form, as the other checks of this API do.
 */
type Body = Record<string, unknown>;

/** A chat message as the chat path takes it (content null for an assistant that only calls tools). */
export interface ChatMessage {
  readonly role: string;
  readonly content: string | null;
  readonly tool_calls?: readonly Body[];
  readonly tool_call_id?: string;
}

/** tools and tool_choice as a chat request body takes them; empty without either. */
export function toolFields(b: Body): Body {
  const out: Body = {};
  const tools = b['tools'];
  if (tools !== undefined) {
    if (!Array.isArray(tools)) throw badRequest('tools: must be an array', 'tools');
    if (tools.length > 0) out['tools'] = tools.map((t: unknown, i) => chatTool(t, `tools.${i}`));
  }
  const choice = b['tool_choice'];
  if (choice === undefined) return out;
  if (typeof choice !== 'object' || choice === null || Array.isArray(choice)) throw badRequest('tool_choice: must be an object', 'tool_choice');
  const { type, name, disable_parallel_tool_use: single, ...rest } = choice as Body;
  const extra = Object.keys(rest)[0];
  if (extra !== undefined) throw badRequest(`tool_choice.${extra}: not supported by this server`, `tool_choice.${extra}`);
  if (single !== undefined && typeof single !== 'boolean') throw badRequest('tool_choice.disable_parallel_tool_use: must be a boolean', 'tool_choice.disable_parallel_tool_use');
  if (type === 'none' && single !== undefined) throw badRequest('tool_choice.disable_parallel_tool_use: not allowed with type none', 'tool_choice.disable_parallel_tool_use');
  if (type === 'tool') {
    if (typeof name !== 'string') throw badRequest('tool_choice.name: Field required', 'tool_choice.name');
    out['tool_choice'] = { type: 'function', function: { name } };
  } else if (type === 'auto' || type === 'any' || type === 'none') {
    if (name !== undefined) throw badRequest(`tool_choice.name: not allowed with type ${type}`, 'tool_choice.name');
    out['tool_choice'] = type === 'any' ? 'required' : type;
  } else {
    throw badRequest(`tool_choice.type: must be one of auto, any, tool, none; got ${JSON.stringify(type ?? null)}`, 'tool_choice.type');
  }
  if (single === true) out['parallel_tool_calls'] = false;
  return out;
}

function chatTool(t: unknown, at: string): Body {
  if (typeof t !== 'object' || t === null || Array.isArray(t)) throw badRequest(`${at}: must be a tool object`, at);
  const { type, name, description, input_schema: schema, strict, ...rest } = t as Body;
  if (type !== undefined && type !== null && type !== 'custom') {
    throw badRequest(`${at}.type: tools of type ${JSON.stringify(type)} are not supported by this server; only custom tools are`, `${at}.type`);
  }
  const extra = Object.entries(rest).find(([, v]) => v !== undefined && v !== null)?.[0];
  if (extra !== undefined) throw badRequest(`${at}.${extra}: not supported by this server`, `${at}.${extra}`);
  if (typeof name !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(name)) throw badRequest(`${at}.name: must be 1 to 64 letters, digits, underscores or dashes`, `${at}.name`);
  if (description !== undefined && typeof description !== 'string') throw badRequest(`${at}.description: must be a string`, `${at}.description`);
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema) || (schema as Body)['type'] !== 'object') {
    throw badRequest(`${at}.input_schema: must be a JSON Schema of type object`, `${at}.input_schema`);
  }
  if (strict !== undefined && typeof strict !== 'boolean') throw badRequest(`${at}.strict: must be a boolean`, `${at}.strict`);
  return { type: 'function', function: { name, ...(description === undefined ? {} : { description }), parameters: schema, ...(strict === undefined ? {} : { strict }) } };
}

/**
 * A message's content blocks as chat messages. A user's tool_result blocks become tool messages (before its text,
 * as Anthropic has them first); an assistant's tool_use blocks become its tool_calls, its text their content.
 * `text` reads one text block's text (refusing any other block).
 */
export function blockMessages(role: 'user' | 'assistant', blocks: unknown[], where: string, text: (block: unknown, at: string) => string): ChatMessage[] {
  let said = '';
  const calls: Body[] = [];
  const results: ChatMessage[] = [];
  blocks.forEach((block: unknown, j) => {
    const at = `${where}.${j}`;
    const type = typeof block === 'object' && block !== null ? (block as Body)['type'] : undefined;
    if (role === 'assistant' && type === 'tool_use') calls.push(toolUse(block as Body, at));
    else if (role === 'user' && type === 'tool_result') results.push(toolResult(block as Body, at, text));
    else said += text(block, at);
  });
  if (role === 'assistant') return calls.length === 0 ? [{ role, content: said }] : [{ role, content: said === '' ? null : said, tool_calls: calls }];
  return results.length === 0 || said !== '' ? [...results, { role, content: said }] : results;
}

function toolUse(b: Body, at: string): Body {
  const { type: _type, id, name, input, caller, ...rest } = b;
  noExtra(rest, at);
  if (typeof id !== 'string' || id === '') throw badRequest(`${at}.id: Field required`, `${at}.id`);
  if (typeof name !== 'string') throw badRequest(`${at}.name: Field required`, `${at}.name`);
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw badRequest(`${at}.input: must be an object`, `${at}.input`);
  // The block as this API answered it names its caller; only a direct call is one a client's tool answers.
  if (caller !== undefined && caller !== null && (caller as Body)['type'] !== 'direct') throw badRequest(`${at}.caller: only a direct caller is supported by this server`, `${at}.caller`);
  return { id, type: 'function', function: { name, arguments: JSON.stringify(input) } };
}

/** A tool's result; one that is an error says so in front of its text, as the chat has no field for it. */
function toolResult(b: Body, at: string, text: (block: unknown, at: string) => string): ChatMessage {
  const { type: _type, tool_use_id: id, content, is_error: isError, ...rest } = b;
  noExtra(rest, at);
  if (typeof id !== 'string' || id === '') throw badRequest(`${at}.tool_use_id: Field required`, `${at}.tool_use_id`);
  if (isError !== undefined && typeof isError !== 'boolean') throw badRequest(`${at}.is_error: must be a boolean`, `${at}.is_error`);
  let s = '';
  if (typeof content === 'string') s = content;
  else if (Array.isArray(content)) content.forEach((c: unknown, k) => (s += text(c, `${at}.content.${k}`)));
  else if (content !== undefined) throw badRequest(`${at}.content: must be a string or an array of text blocks`, `${at}.content`);
  return { role: 'tool', content: isError === true ? `Error: ${s}` : s, tool_call_id: id };
}

function noExtra(rest: Body, at: string): void {
  const extra = Object.entries(rest).find(([, v]) => v !== undefined && v !== null)?.[0];
  if (extra !== undefined) throw badRequest(`${at}.${extra}: not supported by this server`, `${at}.${extra}`);
}
