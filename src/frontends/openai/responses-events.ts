import { randomBytes } from 'node:crypto';
import { errorReply } from './errors.js';
import type { ResponsesRequest } from './responses-requests.js';

/**
 * The Responses API's answers for one generation: the response object (whole, or as the lifecycle events
 * carry it), and the typed server-sent events of a stream, each with its `event:` line and a
 * sequence_number counted from 0: response.created, response.in_progress, then for each output item as it
 * begins response.output_item.added and its deltas (a message: response.content_part.added,
 * response.output_text.delta...; a function call: response.function_call_arguments.delta...), closed
 * before the next item opens (response.output_text.done, response.content_part.done or
 * response.function_call_arguments.done, then response.output_item.done), then response.completed (or
 * response.incomplete when max_output_tokens cut the text); an error once the stream has begun is an
 * `error` event then response.failed. A response with neither text nor calls has one empty message.
 */
export interface Ending {
  /** max_output_tokens ended the text. */
  readonly cut: boolean;
  readonly inputTokens: number;
  readonly outputTokens: number;
}

export type Status = 'in_progress' | 'completed' | 'incomplete' | 'failed';

/** A function call the model made, as the chat path reports it: its call id (call_…), name and arguments. */
export interface FunctionCall {
  readonly callId: string;
  readonly name: string;
  readonly arguments: string;
}

/** What a generation wrote: its text and its function calls (none without tools). */
export interface Output {
  readonly text: string;
  readonly calls: readonly FunctionCall[];
}

/** A streamed call's piece as the chat path reports it: OpenAI's chat tool call delta. */
type CallPiece = Record<string, unknown>;

export const newId = (prefix: string): string => `${prefix}_${randomBytes(24).toString('hex')}`;

export class ResponseReply {
  readonly id = newId('resp');
  private readonly messageId = newId('msg');
  private readonly createdAt = Math.floor(Date.now() / 1000);
  private sequence = 0;
  /** A delta event is this before its text and its sequence number: serialised once the message opens, not per token. */
  private deltaHead = '';
  /** Function call item ids (fc_…) by the call's index. */
  private readonly callItemIds: string[] = [];
  /** Streaming: the output items in the order they opened, 'message' or a call's index; the last is open. */
  private readonly opened: ('message' | number)[] = [];
  /** The message's place in `opened`; -1 until its first text. */
  private messageIndex = -1;
  private text = '';
  /** Streaming: the calls so far, by index, their arguments as they grew. */
  private readonly calls: { callId: string; name: string; arguments: string }[] = [];

  constructor(private readonly request: ResponsesRequest) {}

  /** The response object: as the stream opens (no output yet), or once the output is whole. */
  response(status: Status, output: Output | null, end: Ending | null, error: Record<string, unknown> | null = null): Record<string, unknown> {
    const r = this.request;
    const t = r.tools;
    return {
      id: this.id, object: 'response', created_at: this.createdAt, status,
      ...(status === 'completed' || status === 'incomplete' ? { completed_at: Math.floor(Date.now() / 1000) } : {}),
      background: false, error,
      incomplete_details: end?.cut ? { reason: 'max_output_tokens' } : null,
      instructions: r.instructions, max_output_tokens: r.maxOutputTokens, max_tool_calls: null, model: r.model,
      output: output === null ? [] : this.items(status === 'incomplete' ? 'incomplete' : 'completed', output),
      parallel_tool_calls: t.parallelToolCalls, previous_response_id: r.previousResponseId, reasoning: { effort: null, summary: null },
      service_tier: 'default', store: r.store, temperature: r.temperature, text: { format: r.textFormat }, tool_choice: t.toolChoice, tools: t.tools,
      top_logprobs: 0, top_p: r.topP, truncation: 'disabled',
      usage: end === null ? null : usage(end), user: r.user, safety_identifier: r.safetyIdentifier, metadata: r.metadata,
    };
  }

  /** The opening events: the response created and in progress, with no output yet. */
  opening(): string {
    return this.event('response.created', { response: this.response('in_progress', null, null) })
      + this.event('response.in_progress', { response: this.response('in_progress', null, null) });
  }

  /** A piece of text: the message item opens with the first. */
  delta(piece: string): string {
    const open = this.messageIndex < 0 ? this.openMessage() : '';
    this.text += piece;
    return `${open}${this.deltaHead}${JSON.stringify(piece)},"logprobs":[],"sequence_number":${this.sequence++}}\n\n`;
  }

