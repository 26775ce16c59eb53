import type { ChatHistoryItem, ChatModelFunctionCall, ChatModelFunctions, ChatModelResponse, ChatWrapper, LlamaModel, LlamaText, Token } from 'node-llama-cpp';
import { invalidArg } from '../../errors.js';

/**
 * Chat requests. A text model gets a conversation as the request parameter `messages`: the JSON text of an
 * array of `{ "role": "system" | "developer" | "user" | "assistant", "content": "…" }` (OpenAI's messages with
 * text content). The backend, not the frontend, applies the chat template, because the template lives in
 * the GGUF file that only the backend reads; the same request then works for any frontend (the OpenAI API,
 * Triton's generate) and a gateway backend can forward the messages to its engine as they are. With tools, an
 * assistant message may carry OpenAI's `tool_calls` and a `tool` message answers one by `tool_call_id`.
 */
export const MESSAGES_PARAMETER = 'messages';

export interface ChatMessage {
  readonly role: 'system' | 'user' | 'assistant' | 'tool';
  readonly content: string;
  /** An assistant's calls: its id and the function's name and arguments. */
  readonly toolCalls?: readonly { readonly id: string; readonly name: string; readonly params: unknown }[];
  /** A tool message: the call it answers. */
  readonly toolCallId?: string;
}

/** The `messages` parameter as checked messages; throws INVALID_ARG saying what is wrong. */
export function parseMessages(text: unknown): ChatMessage[] {
  if (typeof text !== 'string') throw invalidArg(`parameter '${MESSAGES_PARAMETER}' must be the JSON text of an array of messages`);
  let list: unknown;
  try {
    list = JSON.parse(text);
  } catch (e) {
    throw invalidArg(`parameter '${MESSAGES_PARAMETER}' is not valid JSON: ${(e as Error).message}`);
  }
  if (!Array.isArray(list) || list.length === 0) throw invalidArg(`parameter '${MESSAGES_PARAMETER}' must be a non-empty array of messages`);
  return list.map((m: unknown, i): ChatMessage => {
    if (typeof m !== 'object' || m === null) throw invalidArg(`message ${i} must be an object with 'role' and 'content'`);
    const { role, content, tool_calls: calls, tool_call_id: answers } = m as Record<string, unknown>;
    if (role === 'assistant' && calls !== undefined && calls !== null && (content === null || content === undefined)) return { role, content: '', toolCalls: toolCalls(calls, i) };
    if (typeof content !== 'string') throw invalidArg(`message ${i} must have a string 'content'`);
    if (role === 'system' || role === 'developer') return { role: 'system', content };
    if (role === 'user') return { role, content };
    if (role === 'assistant') return calls === undefined || calls === null ? { role, content } : { role, content, toolCalls: toolCalls(calls, i) };
    if (role === 'tool' && typeof answers === 'string') return { role, content, toolCallId: answers };
    if (role === 'tool') throw invalidArg(`message ${i} is a tool message without a string 'tool_call_id'`);
    throw invalidArg(`message ${i} has role ${JSON.stringify(role)}; expected system, developer, user, assistant or tool`);
  });
}

function toolCalls(v: unknown, i: number): ChatMessage['toolCalls'] {
  const wrong = (why: string): Error => invalidArg(`message ${i}: 'tool_calls' ${why}`);
  if (!Array.isArray(v)) throw wrong('must be an array');
  return v.map((c: unknown) => {
    const call = c as { id?: unknown; function?: { name?: unknown; arguments?: unknown } } | null;
    const f = call?.function;
    if (typeof call?.id !== 'string' || typeof f?.name !== 'string' || typeof f.arguments !== 'string') throw wrong("must hold {id, function: {name, arguments}} with strings");
    try {
      return { id: call.id, name: f.name, params: f.arguments.trim() === '' ? undefined : JSON.parse(f.arguments) as unknown };
    } catch {
      throw wrong(`holds a call of ${JSON.stringify(f.name)} whose arguments are not JSON`);
    }
  });
}

/**
 * The conversation as the chat wrapper's history, ending in the empty model turn it is to write. A call and
 * the tool message that answers it become one function call with its result, as node-llama-cpp renders them.
 */
export function chatHistory(messages: readonly ChatMessage[]): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = [];
  const open = new Map<string, ChatModelFunctionCall>();
  messages.forEach((m, i) => {
    if (m.role === 'tool') {
      const call = open.get(m.toolCallId!);
      if (call === undefined) throw invalidArg(`message ${i} answers the tool call ${JSON.stringify(m.toolCallId)}, which no earlier assistant message made`);
      call.result = toolResult(m.content);
      open.delete(m.toolCallId!);
    } else if (m.role === 'assistant') {
      const response: ChatModelResponse['response'] = m.content === '' ? [] : [m.content];
      for (const c of m.toolCalls ?? []) {
        const call: ChatModelFunctionCall = { type: 'functionCall', name: c.name, params: c.params, result: undefined };
        response.push(call);
        open.set(c.id, call);
      }
      history.push({ type: 'model', response });
    } else {
      history.push({ type: m.role, text: m.content });
    }
  });
  history.push({ type: 'model', response: [] });
  return history;
}

/** A tool's answer: its JSON value when it is JSON text, else the text. */
function toolResult(content: string): unknown {
  try {
    return JSON.parse(content) as unknown;
  } catch {
    return content;
  }
}

export interface ChatPrompt {
  readonly tokens: Token[];
  /** Text the template ends an assistant turn with (such as ChatML's <|im_end|>): generation stops there. */
  readonly stopTriggers: readonly LlamaText[];
}

/** The conversation through the model's chat template (documenting `functions`, if any), ready for the model to answer as the assistant. */
export function applyChatTemplate(model: LlamaModel, wrapper: ChatWrapper, history: ChatHistoryItem[], functions?: ChatModelFunctions): ChatPrompt {
  const state = wrapper.generateContextState({ chatHistory: history, availableFunctions: functions });
  return { tokens: state.contextText.tokenize(model.tokenizer), stopTriggers: state.stopGenerationTriggers };
}
