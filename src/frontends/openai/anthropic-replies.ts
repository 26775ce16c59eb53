import { randomBytes } from 'node:crypto';
import type { Parameters } from '../../inference/index.js';
import { isNereidError } from '../../errors.js';
import { isOpenAiError, OPENAI_STATUS } from './errors.js';

/**
 * Anthropic's Messages API answers for one generation: a whole message, or the server-sent events of a
 * stream (message_start, content_block_start, content_block_delta..., content_block_stop, message_delta,
 * message_stop), and errors as `{"type": "error", "error": {"type", "message"}}`.
 */
export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence';

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
  const stopReason = p?.['finish_reason'] === 'length' ? 'max_tokens' : stopSequence !== null ? 'stop_sequence' : 'end_turn';
  return { stopReason, stopSequence, inputTokens: count(p?.['prompt_tokens']), outputTokens: count(p?.['completion_tokens']) };
}

function count(v: unknown): number {
  return typeof v === 'number' ? v : 0;
}

export class MessageReply {
  private readonly id = `msg_${randomBytes(12).toString('hex')}`;

  constructor(private readonly model: string) {}

  whole(text: string, end: Ending): string {
    return JSON.stringify({
      ...this.message([{ type: 'text', text }], end.stopReason, end.stopSequence),
      usage: { input_tokens: end.inputTokens, output_tokens: end.outputTokens },
    });
  }

  /**
   * message_start and the opening of the one text block. The prompt's token count comes with the model's
   * last response, so message_start says 0 and message_delta carries the count (the SDK's stream helper takes it from there).
   */
  opening(): string {
    const message = { ...this.message([], null, null), usage: { input_tokens: 0, output_tokens: 0 } };
    return sse('message_start', JSON.stringify({ type: 'message_start', message }))
      + sse('content_block_start', '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}');
  }

  text(piece: string): string {
    return `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":${JSON.stringify(piece)}}}\n\n`;
  }

  closing(end: Ending): string {
    const delta = {
      type: 'message_delta',
      delta: { stop_reason: end.stopReason, stop_sequence: end.stopSequence },
      usage: { input_tokens: end.inputTokens, output_tokens: end.outputTokens },
    };
    return sse('content_block_stop', '{"type":"content_block_stop","index":0}')
      + sse('message_delta', JSON.stringify(delta))
      + sse('message_stop', '{"type":"message_stop"}');
  }

  private message(content: unknown[], stopReason: StopReason | null, stopSequence: string | null): Record<string, unknown> {
    return { id: this.id, type: 'message', role: 'assistant', model: this.model, content, stop_reason: stopReason, stop_sequence: stopSequence };
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
