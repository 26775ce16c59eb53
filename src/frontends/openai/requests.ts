import type { Parameters } from '../../inference/index.js';
import { badRequest } from './errors.js';
import { assistantToolCalls, toolParameters } from './tool-requests.js';

/**
 * OpenAI's completion and chat completion request bodies, checked and turned into what a text model takes:
 * the prompt as `text_input`, or for chat the messages as the `messages` parameter (the model's backend
 * applies its own chat template: a GGUF carries one, a remote engine has its own), and the sampling fields
 * as request parameters under the names Triton's LLM backends use (max_tokens, temperature, top_p, top_k,
 * min_p, presence_penalty, frequency_penalty, repetition_penalty, logit_bias, best_of, seed, stop, stream,
 * ignore_eos, response_format): the model's backend honours each or refuses it, as it does on generate. A chat's
 * tools travel the same way (tool-requests.ts). Log probabilities are asked of the model as the parameters
 * `logprobs` (true) and `top_logprobs` (alternatives per token), whatever the endpoint's own spelling; `n`
 * choices are n requests to the model (choices.ts).
 */
export interface TextRequest {
  readonly kind: 'completion' | 'chat';
  readonly model: string;
  /** The prompt; '' for chat, whose conversation is in parameters.messages. */
  readonly prompt: string;
  readonly stream: boolean;
  /** stream_options.include_usage: a last chunk with the token counts before [DONE]. */
  readonly includeUsage: boolean;
  /** Choices asked for: 1 to MAX_CHOICES. */
  readonly n: number;
  /** Whether the choices carry log probabilities (the model is asked through parameters). */
  readonly logprobs: boolean;
  readonly parameters: Parameters;
}

type Body = Record<string, unknown>;

/** The largest max_tokens accepted here; the model refuses what does not fit its context. */
const MAX_TOKENS_LIMIT = 1 << 20;
/** The most choices one request may ask for: each is a generation of its own. */
export const MAX_CHOICES = 8;
/** Alternatives per token: chat's bound (OpenAI's), and legacy completions' `logprobs`. */
const MAX_TOP_LOGPROBS = 20;
const MAX_COMPLETION_LOGPROBS = 5;
/** Entries a logit_bias may hold, as the in-process backend bounds it. */
const MAX_LOGIT_BIAS_ENTRIES = 1024;

export function completionRequest(body: unknown): TextRequest {
  const b = object(body);
  const prompt = promptText(b['prompt']);
  if (prompt === '') throw badRequest("'prompt' must not be empty", 'prompt');
  if (b['echo'] === true) throw badRequest("'echo' is not supported", 'echo');
  if (b['suffix'] !== undefined && b['suffix'] !== null) throw badRequest("'suffix' is not supported", 'suffix');
  return textRequest('completion', b, prompt, {});
}

export function chatRequest(body: unknown): TextRequest {
  const b = object(body);
  const messages = chatMessages(b['messages']);
  return textRequest('chat', b, '', { messages: JSON.stringify(messages), ...toolParameters(b) });
}

function object(body: unknown): Body {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('the request body must be a JSON object');
  return body as Body;
}

function textRequest(kind: TextRequest['kind'], b: Body, prompt: string, extra: Parameters): TextRequest {
  const model = b['model'];
  if (typeof model !== 'string' || model === '') throw badRequest("'model' is required and must be a string", 'model');
  const n = optionalNumber(b, 'n', 1, MAX_CHOICES, true) ?? 1;
  const top = kind === 'chat' ? chatLogprobs(b) : completionLogprobs(b);
  const stream = optionalBool(b, 'stream') ?? false;
  const maxKey = kind === 'chat' && b['max_completion_tokens'] !== undefined && b['max_completion_tokens'] !== null ? 'max_completion_tokens' : 'max_tokens';
  const p: Record<string, string | number | boolean> = { ...extra, stream };
  if (top !== null) {
    p['logprobs'] = true;
    p['top_logprobs'] = top;
  }
  const set = (key: string, v: string | number | boolean | undefined): void => {
    if (v !== undefined) p[key] = v;
  };
  set('max_tokens', optionalNumber(b, maxKey, 1, MAX_TOKENS_LIMIT, true));
  set('temperature', optionalNumber(b, 'temperature', 0, 2, false));
  set('top_p', optionalNumber(b, 'top_p', 0, 1, false));
  set('top_k', optionalNumber(b, 'top_k', -1, 2 ** 31 - 1, true));
  set('min_p', optionalNumber(b, 'min_p', 0, 1, false));
  set('presence_penalty', optionalNumber(b, 'presence_penalty', -2, 2, false));
  set('frequency_penalty', optionalNumber(b, 'frequency_penalty', -2, 2, false));
  set('repetition_penalty', positive(b, 'repetition_penalty'));
  set('logit_bias', logitBias(b['logit_bias']));
  if (kind === 'completion') set('best_of', optionalNumber(b, 'best_of', 1, 128, true));
  set('seed', optionalNumber(b, 'seed', 0, 2 ** 32 - 1, true));
  set('ignore_eos', optionalBool(b, 'ignore_eos'));
  set('stop', stopSequences(b['stop']));
  set('response_format', responseFormat(b['response_format']));
  return { kind, model, prompt, stream, includeUsage: stream && includeUsage(b['stream_options']), n, logprobs: top !== null, parameters: p };
}

