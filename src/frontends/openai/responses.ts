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

/** One generated token's figures in OpenAI's chat shape (ChatCompletionTokenLogprob), as the model reports them. */
export interface TokenLogprob {
  readonly token: string;
  readonly logprob: number;
  readonly bytes: number[] | null;
  readonly top_logprobs: readonly { token: string; logprob: number; bytes: number[] | null }[];
}

/** One choice of a whole answer. */
export interface Choice {
  readonly text: string;
  readonly finish: FinishReason;
  readonly toolCalls?: readonly ToolCall[] | undefined;
  /** With `logprobs`: the figures of its tokens (none when the model reported none). */
  readonly logprobs?: readonly TokenLogprob[] | undefined;
}

export class Reply {
  private readonly id: string;
  private readonly created = Math.floor(Date.now() / 1000);
  /** A text chunk of choice i is these two around the JSON string of its text: serialised once, not per token. */
  private readonly textBefore: string[] = [];
  private readonly textAfter: string[] = [];
  /** Legacy completions' logprobs.text_offset: where each choice's next token starts in its text. */
  private readonly offsets: number[];

  constructor(private readonly request: TextRequest) {
    this.id = `${request.kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${randomBytes(12).toString('hex')}`;
    const marker = '\u0000';
    for (let i = 0; i < request.n; i++) {
      const [before, after] = this.chunk(request.kind === 'chat' ? { content: marker } : marker, null, i).split(JSON.stringify(marker));
      this.textBefore.push(before!);
      this.textAfter.push(after!);
    }
    this.offsets = new Array<number>(request.n).fill(0);
  }

  /**
   * The whole answer of a request made without `stream`, its choices in order. With tool calls, a message's
   * content is null unless the model wrote text before its calls, as OpenAI's is.
   */
  whole(choices: readonly Choice[], usage: Usage | undefined): string {
    return JSON.stringify({ ...this.head(false), choices: choices.map((c, index) => this.wholeChoice(c, index)), ...(usage ? { usage } : {}) });
  }

  private wholeChoice(c: Choice, index: number): Record<string, unknown> {
    const logprobs = this.logprobs(c.logprobs, index);
    if (this.request.kind !== 'chat') return { index, text: c.text, logprobs, finish_reason: c.finish };
    const message = c.toolCalls === undefined ? { role: 'assistant', content: c.text } : { role: 'assistant', content: c.text === '' ? null : c.text, tool_calls: c.toolCalls };
    return { index, message, logprobs, finish_reason: c.finish };
  }

  /** A chat stream opens each choice with the assistant's role and no text, as OpenAI's does. */
  opening(index = 0): string | undefined {
    if (this.request.kind !== 'chat') return undefined;
    return this.chunk({ role: 'assistant', content: '' }, null, index);
  }

  /** One piece of generated text; with `logprobs`, the figures of the tokens it completes. */
  text(piece: string, index = 0, logprobs?: readonly TokenLogprob[]): string {
    if (logprobs !== undefined) return this.chunk(this.request.kind === 'chat' ? { content: piece } : piece, null, index, this.logprobs(logprobs, index));
    return this.textBefore[index] + JSON.stringify(piece) + this.textAfter[index];
  }

  /**
   * Pieces of tool calls in OpenAI's chunk shape: a call's first piece carries its index, id, type, name and
   * arguments "", later ones its index and a piece of the arguments.
   */
  toolCalls(deltas: readonly ToolCall[], index = 0): string {
    return this.chunk({ tool_calls: deltas }, null, index);
  }

  /** The chunk that closes a choice with its finish reason. */
  finish(reason: FinishReason, index = 0): string {
    return this.request.kind === 'chat' ? this.chunk({}, reason, index) : this.chunk('', reason, index);
  }

  /** stream_options.include_usage: a chunk with no choices and the token counts. */
  usage(usage: Usage): string {
    return JSON.stringify({ ...this.head(true), choices: [], usage });
  }

  /**
   * A choice's logprobs in the request's shape: chat's {content, refusal}, or legacy completions' lists of
   * tokens, their logprobs, their alternatives and where each starts in the text; null when not asked for.
   */
  private logprobs(entries: readonly TokenLogprob[] | undefined, index: number): Record<string, unknown> | null {
    if (!this.request.logprobs) return null;
    const list = entries ?? [];
    if (this.request.kind === 'chat') return { content: list, refusal: null };
    const text_offset: number[] = [];
    for (const e of list) {
      text_offset.push(this.offsets[index]!);
      this.offsets[index]! += e.token.length;
    }
    return {
      tokens: list.map((e) => e.token),
      token_logprobs: list.map((e) => e.logprob),
      top_logprobs: list.map((e) => Object.fromEntries(e.top_logprobs.map((t) => [t.token, t.logprob]))),
      text_offset,
    };
  }

  private chunk(content: string | Record<string, unknown>, finish: FinishReason | null, index: number, logprobs: Record<string, unknown> | null = null): string {
    const choice = typeof content === 'string'
      ? { index, text: content, logprobs, finish_reason: finish }
      : { index, delta: content, logprobs, finish_reason: finish };
    return JSON.stringify({ ...this.head(true), choices: [choice] });
  }

  private head(chunk: boolean): { id: string; object: string; created: number; model: string } {
    const object = this.request.kind === 'chat' ? (chunk ? 'chat.completion.chunk' : 'chat.completion') : 'text_completion';
    return { id: this.id, object, created: this.created, model: this.request.model };
  }
}
