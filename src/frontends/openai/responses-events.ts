import { randomBytes } from 'node:crypto';
import { errorReply } from './errors.js';
import type { ResponsesRequest } from './responses-requests.js';

/**
 * The Responses API's answers for one generation: the response object (whole, or as the lifecycle events
 * carry it), and the typed server-sent events of a stream, each with its `event:` line and a
 * sequence_number counted from 0: response.created, response.in_progress, response.output_item.added,
 * response.content_part.added, response.output_text.delta..., response.output_text.done,
 * response.content_part.done, response.output_item.done, then response.completed (or response.incomplete
 * when max_output_tokens cut the text); an error once the stream has begun is an `error` event then
 * response.failed.
 */
export interface Ending {
  /** max_output_tokens ended the text. */
  readonly cut: boolean;
  readonly inputTokens: number;
  readonly outputTokens: number;
}

export type Status = 'in_progress' | 'completed' | 'incomplete' | 'failed';

export const newId = (prefix: string): string => `${prefix}_${randomBytes(24).toString('hex')}`;

export class ResponseReply {
  readonly id = newId('resp');
  private readonly messageId = newId('msg');
  private readonly createdAt = Math.floor(Date.now() / 1000);
  private sequence = 0;
  /** A delta event is these two around its text and its sequence number: serialised once, not per token. */
  private readonly deltaHead: string;

  constructor(private readonly request: ResponsesRequest) {
    this.deltaHead = `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","item_id":"${this.messageId}","output_index":0,"content_index":0,"delta":`;
  }

  /** The response object: as the stream opens (no output yet), or once the text is whole. */
  response(status: Status, text: string | null, end: Ending | null, error: Record<string, unknown> | null = null): Record<string, unknown> {
    const r = this.request;
    return {
      id: this.id, object: 'response', created_at: this.createdAt, status,
      ...(status === 'completed' || status === 'incomplete' ? { completed_at: Math.floor(Date.now() / 1000) } : {}),
      background: false, error,
      incomplete_details: end?.cut ? { reason: 'max_output_tokens' } : null,
      instructions: r.instructions, max_output_tokens: r.maxOutputTokens, max_tool_calls: null, model: r.model,
      output: text === null ? [] : [this.message(status === 'incomplete' ? 'incomplete' : 'completed', text)],
      parallel_tool_calls: true, previous_response_id: r.previousResponseId, reasoning: { effort: null, summary: null },
      service_tier: 'default', store: r.store, temperature: r.temperature, text: { format: r.textFormat }, tool_choice: 'auto', tools: [],
      top_logprobs: 0, top_p: r.topP, truncation: 'disabled',
      usage: end === null ? null : usage(end), user: r.user, safety_identifier: r.safetyIdentifier, metadata: r.metadata,
    };
  }

  /** The opening events, up to the empty text part the deltas go into. */
  opening(): string {
    const item = { id: this.messageId, type: 'message', status: 'in_progress', role: 'assistant', content: [] };
    const at = { item_id: this.messageId, output_index: 0, content_index: 0 };
    return this.event('response.created', { response: this.response('in_progress', null, null) })
      + this.event('response.in_progress', { response: this.response('in_progress', null, null) })
      + this.event('response.output_item.added', { output_index: 0, item })
      + this.event('response.content_part.added', { ...at, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } });
  }

  delta(piece: string): string {
    return `${this.deltaHead}${JSON.stringify(piece)},"logprobs":[],"sequence_number":${this.sequence++}}\n\n`;
  }

  /** The closing events; `whole` is the final response object, as a whole reply would give it. */
  closing(text: string, whole: Record<string, unknown>): string {
    const at = { item_id: this.messageId, output_index: 0, content_index: 0 };
    const item = (whole['output'] as unknown[])[0];
    return this.event('response.output_text.done', { ...at, text, logprobs: [] })
      + this.event('response.content_part.done', { ...at, part: outputText(text) })
      + this.event('response.output_item.done', { output_index: 0, item })
      + this.event(whole['status'] === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: whole });
  }

  /**
   * An error once the stream has begun: OpenAI's `error` event (the code, message and param the request's
   * error reply would have had), then response.failed with the error's class in OpenAI's words.
   */
  failure(e: unknown): string {
    const { status, body } = errorReply(e);
    const { error } = JSON.parse(body) as { error: { message: string; type: string; param: string | null; code: string | null } };
    const failed = { code: status === 429 ? 'rate_limit_exceeded' : status < 500 ? 'invalid_prompt' : 'server_error', message: error.message };
    return this.event('error', { code: error.code ?? error.type, message: error.message, param: error.param })
      + this.event('response.failed', { response: this.response('failed', null, null, failed) });
  }

  private message(status: 'completed' | 'incomplete', text: string): Record<string, unknown> {
    return { id: this.messageId, type: 'message', status, role: 'assistant', content: [outputText(text)] };
  }

  private event(type: string, fields: Record<string, unknown>): string {
    return `event: ${type}\ndata: ${JSON.stringify({ type, ...fields, sequence_number: this.sequence++ })}\n\n`;
  }
}

function outputText(text: string): Record<string, unknown> {
  return { type: 'output_text', text, annotations: [], logprobs: [] };
}

function usage(end: Ending): Record<string, unknown> {
  return {
    input_tokens: end.inputTokens, input_tokens_details: { cached_tokens: 0 },
    output_tokens: end.outputTokens, output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: end.inputTokens + end.outputTokens,
  };
}
