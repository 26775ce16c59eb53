import { randomBytes } from 'node:crypto';
import type { Parameters } from '../../inference/index.js';
import { isNereidError } from '../../errors.js';
import { isOpenAiError, OpenAiError, OPENAI_STATUS } from './errors.js';

/**
 * Anthropic's Messages API answers for one generation: a whole message, or the server-sent events of a
 * stream (message_start; for each content block as it begins content_block_start, content_block_delta...,
 * content_block_stop; message_delta, message_stop), and errors as `{"type": "error", "error": {"type",
 * "message"}}`. The content is the text (when there is any, or nothing else) then the tool_use blocks of the
 * calls the model made; streamed, a text block opens with its first text and a tool_use block with its call's
 * first piece, its input following as input_json_delta pieces.
 */
export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use';

/** A call the model made, as the chat path reports it: its id, name and arguments (JSON text). */
export interface ToolUse {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

/** A streamed call's piece as the chat path reports it: OpenAI's chat tool call delta. */
type CallPiece = Record<string, unknown>;

export interface Ending {
  readonly stopReason: StopReason;
  readonly stopSequence: string | null;
  readonly inputTokens: number;
  readonly outputTokens: number;
}

/** How the model's last response ended the message, from its finish_reason, stop_sequence and token counts. */
export function ending(p: Parameters | undefined): Ending {
  const stop = p?.['stop_sequence'];
  const stopSequence = typeof stop === 'string' ? stop : null;
  const finish = p?.['finish_reason'];
  const stopReason = finish === 'length' ? 'max_tokens' : finish === 'tool_calls' ? 'tool_use' : stopSequence !== null ? 'stop_sequence' : 'end_turn';
  return { stopReason, stopSequence, inputTokens: count(p?.['prompt_tokens']), outputTokens: count(p?.['completion_tokens']) };
}

function count(v: unknown): number {
  return typeof v === 'number' ? v : 0;
}

export class MessageReply {
  private readonly id = `msg_${randomBytes(12).toString('hex')}`;
  /** Streaming: the blocks opened so far (the last is open), and the text block's index once it opens. */
  private blocks = 0;
  private textIndex = -1;
  /** A text delta is this before its text: serialised once the text block opens, not per token. */
  private textHead = '';
  /** Streaming: the calls begun, by their index in the chat path's list, as their block's index. */
  private readonly callBlocks: number[] = [];

  constructor(private readonly model: string) {}

  whole(text: string, calls: readonly ToolUse[], end: Ending): string {
    const content: unknown[] = text !== '' || calls.length === 0 ? [{ type: 'text', text }] : [];
    for (const c of calls) content.push(toolUseBlock(c, parseInput(c.arguments)));
    return JSON.stringify({
      ...this.message(content, end.stopReason, end.stopSequence),
      usage: { input_tokens: end.inputTokens, output_tokens: end.outputTokens },
    });
  }

  /**
   * message_start. The prompt's token count comes with the model's last response, so message_start says 0 and
   * message_delta carries the count (the SDK's stream helper takes it from there).
   */
  opening(): string {
    const message = { ...this.message([], null, null), usage: { input_tokens: 0, output_tokens: 0 } };
    return sse('message_start', JSON.stringify({ type: 'message_start', message }));
  }

  text(piece: string): string {
    return `${this.textIndex < 0 ? this.openText() : ''}${this.textHead}${JSON.stringify(piece)}}}\n\n`;
  }

  /** Streamed pieces of calls: a call's first piece opens its tool_use block, its arguments are input_json_delta pieces. */
  callPieces(pieces: readonly CallPiece[]): string {
    let events = '';
    for (const p of pieces) {
      const index = p['index'];
      if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index > this.callBlocks.length) throw new Error(`the model streamed a tool call with the index ${String(index)}`);
      const f = (p['function'] ?? {}) as Record<string, unknown>;
      if (index === this.callBlocks.length) {
        events += this.closeOpen();
        this.callBlocks.push(this.blocks);
        const block = toolUseBlock({ id: String(p['id'] ?? ''), name: String(f['name'] ?? ''), arguments: '' }, {});
        events += sse('content_block_start', JSON.stringify({ type: 'content_block_start', index: this.blocks++, content_block: block }));
      }
      const args = f['arguments'];
      if (typeof args === 'string' && args !== '') {
        events += sse('content_block_delta', JSON.stringify({ type: 'content_block_delta', index: this.callBlocks[index], delta: { type: 'input_json_delta', partial_json: args } }));
      }
    }
    return events;
  }

  closing(end: Ending): string {
    const delta = {
      type: 'message_delta',
      delta: { stop_reason: end.stopReason, stop_sequence: end.stopSequence },
      usage: { input_tokens: end.inputTokens, output_tokens: end.outputTokens },
    };
    // A message with no content still has its (empty) text block.
    return (this.blocks === 0 ? this.openText() : '') + this.closeOpen()
      + sse('message_delta', JSON.stringify(delta))
      + sse('message_stop', '{"type":"message_stop"}');
  }

  private openText(): string {
    const events = this.closeOpen();
    this.textIndex = this.blocks++;
    this.textHead = `event: content_block_delta\ndata: {"type":"content_block_delta","index":${this.textIndex},"delta":{"type":"text_delta","text":`;
    return events + sse('content_block_start', `{"type":"content_block_start","index":${this.textIndex},"content_block":{"type":"text","text":""}}`);
  }

  /** The stop of the block opened last, if one is open. */
  private closeOpen(): string {
    return this.blocks === 0 ? '' : sse('content_block_stop', `{"type":"content_block_stop","index":${this.blocks - 1}}`);
  }

  private message(content: unknown[], stopReason: StopReason | null, stopSequence: string | null): Record<string, unknown> {
    return { id: this.id, type: 'message', role: 'assistant', model: this.model, content, stop_reason: stopReason, stop_sequence: stopSequence };
  }
}

/** A tool_use block; its id is the call's with Anthropic's prefix, so a tool_result that names it answers that call. */
function toolUseBlock(c: ToolUse, input: unknown): Record<string, unknown> {
  return { type: 'tool_use', id: `toolu_${c.id.replace(/^call_/, '')}`, name: c.name, input, caller: { type: 'direct' } };
}

/** A call's arguments as the input object; the chat path's calls are JSON text, an engine's might not be. */
function parseInput(args: string): unknown {
  try {
    return JSON.parse(args === '' ? '{}' : args);
  } catch {
    throw new OpenAiError('INTERNAL', 'the model answered a tool call whose arguments are not JSON');
  }
}

function sse(event: string, data: string): string {
  return `event: ${event}\ndata: ${data}\n\n`;
}

/** Any thrown value as Anthropic's error: the status the OpenAI port gives it, and Anthropic's type for that status. */
export function anthropicErrorReply(e: unknown): { status: number; body: string } {
  const known = isOpenAiError(e) || isNereidError(e);
  const status = OPENAI_STATUS[known ? e.code : 'INTERNAL'];
  // Anything unknown keeps its detail in the log, as on OpenAI's paths.
  const message = known ? e.message : 'internal error';
  return { status, body: JSON.stringify({ type: 'error', error: { type: errorType(status), message } }) };
}

/** An error that ends a stream already under way. */
export function errorEvent(e: unknown): string {
  return sse('error', anthropicErrorReply(e).body);
}

function errorType(status: number): string {
  switch (status) {
    case 401: return 'authentication_error';
    case 403: return 'permission_error';
    case 404: return 'not_found_error';
    case 413: return 'request_too_large';
    case 429: return 'rate_limit_error';
    case 503: return 'overloaded_error';
    default: return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}
