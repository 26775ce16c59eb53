import { badRequest } from './errors.js';
import { chatRequest, type TextRequest } from './requests.js';
import { blockMessages, toolFields, type ChatMessage } from './anthropic-tools.js';

/**
 * Anthropic's Messages API request bodies (POST /v1/messages and /v1/messages/count_tokens), checked with
 * messages that name Anthropic's fields and turned into the OpenAI chat request the chat path serves: the
 * same model call, limits and parameters. Every field is honoured or refused by name; there is no field that
 * is quietly ignored.
 */

type Body = Record<string, unknown>;

/** The fields /v1/messages honours. `metadata.user_id` is accepted and used nowhere: not logged, not passed on. */
const MESSAGES_FIELDS = new Set(['model', 'messages', 'system', 'max_tokens', 'stop_sequences', 'temperature', 'top_p', 'top_k', 'metadata', 'stream', 'tools', 'tool_choice']);
const COUNT_FIELDS = new Set(['model', 'messages', 'system', 'tools', 'tool_choice']);
/** As many stop strings as the models take (the llama.cpp backend's and OpenAI's bound). */
const MAX_STOP_SEQUENCES = 4;
/** Anthropic's bound on metadata.user_id. */
const MAX_USER_ID_LENGTH = 256;

export function messagesRequest(body: unknown): TextRequest {
  const b = fields(body, MESSAGES_FIELDS);
  if (b['max_tokens'] === undefined) throw badRequest('max_tokens: Field required', 'max_tokens');
  const maxTokens = b['max_tokens'];
  if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1) throw badRequest('max_tokens: must be an integer of at least 1', 'max_tokens');
  checkNumber(b, 'temperature', 1);
  checkNumber(b, 'top_p', 1);
  const topK = b['top_k'];
  if (topK !== undefined && (typeof topK !== 'number' || !Number.isInteger(topK) || topK < 0)) throw badRequest('top_k: must be an integer of at least 0', 'top_k');
  if (b['stream'] !== undefined && typeof b['stream'] !== 'boolean') throw badRequest('stream: must be a boolean', 'stream');
  checkMetadata(b['metadata']);
  return chatRequest({
    model: b['model'], messages: conversation(b), max_tokens: maxTokens, temperature: b['temperature'], top_p: b['top_p'],
    top_k: topK, stop: stopSequences(b['stop_sequences']), stream: b['stream'], ...toolFields(b),
  });
}

/**
 * count_tokens: the conversation as /v1/messages would send it, generating a single token, so that the count
 * is the prompt the chat path counts (the chat template applied by the model's backend, or by the engine).
 * Tools are documented in the prompt alike whether the model may or must use one, so a forced choice is counted
 * as auto: the one token generated is then never spent on a call's prefix.
 */
export function countTokensRequest(body: unknown): TextRequest {
  const b = fields(body, COUNT_FIELDS);
  const tools = toolFields(b);
  if (tools['tool_choice'] !== undefined && tools['tool_choice'] !== 'none') tools['tool_choice'] = 'auto';
  return chatRequest({ model: b['model'], messages: conversation(b), max_tokens: 1, stream: false, ...tools });
}

/** The body as an object holding none but `allowed` fields: any other is refused by name. */
function fields(body: unknown, allowed: ReadonlySet<string>): Body {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('the request body must be a JSON object');
  const b = body as Body;
  for (const key of Object.keys(b)) {
    if (!allowed.has(key)) throw badRequest(`${key}: not supported by this server`, key);
  }
  if (typeof b['model'] !== 'string' || b['model'] === '') throw badRequest('model: Field required', 'model');
  return b;
}

function checkNumber(b: Body, key: string, max: number): void {
  const v = b[key];
  if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > max)) throw badRequest(`${key}: must be a number from 0 to ${max}`, key);
}

function checkMetadata(v: unknown): void {
  if (v === undefined) return;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw badRequest('metadata: must be an object', 'metadata');
  for (const [key, value] of Object.entries(v)) {
    if (key !== 'user_id') throw badRequest(`metadata.${key}: not supported by this server`, `metadata.${key}`);
    if (value !== null && (typeof value !== 'string' || value.length > MAX_USER_ID_LENGTH)) {
      throw badRequest(`metadata.user_id: must be a string of at most ${MAX_USER_ID_LENGTH} characters`, 'metadata.user_id');
    }
  }
}

function stopSequences(v: unknown): string[] | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || !v.every((s) => typeof s === 'string')) throw badRequest('stop_sequences: must be an array of strings', 'stop_sequences');
  if (v.length > MAX_STOP_SEQUENCES) throw badRequest(`stop_sequences: at most ${MAX_STOP_SEQUENCES} are supported, got ${v.length}`, 'stop_sequences');
  return v;
}

/** `system` and `messages` as OpenAI chat messages: text content, tool calls and tool results (anthropic-tools.ts). */
function conversation(b: Body): ChatMessage[] {
  const messages = b['messages'];
  if (!Array.isArray(messages) || messages.length === 0) throw badRequest('messages: must be a non-empty array', 'messages');
  const out: ChatMessage[] = [];
  if (b['system'] !== undefined) out.push({ role: 'system', content: text(b['system'], 'system') });
  messages.forEach((m: unknown, i) => {
    const where = `messages.${i}`;
    if (typeof m !== 'object' || m === null || Array.isArray(m)) throw badRequest(`${where}: must be an object`, where);
    const { role, content, ...rest } = m as Body;
    const extra = Object.keys(rest)[0];
    if (extra !== undefined) throw badRequest(`${where}.${extra}: not supported by this server`, `${where}.${extra}`);
    if (role !== 'user' && role !== 'assistant') throw badRequest(`${where}.role: must be 'user' or 'assistant'`, `${where}.role`);
    if (typeof content === 'string') out.push({ role, content });
    else if (Array.isArray(content)) out.push(...blockMessages(role, content, `${where}.content`, textBlock));
    else throw badRequest(`${where}.content: must be a string or an array of content blocks`, `${where}.content`);
  });
  return out;
}

/** `system`: a string or text blocks. */
function text(content: unknown, where: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw badRequest(`${where}: must be a string or an array of content blocks`, where);
  let s = '';
  content.forEach((block: unknown, j) => (s += textBlock(block, `${where}.${j}`)));
  return s;
}

/**
 * One text block's text; any other block (image, document, …, and tool blocks where the role has none) is
 * refused by its type.
 */
function textBlock(block: unknown, at: string): string {
  if (typeof block !== 'object' || block === null || Array.isArray(block)) throw badRequest(`${at}: must be a content block object`, at);
  const { type, text: t, ...rest } = block as Body;
  if (type !== 'text') throw badRequest(`${at}.type: content blocks of type ${JSON.stringify(type)} are not supported by this server here; only text blocks are, and a message's tool_use (assistant) and tool_result (user) blocks`, `${at}.type`);
  if (typeof t !== 'string') throw badRequest(`${at}.text: Field required`, `${at}.text`);
  for (const [key, value] of Object.entries(rest)) {
    if (value !== null && value !== undefined) throw badRequest(`${at}.${key}: not supported by this server`, `${at}.${key}`);
  }
  return t;
}
