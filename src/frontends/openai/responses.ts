import { randomBytes } from 'node:crypto';
import type { TextRequest } from './requests.js';

/**
 * OpenAI's response objects for one generation: a whole completion, or the chunks of a stream. One Reply is
 * made per request, holding what every chunk repeats (id, created, model).
 */
export interface Usage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls';

/** One of OpenAI's tool calls: whole in a message, or a piece of one (with its index) in a chunk's delta. */
export type ToolCall = Record<string, unknown>;

export class Reply {
  private readonly id: string;
  private readonly created = Math.floor(Date.now() / 1000);
  /** A text chunk is these two around the JSON string of its text: serialised once, not per token. */
  private readonly textBefore: string;
  private readonly textAfter: string;

  constructor(private readonly request: TextRequest) {
    this.id = `${request.kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${randomBytes(12).toString('hex')}`;
    const marker = '\u0000';
    const [before, after] = this.chunk(request.kind === 'chat' ? { content: marker } : marker, null).split(JSON.stringify(marker));
    this.textBefore = before!;
    this.textAfter = after!;
  }

  /**
   * The whole answer of a request made without `stream`. With tool calls, the message's content is null unless
   * the model wrote text before its calls, as OpenAI's is.
   */
  whole(text: string, finish: FinishReason, usage: Usage | undefined, toolCalls?: readonly ToolCall[]): string {
    const message = toolCalls === undefined ? { role: 'assistant', content: text } : { role: 'assistant', content: text === '' ? null : text, tool_calls: toolCalls };
    const choice = this.request.kind === 'chat'
      ? { index: 0, message, logprobs: null, finish_reason: finish }
      : { index: 0, text, logprobs: null, finish_reason: finish };
    return JSON.stringify({ ...this.head(false), choices: [choice], ...(usage ? { usage } : {}) });
  }

  /** A chat stream opens with the assistant's role and no text, as OpenAI's does. */
  opening(): string | undefined {
    if (this.request.kind !== 'chat') return undefined;
    return this.chunk({ role: 'assistant', content: '' }, null);
  }

  /** One piece of generated text. */
  text(piece: string): string {
    return this.textBefore + JSON.stringify(piece) + this.textAfter;
  }

  /**
   * Pieces of tool calls in OpenAI's chunk shape: a call's first piece carries its index, id, type, name and
   * arguments "", later ones its index and a piece of the arguments.
   */
  toolCalls(deltas: readonly ToolCall[]): string {
    return this.chunk({ tool_calls: deltas }, null);
  }

  /** The chunk that closes the choice with its finish reason. */
  finish(reason: FinishReason): string {
    return this.request.kind === 'chat' ? this.chunk({}, reason) : this.chunk('', reason);
  }

  /** stream_options.include_usage: a chunk with no choices and the token counts. */
  usage(usage: Usage): string {
    return JSON.stringify({ ...this.head(true), choices: [], usage });
  }

  private chunk(content: string | Record<string, unknown>, finish: FinishReason | null): string {
    const choice = typeof content === 'string'
      ? { index: 0, text: content, logprobs: null, finish_reason: finish }
      : { index: 0, delta: content, logprobs: null, finish_reason: finish };
    return JSON.stringify({ ...this.head(true), choices: [choice] });
  }

  private head(chunk: boolean): { id: string; object: string; created: number; model: string } {
    const object = this.request.kind === 'chat' ? (chunk ? 'chat.completion.chunk' : 'chat.completion') : 'text_completion';
    return { id: this.id, object, created: this.created, model: this.request.model };
  }
}