/** Chat's `logprobs` (a boolean) and `top_logprobs` (0 to 20, only with logprobs): the alternatives asked for, null for none. */
function chatLogprobs(b: Body): number | null {
  const asked = optionalBool(b, 'logprobs') ?? false;
  const top = optionalNumber(b, 'top_logprobs', 0, MAX_TOP_LOGPROBS, true);
  if (!asked && top !== undefined && top > 0) throw badRequest("'top_logprobs' needs 'logprobs' to be true", 'top_logprobs');
  return asked ? top ?? 0 : null;
}

/** Legacy completions' `logprobs`: the alternatives per token, 0 to 5 (0: the chosen tokens alone); null for none. */
function completionLogprobs(b: Body): number | null {
  if (b['top_logprobs'] !== undefined && b['top_logprobs'] !== null) throw badRequest("'top_logprobs' is a chat field; completions take 'logprobs' (0 to 5)", 'top_logprobs');
  return optionalNumber(b, 'logprobs', 0, MAX_COMPLETION_LOGPROBS, true) ?? null;
}

/** A prompt is a string or an array holding one string (OpenAI's batch of prompts is not supported). */
function promptText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (Array.isArray(v) && v.length === 1 && typeof v[0] === 'string') return v[0];
  if (Array.isArray(v) && v.length > 1 && v.every((s) => typeof s === 'string')) throw badRequest('only one prompt per request is supported', 'prompt');
  throw badRequest("'prompt' is required and must be a string", 'prompt');
}

/**
 * OpenAI's messages down to { role, content } with content as a string; an assistant's tool_calls (its content
 * may then be null) and a tool message's tool_call_id are kept.
 */
function chatMessages(v: unknown): Body[] {
  if (!Array.isArray(v) || v.length === 0) throw badRequest("'messages' must be a non-empty array", 'messages');
  return v.map((m: unknown, i) => {
    const where = `messages[${i}]`;
    if (typeof m !== 'object' || m === null || Array.isArray(m)) throw badRequest(`${where} must be an object`, where);
    const { role, content } = m as Body;
    if (role === 'tool') return { role, content: messageContent(content, `${where}.content`), tool_call_id: toolCallId(m as Body, where) };
    if (role !== 'system' && role !== 'developer' && role !== 'user' && role !== 'assistant') {
      throw badRequest(`${where}.role must be one of system, developer, user, assistant, tool; got ${JSON.stringify(role ?? null)}`, `${where}.role`);
    }
    const calls = role === 'assistant' ? assistantToolCalls((m as Body)['tool_calls'], `${where}.tool_calls`) : undefined;
    if (calls === undefined) return { role, content: messageContent(content, `${where}.content`) };
    return { role, content: content === null || content === undefined ? null : messageContent(content, `${where}.content`), tool_calls: calls };
  });
}

function toolCallId(m: Body, where: string): string {
  const id = m['tool_call_id'];
  if (typeof id !== 'string' || id === '') throw badRequest(`${where}.tool_call_id is required for a tool message`, `${where}.tool_call_id`);
  return id;
}

function messageContent(content: unknown, where: string): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((part: unknown, j) => {
      const p = part as Body | null;
      if (typeof p !== 'object' || p === null || p['type'] !== 'text' || typeof p['text'] !== 'string') {
        throw badRequest(`${where}[${j}] must be a text part {"type": "text", "text": "…"}`, `${where}[${j}]`);
      }
      return p['text'];
    }).join('');
  }
  throw badRequest(`${where} must be a string or an array of text parts`, where);
}

