import type { ChatHistoryItem, ChatWrapper, LlamaModel, LlamaText, Token } from 'node-llama-cpp';
import { invalidArg } from '../../errors.js';

/**
 * Chat requests. A text model gets a conversation as the request parameter `messages`: the JSON text of an
 * array of `{ "role": "system" | "developer" | "user" | "assistant", "content": "…" }` (OpenAI's messages with
 * text content). The backend, not the frontend, applies the chat template, because the template lives in
 * the GGUF file that only the backend reads; the same request then works for any frontend (the OpenAI API,
 * Triton's generate) and a gateway backend can forward the messages to its engine as they are.
 */
export const MESSAGES_PARAMETER = 'messages';

export interface ChatMessage {
  readonly role: 'system' | 'user' | 'assistant';
  readonly content: string;
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
    const { role, content } = m as Record<string, unknown>;
    if (typeof content !== 'string') throw invalidArg(`message ${i} must have a string 'content'`);
    if (role === 'system' || role === 'developer') return { role: 'system', content };
    if (role === 'user' || role === 'assistant') return { role, content };
    throw invalidArg(`message ${i} has role ${JSON.stringify(role)}; expected system, developer, user or assistant`);
  });
}

export interface ChatPrompt {
  readonly tokens: Token[];
  /** Text the template ends an assistant turn with (such as ChatML's <|im_end|>): generation stops there. */
  readonly stopTriggers: readonly LlamaText[];
}

/** The conversation through the model's chat template, ready for the model to answer as the assistant. */
export function applyChatTemplate(model: LlamaModel, wrapper: ChatWrapper, messages: readonly ChatMessage[]): ChatPrompt {
  const history: ChatHistoryItem[] = messages.map((m): ChatHistoryItem => {
    if (m.role === 'assistant') return { type: 'model', response: [m.content] };
    return { type: m.role, text: m.content };
  });
  // The wrapper renders the turn the model is to write as the last item, an empty model response.
  history.push({ type: 'model', response: [] });
  const state = wrapper.generateContextState({ chatHistory: history });
  return { tokens: state.contextText.tokenize(model.tokenizer), stopTriggers: state.stopGenerationTriggers };
}