  /** Streamed pieces of calls (OpenAI's chat deltas): a call's first piece opens its function_call item. */
  callPieces(pieces: readonly CallPiece[]): string {
    let events = '';
    for (const p of pieces) {
      const index = p['index'];
      if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index > this.calls.length) throw new Error(`the model streamed a tool call with the index ${String(index)}`);
      const f = (p['function'] ?? {}) as Record<string, unknown>;
      const args = typeof f['arguments'] === 'string' ? f['arguments'] : '';
      if (index === this.calls.length) events += this.openCall(index, String(p['id'] ?? ''), String(f['name'] ?? ''));
      const call = this.calls[index]!;
      call.arguments += args;
      if (args !== '') events += this.event('response.function_call_arguments.delta', { item_id: this.callItemId(index), output_index: this.opened.indexOf(index), delta: args });
    }
    return events;
  }

  /** What the stream wrote, as the whole response takes it. */
  streamed(): Output {
    return { text: this.text, calls: this.calls };
  }

  /** The closing events; `whole` is the final response object, as a whole reply would give it. */
  closing(whole: Record<string, unknown>): string {
    const open = this.opened.length === 0 ? this.openMessage() : '';
    return open + this.closeLast(whole)
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

  /**
   * The output items: in the order a stream opened them, or the message (when there is text, or nothing else)
   * then the calls; each has the response's status (incomplete: max_output_tokens cut the output).
   */
  private items(status: 'completed' | 'incomplete', out: Output): Record<string, unknown>[] {
    const order = this.opened.length > 0 ? this.opened : [...(out.text !== '' || out.calls.length === 0 ? ['message' as const] : []), ...out.calls.keys()];
    return order.map((o) => {
      if (o === 'message') return { id: this.messageId, type: 'message', status, role: 'assistant', content: [outputText(out.text)] };
      const c = out.calls[o]!;
      return { id: this.callItemId(o), type: 'function_call', status, arguments: c.arguments, call_id: c.callId, name: c.name };
    });
  }

  private callItemId(index: number): string {
    return this.callItemIds[index] ??= newId('fc');
  }

  private openMessage(): string {
    const closed = this.closeLast(null);
    const index = this.messageIndex = this.opened.push('message') - 1;
    this.deltaHead = `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","item_id":"${this.messageId}","output_index":${index},"content_index":0,"delta":`;
    const item = { id: this.messageId, type: 'message', status: 'in_progress', role: 'assistant', content: [] };
    return closed + this.event('response.output_item.added', { output_index: index, item })
      + this.event('response.content_part.added', { item_id: this.messageId, output_index: index, content_index: 0, part: outputText('') });
  }

  private openCall(index: number, callId: string, name: string): string {
    const closed = this.closeLast(null);
    this.calls.push({ callId, name, arguments: '' });
    const item = { id: this.callItemId(index), type: 'function_call', status: 'in_progress', arguments: '', call_id: callId, name };
    return closed + this.event('response.output_item.added', { output_index: this.opened.push(index) - 1, item });
  }

  /** The done events of the item opened last (none if none is), its final form from `whole` when there is one. */
  private closeLast(whole: Record<string, unknown> | null): string {
    const output_index = this.opened.length - 1;
    const last = this.opened[output_index];
    if (last === undefined) return '';
    const final = whole === null ? undefined : (whole['output'] as Record<string, unknown>[])[output_index];
    if (last === 'message') {
      const at = { item_id: this.messageId, output_index, content_index: 0 };
      const item = final ?? { id: this.messageId, type: 'message', status: 'completed', role: 'assistant', content: [outputText(this.text)] };
      return this.event('response.output_text.done', { ...at, text: this.text, logprobs: [] })
        + this.event('response.content_part.done', { ...at, part: outputText(this.text) })
        + this.event('response.output_item.done', { output_index, item });
    }
    const c = this.calls[last]!;
    const item_id = this.callItemId(last);
    const item = final ?? { id: item_id, type: 'function_call', status: 'completed', arguments: c.arguments, call_id: c.callId, name: c.name };
    return this.event('response.function_call_arguments.done', { item_id, output_index, name: c.name, arguments: c.arguments })
      + this.event('response.output_item.done', { output_index, item });
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
