import type { ServerResponse } from 'node:http';
import type { InferenceResponse, Parameters, RootTrace } from '../../inference/index.js';
import type { InferenceServer } from '../../server/inference-server.js';
import { isNereidError } from '../../errors.js';
import { badRequest, OpenAiError } from './errors.js';
import { readPieces, toolCallsOf } from './model-answers.js';
import { chatRequest } from './requests.js';
import type { ToolCall } from './responses.js';
import type { ChatMessage, ResponsesRequest } from './responses-requests.js';
import { newId, ResponseReply, type Ending, type FunctionCall, type Output } from './responses-events.js';
import type { TextStore } from './responses-store.js';
import { TEXT_OUTPUT, textInput, textModel, textOf } from './text-models.js';

/**
 * OpenAI's Responses API over the chat path: POST /v1/responses makes the same model call as
 * /v1/chat/completions (inferStream with the `messages` parameter), so cancellation on disconnect, limits,
 * token metrics and tracing are the chat path's. `store` keeps the response, its input items and the
 * conversation so far in a TextStore, for GET and DELETE /v1/responses/{id}, GET .../input_items and a later
 * previous_response_id. Function calls come from the chat path's response parameter `tool_calls` (whole on
 * the last response, or streamed in pieces) and are kept in the conversation as the assistant's tool_calls, so
 * that a later function_call_output answers them. A stored response belongs to the API key that made it: another key is told it does
 * not exist.
 */
export interface StoredResponse {
  /** The API key's id that made it; null when the server needs no key. */
  readonly owner: string | null;
  readonly response: Record<string, unknown>;
  /** This request's input as input items, for input_items. */
  readonly input: readonly Record<string, unknown>[];
  /** Previous conversation, this input and this response's text and calls (instructions are not carried over, as in OpenAI's API). */
  readonly conversation: readonly ChatMessage[];
}

export async function handleCreateResponse(server: InferenceServer, store: TextStore, request: ResponsesRequest, res: ServerResponse, signal: AbortSignal, trace?: RootTrace, tenant?: string): Promise<void> {
  const history = await conversation(store, request, tenant);
  const responses = generate(server, request, history, signal, trace, tenant);
  const first = await responses.next().catch((e: unknown) => {
    throw contextError(e) ?? e;
  });
  const reply = new ResponseReply(request);
  const keep = async (output: Output, whole: Record<string, unknown>): Promise<void> => {
    if (request.store) await store.set(reply.id, JSON.stringify(record(request, history, output, whole, tenant)));
  };
  const tools = request.tools.chat['tools'] !== undefined;
  if (request.stream) return stream(res, reply, first, responses, tools, keep);
  let text = '';
  let last: Parameters | undefined;
  for (let r = first; !r.done; r = await responses.next()) {
    text += textOf(r.value);
    last = r.value.parameters ?? last;
  }
  const end = ending(last);
  const output = { text, calls: (tools ? toolCallsOf(last) ?? [] : []).map(functionCall) };
  const whole = reply.response(end.cut ? 'incomplete' : 'completed', output, end);
  await keep(output, whole);
  sendJson(res, JSON.stringify(whole));
}

/**
 * POST /v1/responses/input_tokens: the prompt tokens the conversation (with previous_response_id's and the
 * instructions) counts after the model's chat template, found by running it for one token, as Anthropic's
 * count_tokens is: it costs a prompt evaluation.
 */
export async function handleInputTokens(server: InferenceServer, store: TextStore, request: ResponsesRequest, res: ServerResponse, signal: AbortSignal, trace?: RootTrace, tenant?: string): Promise<void> {
  const history = await conversation(store, request, tenant);
  let last: Parameters | undefined;
  try {
    for await (const r of generate(server, request, history, signal, trace, tenant)) last = r.parameters ?? last;
  } catch (e) {
    throw contextError(e) ?? e;
  }
  const tokens = last?.['prompt_tokens'];
  if (typeof tokens !== 'number') throw new OpenAiError('UNSUPPORTED', `model '${request.model}' does not report its prompt's token count`, 'model');
  sendJson(res, JSON.stringify({ object: 'response.input_tokens', input_tokens: tokens }));
}

/** A stored response the request may see (its key made it); OpenAI's 404 for any other id. */
export async function storedResponse(store: TextStore, id: string, tenant: string | undefined, param: string | null = null): Promise<StoredResponse> {
  const text = /^resp_[A-Za-z0-9]{1,200}$/.test(id) ? await store.get(id) : undefined;
  const stored = text === undefined ? undefined : JSON.parse(text) as StoredResponse;
  if (stored === undefined || stored.owner !== (tenant ?? null)) {
    const what = param === 'previous_response_id' ? 'Previous response' : 'Response';
    throw new OpenAiError('NOT_FOUND', `${what} with id '${id}' not found.`, param, param === null ? null : 'previous_response_not_found');
  }
  return stored;
}

/** DELETE /v1/responses/{id}, once the caller may: OpenAI's deleted object. */
export async function deleteResponse(store: TextStore, id: string, res: ServerResponse): Promise<void> {
  await store.delete(id);
  sendJson(res, JSON.stringify({ id, object: 'response', deleted: true }));
}

