import { isNereidError } from '../../errors.js';
import type { InferenceResponse, Parameters } from '../../inference/index.js';
import { OpenAiError } from './errors.js';
import type { TextRequest } from './requests.js';
import type { FinishReason, TokenLogprob, ToolCall, Usage } from './responses.js';
import { textOf } from './text-models.js';

/**
 * What a text model's responses carry beside their text, read into OpenAI's terms: the finish reason, the token
 * counts, tool calls and log probabilities (response parameters finish_reason, prompt_tokens, completion_tokens,
 * tool_calls, logprobs), and a prompt past the model's context as OpenAI's error.
 */

/** A prompt past the model's context as OpenAI answers it: code context_length_exceeded, naming prompt or messages. */
export function contextError(e: unknown, request: TextRequest): OpenAiError | undefined {
  if (!isNereidError(e) || e.code !== 'CONTEXT_LENGTH_EXCEEDED') return undefined;
  return new OpenAiError('INVALID_ARG', e.message, request.kind === 'chat' ? 'messages' : 'prompt', 'context_length_exceeded');
}

export function finishReason(p: Parameters | undefined): FinishReason {
  const reason = p?.['finish_reason'];
  return reason === 'length' || reason === 'tool_calls' ? reason : 'stop';
}

/** The tool calls (or, streaming, their pieces) a response carries as the JSON text of OpenAI's list; none if it carries none. */
export function toolCallsOf(p: Parameters | undefined): ToolCall[] | undefined {
  const calls = jsonList(p?.['tool_calls'], 'tool calls');
  return calls === undefined || calls.length === 0 ? undefined : calls as ToolCall[];
}

/** The figures of the tokens a response's text completes (the JSON text of OpenAI's chat list); none if it carries none. */
export function logprobsOf(p: Parameters | undefined): TokenLogprob[] | undefined {
  return jsonList(p?.['logprobs'], 'log probabilities') as TokenLogprob[] | undefined;
}

function jsonList(text: unknown, what: string): object[] | undefined {
  if (typeof text !== 'string') return undefined;
  let list: unknown;
  try {
    list = JSON.parse(text);
  } catch {
    throw new OpenAiError('INTERNAL', `the model answered ${what} that are not JSON`);
  }
  if (!Array.isArray(list) || !list.every((c) => typeof c === 'object' && c !== null)) throw new OpenAiError('INTERNAL', `the model answered ${what} that are not a list of objects`);
  return list as object[];
}

/** A message's tool call: the call without the index its stream pieces carry. */
export function wholeCall({ index: _index, ...call }: ToolCall): ToolCall {
  return call;
}

/** OpenAI's usage from the model's counts; undefined when the model reports none. */
export function usage(p: Parameters | undefined): Usage | undefined {
  const prompt = p?.['prompt_tokens'];
  const completion = p?.['completion_tokens'];
  if (typeof prompt !== 'number' || typeof completion !== 'number') return undefined;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/**
 * Reads a model's streamed responses in order, handing on each text piece and, when the request has tools, each
 * response's tool-call pieces; resolves to the last parameters seen (the finish reason and counts).
 */
export async function readPieces(first: IteratorResult<InferenceResponse>, responses: AsyncIterableIterator<InferenceResponse>, tools: boolean,
  onText: (piece: string) => void, onCalls: (pieces: ToolCall[]) => void): Promise<Parameters | undefined> {
  let last: Parameters | undefined;
  for (let r = first; !r.done; r = await responses.next()) {
    const piece = textOf(r.value);
    if (piece !== '') onText(piece);
    const pieces = tools ? toolCallsOf(r.value.parameters) : undefined;
    if (pieces !== undefined) onCalls(pieces);
    last = r.value.parameters ?? last;
  }
  return last;
}
