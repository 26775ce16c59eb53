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

export type FinishReason = 'stop' | 'length';

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

  /** The whole answer of a request made without `stream`. */
  whole(text: string, finish: FinishReason, usage: Usage | undefined): string {
    const choice = this.request.kind === 'chat'
      ? { index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: finish }
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

  /** The chunk that closes the choice with its finish reason. */
  finish(reason: FinishReason): string {
    return this.request.kind === 'chat' ? this.chunk({}, reason) : this.chunk('', reason);
  }

  /** stream_options.include_usage: a chunk with no choices and the token counts. */
  usage(usage: Usage): string {
    return JSON.stringify({ ...this.head(true), choices: [], usage });
  }

  private chunk(content: string | Record<string, string>, finish: FinishReason | null): string {
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