/** GET /v1/responses/{id}/input_items: OpenAI's list, `order` desc (default) or asc, `limit` 1 to 100 (default 20), `after` an item id. */
export function sendInputItems(stored: StoredResponse, query: URLSearchParams, res: ServerResponse): void {
  const order = query.get('order') ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw badRequest("'order' must be asc or desc", 'order');
  const limit = Number(query.get('limit') ?? 20);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw badRequest("'limit' must be an integer from 1 to 100", 'limit');
  const items = order === 'asc' ? stored.input : [...stored.input].reverse();
  const after = query.get('after');
  const start = after === null ? 0 : items.findIndex((i) => i['id'] === after) + 1;
  const data = items.slice(start, start + limit);
  const body = { object: 'list', data, first_id: data[0]?.['id'] ?? null, last_id: data.at(-1)?.['id'] ?? null, has_more: start + limit < items.length };
  sendJson(res, JSON.stringify(body));
}

export function sendResponse(stored: StoredResponse, res: ServerResponse): void {
  sendJson(res, JSON.stringify(stored.response));
}

/** previous_response_id's conversation, if any, then this request's input. */
async function conversation(store: TextStore, request: ResponsesRequest, tenant: string | undefined): Promise<ChatMessage[]> {
  if (request.previousResponseId === null) return [...request.input];
  return [...(await storedResponse(store, request.previousResponseId, tenant, 'previous_response_id')).conversation, ...request.input];
}

function generate(server: InferenceServer, request: ResponsesRequest, history: ChatMessage[], signal: AbortSignal, trace: RootTrace | undefined, tenant: string | undefined): AsyncIterableIterator<InferenceResponse> {
  const messages = request.instructions === null ? history : [{ role: 'system', content: request.instructions }, ...history];
  const chat = chatRequest({
    model: request.model, messages, max_tokens: request.maxOutputTokens, temperature: request.temperature, top_p: request.topP,
    response_format: request.responseFormat, stream: request.stream, ...request.tools.chat,
  });
  const model = textModel(server, request.model);
  return server.inferStream({
    model: request.model, inputs: [textInput(model, '')], outputs: [{ name: TEXT_OUTPUT }], parameters: chat.parameters, signal, trace, tenant,
  }, model);
}

async function stream(res: ServerResponse, reply: ResponseReply, first: IteratorResult<InferenceResponse>, responses: AsyncIterableIterator<InferenceResponse>,
  tools: boolean, keep: (output: Output, whole: Record<string, unknown>) => Promise<void>): Promise<void> {
  res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
  const stop = (): void => void responses.return?.();
  res.once('close', stop);
  try {
    res.write(reply.opening());
    const last = await readPieces(first, responses, tools, (piece) => res.write(reply.delta(piece)), (pieces) => res.write(reply.callPieces(pieces)));
    if (res.destroyed) return;
    const end = ending(last);
    const output = reply.streamed();
    const whole = reply.response(end.cut ? 'incomplete' : 'completed', output, end);
    // Stored before the client hears it is complete, so that its next request can continue from it.
    await keep(output, whole);
    res.write(reply.closing(whole));
  } catch (e) {
    if (!res.destroyed) res.write(reply.failure(e));
  } finally {
    res.off('close', stop);
    if (!res.destroyed) res.end();
  }
}

function record(request: ResponsesRequest, history: ChatMessage[], output: Output, response: Record<string, unknown>, tenant: string | undefined): StoredResponse {
  const said: ChatMessage = output.calls.length === 0
    ? { role: 'assistant', content: output.text }
    : { role: 'assistant', content: output.text === '' ? null : output.text, tool_calls: output.calls.map((c) => ({ id: c.callId, type: 'function', function: { name: c.name, arguments: c.arguments } })) };
  return { owner: tenant ?? null, response, input: request.input.flatMap(inputItems), conversation: [...history, said] };
}

/** A message of this request's input as the input items it came as, for input_items. */
function inputItems(m: ChatMessage): Record<string, unknown>[] {
  if (m.tool_call_id !== undefined) return [{ id: newId('fco'), type: 'function_call_output', call_id: m.tool_call_id, output: m.content, status: 'completed' }];
  const calls = (m.tool_calls ?? []).map((c) => ({ id: newId('fc'), type: 'function_call', call_id: c.id, name: c.function.name, arguments: c.function.arguments, status: 'completed' }));
  if (m.content === null) return calls;
  return [{ id: newId('msg'), type: 'message', role: m.role, content: [{ type: m.role === 'assistant' ? 'output_text' : 'input_text', text: m.content }] }, ...calls];
}

/** A call the chat path reported, whole: {id, type, function: {name, arguments}}. */
function functionCall(c: ToolCall): FunctionCall {
  const f = (c['function'] ?? {}) as Record<string, unknown>;
  return { callId: String(c['id'] ?? ''), name: String(f['name'] ?? ''), arguments: String(f['arguments'] ?? '') };
}

function ending(p: Parameters | undefined): Ending {
  const count = (v: unknown): number => (typeof v === 'number' ? v : 0);
  return { cut: p?.['finish_reason'] === 'length', inputTokens: count(p?.['prompt_tokens']), outputTokens: count(p?.['completion_tokens']) };
}

/** A conversation past the model's context, as OpenAI answers it: code context_length_exceeded, naming input. */
function contextError(e: unknown): OpenAiError | undefined {
  if (!isNereidError(e) || e.code !== 'CONTEXT_LENGTH_EXCEEDED') return undefined;
  return new OpenAiError('INVALID_ARG', e.message, 'input', 'context_length_exceeded');
}

function sendJson(res: ServerResponse, body: string): void {
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}
