import { badRequest } from './errors.js';
import { optionalBool, optionalNumber } from './requests.js';
import { functionCallItem, functionCallOutputItem, responsesTools, type ChatToolCall, type ResponsesTools } from './responses-tools.js';

/**
 * OpenAI's Responses API request body (POST /v1/responses), checked and reduced to what the chat path needs:
 * the conversation as chat messages, the sampling fields, response_format and the function tools under the
 * chat request's names. Every field is honoured, accepted where its value asks for nothing this server does
 * not do (`background: false`, `truncation: "disabled"`, …), or refused by name.
 */
export interface ChatMessage {
  readonly role: string;
  /** null for an assistant message that only calls functions. */
  readonly content: string | null;
  /** An assistant's function_call items. */
  readonly tool_calls?: readonly ChatToolCall[];
  /** A tool message (a function_call_output item): the call it answers. */
  readonly tool_call_id?: string;
}

export interface ResponsesRequest {
  readonly model: string;
  /** This request's input items, as messages (an input string is one user message). */
  readonly input: readonly ChatMessage[];
  readonly instructions: string | null;
  readonly maxOutputTokens: number | null;
  readonly temperature: number | null;
  readonly topP: number | null;
  /** text.format in the Responses shape, echoed in the response. */
  readonly textFormat: Record<string, unknown>;
  /** text.format as the chat request's response_format. */
  readonly responseFormat: Record<string, unknown> | undefined;
  readonly stream: boolean;
  readonly store: boolean;
  readonly previousResponseId: string | null;
  readonly metadata: Record<string, string>;
  readonly user: string | null;
  readonly safetyIdentifier: string | null;
  readonly tools: ResponsesTools;
}

type Body = Record<string, unknown>;

const HONOURED = new Set(['model', 'input', 'instructions', 'max_output_tokens', 'temperature', 'top_p', 'text', 'stream', 'store', 'previous_response_id', 'metadata', 'user', 'safety_identifier', 'tools', 'tool_choice', 'parallel_tool_calls']);

/**
 * Fields accepted only with the values that ask for nothing: a response is always answered in the foreground, without obfuscation padding, untruncated (a
 * conversation past the context is refused, which is what `truncation: "disabled"` asks), with no extra output
 * included and no log probabilities. Any other value is refused by name.
 */
const HARMLESS: Record<string, (v: unknown) => boolean> = {
  include: (v) => Array.isArray(v) && v.length === 0,
  background: (v) => v === false,
  truncation: (v) => v === 'disabled',
  service_tier: (v) => v === 'auto' || v === 'default',
  stream_options: (v) => isObject(v) && Object.entries(v).every(([k, b]) => k === 'include_obfuscation' && typeof b === 'boolean'),
  top_logprobs: (v) => v === 0,
  max_tool_calls: () => false,
  reasoning: () => false,
};

/** Bounds a client cannot pass: OpenAI's for metadata, and as many input items as any context holds. */
const MAX_ITEMS = 2048;
const MAX_METADATA_PAIRS = 16;
const MAX_METADATA_KEY = 64;
const MAX_METADATA_VALUE = 512;
const MAX_USER = 256;
const MAX_TOKENS_LIMIT = 1 << 20;

export function responsesRequest(body: unknown): ResponsesRequest {
  if (!isObject(body)) throw badRequest('the request body must be a JSON object');
  checkFields(body);
  const model = body['model'];
  if (typeof model !== 'string' || model === '') throw badRequest("Missing required parameter: 'model'.", 'model');
  const format = textFormat(body['text']);
  return {
    model,
    input: inputMessages(body['input']),
    instructions: optionalString(body, 'instructions', Infinity),
    maxOutputTokens: optionalNumber(body, 'max_output_tokens', 1, MAX_TOKENS_LIMIT, true) ?? null,
    temperature: optionalNumber(body, 'temperature', 0, 2, false) ?? null,
    topP: optionalNumber(body, 'top_p', 0, 1, false) ?? null,
    textFormat: format.echo,
    responseFormat: format.chat,
    stream: optionalBool(body, 'stream') ?? false,
    store: optionalBool(body, 'store') ?? true,
    previousResponseId: optionalString(body, 'previous_response_id', 256),
    metadata: metadata(body['metadata']),
    user: optionalString(body, 'user', MAX_USER),
    safetyIdentifier: optionalString(body, 'safety_identifier', MAX_USER),
    tools: responsesTools(body),
  };
}