/** stop: a string or up to four strings; passed on as one string or as the JSON text of the list. */
function stopSequences(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') return v;
  if (Array.isArray(v) && v.length <= 4 && v.every((s) => typeof s === 'string')) return JSON.stringify(v);
  throw badRequest("'stop' must be a string or an array of at most 4 strings", 'stop');
}

/**
 * response_format: OpenAI's object, checked in its shape and passed on as its JSON text (the model's backend
 * reads the schema: it knows which parts it can honour); none for {"type": "text"}, which asks for nothing.
 */
function responseFormat(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  const wrong = (why: string, param = 'response_format'): never => {
    throw badRequest(`'${param}' ${why}`, param);
  };
  if (typeof v !== 'object' || Array.isArray(v)) wrong('must be an object');
  const type = (v as Body)['type'];
  if (type === 'text') return undefined;
  if (type === 'json_object') return JSON_OBJECT_FORMAT;
  if (type !== 'json_schema') wrong(`'type' must be one of text, json_object, json_schema; got ${JSON.stringify(type ?? null)}`);
  const js = (v as Body)['json_schema'];
  if (typeof js !== 'object' || js === null || Array.isArray(js)) return wrong('must be an object', 'response_format.json_schema');
  const { name, schema, strict } = js as Body;
  if (typeof name !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(name)) wrong('must be 1 to 64 letters, digits, underscores or dashes', 'response_format.json_schema.name');
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) wrong('is required and must be an object', 'response_format.json_schema.schema');
  if (strict !== undefined && strict !== null && typeof strict !== 'boolean') wrong('must be a boolean', 'response_format.json_schema.strict');
  return JSON.stringify(v);
}

const JSON_OBJECT_FORMAT = JSON.stringify({ type: 'json_object' });

/** logit_bias: OpenAI's object of token ids to biases from -100 to 100, passed on as its JSON text. */
function logitBias(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  const wrong = (why: string): never => {
    throw badRequest(`'logit_bias' must be an object of token ids to numbers from -100 to 100: ${why}`, 'logit_bias');
  };
  if (typeof v !== 'object' || Array.isArray(v)) wrong('not an object');
  const entries = Object.entries(v as Body);
  if (entries.length > MAX_LOGIT_BIAS_ENTRIES) wrong(`at most ${MAX_LOGIT_BIAS_ENTRIES} entries, got ${entries.length}`);
  if (entries.length === 0) return undefined;
  for (const [k, b] of entries) {
    if (!/^\d{1,10}$/.test(k) || Number(k) > 2 ** 31 - 1) wrong(`${JSON.stringify(k)} is not a token id`);
    if (typeof b !== 'number' || !Number.isFinite(b) || b < -100 || b > 100) wrong(`the bias of token ${k} is ${JSON.stringify(b)}`);
  }
  return JSON.stringify(v);
}

/** repetition_penalty: multiplicative, greater than 0 (1 is none), as vLLM takes it. */
function positive(b: Body, key: string): number | undefined {
  const v = optionalNumber(b, key, 0, 10, false);
  if (v === 0) throw badRequest(`'${key}' must be greater than 0`, key);
  return v;
}

function includeUsage(v: unknown): boolean {
  if (v === undefined || v === null) return false;
  if (typeof v !== 'object' || Array.isArray(v)) throw badRequest("'stream_options' must be an object", 'stream_options');
  const u = (v as Body)['include_usage'];
  if (u !== undefined && typeof u !== 'boolean') throw badRequest("'stream_options.include_usage' must be a boolean", 'stream_options');
  return u === true;
}

/** A number field within bounds, undefined when absent or null; else a 400 naming the field. */
export function optionalNumber(b: Body, key: string, min: number, max: number, integer: boolean): number | undefined {
  const v = b[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || (integer && !Number.isInteger(v)) || v < min || v > max) {
    throw badRequest(`'${key}' must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}, got ${JSON.stringify(v)}`, key);
  }
  return v;
}

/** A boolean field, undefined when absent or null; else a 400 naming the field. */
export function optionalBool(b: Body, key: string): boolean | undefined {
  const v = b[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw badRequest(`'${key}' must be a boolean`, key);
  return v;
}
