import { randomBytes } from 'node:crypto';
import { LlamaChat, LlamaText, type ChatHistoryItem, type ChatModelFunctions, type ChatWrapper, type ChatWrapperGenerateContextStateOptions, type ChatWrapperGeneratedContextState, type LLamaChatGenerateResponseOptions, type LlamaContextSequence } from 'node-llama-cpp';
import { NereidError } from '../../errors.js';
import type { ToolRequest } from './tools.js';

/** OpenAI's tool call, whole or (with its index) a piece of one. */
export type ToolCall = Record<string, unknown>;

export interface ToolChatResult {
  readonly stopReason: string;
  /** The calls made, in OpenAI's shape: {id, type: "function", function: {name, arguments}}. */
  readonly calls: ToolCall[];
}

/** The sampling and streaming options of a generation, as LlamaChat takes them (no functions, no grammar). */
export type ChatOptions = Omit<LLamaChatGenerateResponseOptions, 'functions' | 'grammar' | 'onFunctionCall' | 'onFunctionCallParamsChunk' | 'maxParallelFunctionCalls' | 'documentFunctionParams'>;

/**
 * One chat answer with functions, through node-llama-cpp's LlamaChat: it renders the functions with the
 * model's chat wrapper, notices when the model starts a call in the wrapper's syntax, and from there holds the
 * function's name and parameters to a grammar. A forced call (tool_choice "required" or a named function)
 * starts the answer with the wrapper's call prefix, so the model writes a call from its first token.
 *
 * `onDelta`, when streaming: each call's pieces as they are generated, in OpenAI's chunk shape (the first with
 * the index, id, type, name and arguments "", then the index and a piece of the arguments).
 */
export async function chatWithTools(sequence: LlamaContextSequence, wrapper: ChatWrapper, history: ChatHistoryItem[], tools: ToolRequest,
  options: ChatOptions, onDelta: ((delta: ToolCall) => void) | undefined): Promise<ToolChatResult> {
  const chat = new LlamaChat({ contextSequence: sequence, chatWrapper: tools.forced ? forcedCall(wrapper, tools.functions) : wrapper });
  const ids: string[] = [];
  // Each call's arguments as the model wrote them (JSON its schema accepts), whole or streamed alike: the
  // whitespace the grammar lets follow the JSON is held back until more text follows it, and dropped at the end.
  const args: string[] = [];
  const sent: number[] = [];
  const announce = (index: number, name: string, text: string): void => {
    ids[index] = callId();
    onDelta?.({ index, id: ids[index], type: 'function', function: { name, arguments: text } });
  };
  try {
    const result = await chat.generateResponse(history, {
      ...options,
      functions: tools.callable,
      documentFunctionParams: true,
      maxParallelFunctionCalls: tools.maxCalls,
      // Never drop the start of the conversation to make room (LlamaChat's default): the request fails instead.
      contextShift: { strategy: noContextShift },
      onFunctionCallParamsChunk: (c) => {
        if (ids[c.callIndex] === undefined) announce(c.callIndex, c.functionName, '');
        const i = c.callIndex;
        const text = args[i] = (args[i] ?? '') + c.paramsChunk;
        const end = text.trimEnd().length;
        if (onDelta !== undefined && end > (sent[i] ?? 0)) onDelta({ index: i, function: { arguments: text.slice(sent[i] ?? 0, end) } });
        sent[i] = Math.max(sent[i] ?? 0, end);
      },
    });
    const calls = (result.functionCalls ?? []).map((f, i): ToolCall => {
      // A function without parameters streams no pieces: it is announced whole.
      if (ids[i] === undefined) announce(i, f.functionName, JSON.stringify(f.params ?? {}));
      return { id: ids[i], type: 'function', function: { name: f.functionName, arguments: args[i]?.trimEnd() || JSON.stringify(f.params ?? {}) } };
    });
    return { stopReason: result.metadata.stopReason, calls };
  } finally {
    chat.dispose({ disposeSequence: false });
  }
}

/**
 * The model's wrapper, documenting every function (LlamaChat is given only the callable ones) and starting the
 * answer with a call: no prefix to wait for, the call prefix injected, and the function's name next.
 */
function forcedCall(wrapper: ChatWrapper, functions: ChatModelFunctions): ChatWrapper {
  const inject = LlamaText(wrapper.settings.functions.call.prefix);
  const forced = Object.create(wrapper) as ChatWrapper;
  forced.generateContextState = (options: ChatWrapperGenerateContextStateOptions): ChatWrapperGeneratedContextState => {
    const state = wrapper.generateContextState({ ...options, availableFunctions: functions });
    return { contextText: state.contextText, stopGenerationTriggers: state.stopGenerationTriggers, noPrefixTrigger: { type: 'functionCall', inject } };
  };
  return forced;
}

function noContextShift(): never {
  throw new NereidError('CONTEXT_LENGTH_EXCEEDED', "the conversation, its functions and max_tokens do not fit this model's context");
}

/** An id in OpenAI's form: call_ and 24 letters and digits. */
function callId(): string {
  return `call_${randomBytes(18).toString('base64url').replace(/[-_]/g, 'x').slice(0, 24)}`;
}