/** The fields POST /v1/responses/input_tokens takes: what shapes the prompt. */
const COUNT_FIELDS = new Set(['model', 'input', 'instructions', 'previous_response_id', 'text', 'tools', 'tool_choice', 'parallel_tool_calls', 'truncation', 'reasoning']);

/** POST /v1/responses/input_tokens: the prompt's fields as /v1/responses takes them; any other field is refused by name. */
export function inputTokensRequest(body: unknown): ResponsesRequest {
  if (!isObject(body)) throw badRequest('the request body must be a JSON object');
  const extra = Object.keys(body).find((k) => !COUNT_FIELDS.has(k));
  if (extra !== undefined) throw badRequest(`'${extra}' is not supported by this server when counting input tokens`, extra);
  const r = responsesRequest(body);
  return { ...r, maxOutputTokens: 1, stream: false, store: false, responseFormat: undefined, tools: countable(r.tools) };
}

/**
 * The functions are documented in the prompt alike whether the model may or must call them, so counting asks
 * for "auto": a forced call would only spend the one token generated on its prefix.
 */
function countable(tools: ResponsesTools): ResponsesTools {
  const choice = tools.chat['tool_choice'];
  return choice === undefined || choice === 'auto' || choice === 'none' ? tools : { ...tools, chat: { ...tools.chat, tool_choice: 'auto' } };
}

function checkFields(b: Body): void {
  for (const [key, v] of Object.entries(b)) {
    if (HONOURED.has(key) || v === null || v === undefined) continue;
    const harmless = HARMLESS[key];
    if (harmless === undefined || !harmless(v)) throw badRequest(`'${key}' is not supported by this server${harmless === undefined ? '' : ` with the value ${JSON.stringify(v)}`}`, key);
  }
}

/**
 * `input`: a string (one user message) or a list of items: messages with text content, function_call items
 * (joined to the assistant message before them, or making one, as a chat's tool_calls) and
 * function_call_output items (the chat's tool messages).
 */
function inputMessages(v: unknown): ChatMessage[] {
  if (typeof v === 'string') return [{ role: 'user', content: v }];
  if (!Array.isArray(v) || v.length === 0) throw badRequest("'input' must be a string or a non-empty array of input items", 'input');
  if (v.length > MAX_ITEMS) throw badRequest(`'input' holds ${v.length} items; at most ${MAX_ITEMS} are supported`, 'input');
  const out: ChatMessage[] = [];
  v.forEach((item: unknown, i) => {
    const where = `input[${i}]`;
    if (!isObject(item)) throw badRequest(`'${where}' must be an object`, where);
    if (item['type'] === 'function_call_output') return void out.push(functionCallOutputItem(item, where, contentText));
    if (item['type'] !== 'function_call') return void out.push(inputMessage(item, where));
    const call = functionCallItem(item, where);
    const last = out.at(-1);
    if (last?.role === 'assistant') out[out.length - 1] = { ...last, tool_calls: [...(last.tool_calls ?? []), call] };
    else out.push({ role: 'assistant', content: null, tool_calls: [call] });
  });
  return out;
}

function inputMessage(item: Record<string, unknown>, where: string): ChatMessage {
  const { type, role, content, id, status, ...rest } = item;
  if (type !== undefined && type !== 'message') {
    throw badRequest(`'${where}.type' ${JSON.stringify(type)} is not supported by this server; only message, function_call and function_call_output are`, `${where}.type`);
  }
  const extra = Object.keys(rest)[0];
  if (extra !== undefined) throw badRequest(`'${where}.${extra}' is not supported by this server`, `${where}.${extra}`);
  // An output item sent back as input carries its id and status: they name it, and change nothing.
  if ((id !== undefined && typeof id !== 'string') || (status !== undefined && typeof status !== 'string')) throw badRequest(`'${where}' has an id or status that is not a string`, where);
  if (role !== 'user' && role !== 'system' && role !== 'developer' && role !== 'assistant') {
    throw badRequest(`'${where}.role' must be one of user, system, developer, assistant; got ${JSON.stringify(role ?? null)}`, `${where}.role`);
  }
  return { role, content: contentText(content, `${where}.content`) };
}

/** Content as a string or a list of input_text / output_text parts; any other part (images, files, refusals) is refused by its type. */
function contentText(content: unknown, where: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw badRequest(`'${where}' must be a string or an array of content parts`, where);
  let s = '';
  content.forEach((part: unknown, j) => {
    const at = `${where}[${j}]`;
    if (!isObject(part)) throw badRequest(`'${at}' must be an object`, at);
    const { type, text, annotations, logprobs, ...rest } = part;
    if (type !== 'input_text' && type !== 'output_text') throw badRequest(`'${at}.type' ${JSON.stringify(type ?? null)} is not supported by this server; only input_text and output_text are`, `${at}.type`);
    if (typeof text !== 'string') throw badRequest(`'${at}.text' must be a string`, `${at}.text`);
    const extra = Object.keys(rest)[0];
    if (extra !== undefined) throw badRequest(`'${at}.${extra}' is not supported by this server`, `${at}.${extra}`);
    // An output_text part sent back carries its annotations and log probabilities: they change nothing.
    if ((annotations !== undefined && !Array.isArray(annotations)) || (logprobs !== undefined && !Array.isArray(logprobs))) throw badRequest(`'${at}' has annotations or logprobs that are not arrays`, at);
    s += text;
  });
  return s;
}

/**
 * text.format: {type: text | json_object | json_schema} in the Responses shape (name, schema, strict and
 * description beside type), mapped to the chat request's response_format, which the chat path checks.
 */
function textFormat(v: unknown): { echo: Record<string, unknown>; chat: Record<string, unknown> | undefined } {
  const none = { echo: { type: 'text' }, chat: undefined };
  if (v === undefined || v === null) return none;
  if (!isObject(v)) throw badRequest("'text' must be an object", 'text');
  const { format, verbosity, ...rest } = v;
  const extra = Object.keys(rest)[0];
  if (extra !== undefined) throw badRequest(`'text.${extra}' is not supported by this server`, `text.${extra}`);
  if (verbosity !== undefined && verbosity !== null) throw badRequest("'text.verbosity' is not supported by this server", 'text.verbosity');
  if (format === undefined || format === null) return none;
  if (!isObject(format)) throw badRequest("'text.format' must be an object", 'text.format');
  const { type, name, schema, strict, description } = format;
  if (type === 'text') return none;
  if (type === 'json_object') return { echo: { type }, chat: { type } };
  if (type !== 'json_schema') throw badRequest(`'text.format.type' must be one of text, json_object, json_schema; got ${JSON.stringify(type ?? null)}`, 'text.format.type');
  if (typeof name !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(name)) throw badRequest("'text.format.name' must be 1 to 64 letters, digits, underscores or dashes", 'text.format.name');
  if (!isObject(schema)) throw badRequest("'text.format.schema' is required and must be an object", 'text.format.schema');
  if (strict !== undefined && strict !== null && typeof strict !== 'boolean') throw badRequest("'text.format.strict' must be a boolean", 'text.format.strict');
  const echo = { type, name, schema, strict: strict ?? null, ...(description === undefined ? {} : { description }) };
  return { echo, chat: { type, json_schema: { name, schema, ...(strict === undefined ? {} : { strict }) } } };
}

function metadata(v: unknown): Record<string, string> {
  if (v === undefined || v === null) return {};
  if (!isObject(v)) throw badRequest("'metadata' must be an object of strings", 'metadata');
  const entries = Object.entries(v);
  if (entries.length > MAX_METADATA_PAIRS) throw badRequest(`'metadata' holds ${entries.length} pairs; at most ${MAX_METADATA_PAIRS} are allowed`, 'metadata');
  for (const [k, s] of entries) {
    if (k.length > MAX_METADATA_KEY || typeof s !== 'string' || s.length > MAX_METADATA_VALUE) {
      throw badRequest(`'metadata' keys are at most ${MAX_METADATA_KEY} characters and values strings of at most ${MAX_METADATA_VALUE}; '${k.slice(0, MAX_METADATA_KEY)}' is not`, 'metadata');
    }
  }
  return v as Record<string, string>;
}

function optionalString(b: Body, key: string, max: number): string | null {
  const v = b[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string' || v.length > max) throw badRequest(`'${key}' must be a string${max === Infinity ? '' : ` of at most ${max} characters`}`, key);
  return v;
}

function isObject(v: unknown): v is Body {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
