import type { ServerResponse } from 'node:http';
import type { InferenceResponse, Parameters, RootTrace } from '../../inference/index.js';
import type { InferenceServer } from '../../server/inference-server.js';
import { OpenAiError } from './errors.js';
import { readPieces, toolCallsOf } from './model-answers.js';
import type { TextRequest } from './requests.js';
import type { ToolCall } from './responses.js';
import { ending, errorEvent, MessageReply, type ToolUse } from './anthropic-replies.js';
import { TEXT_OUTPUT, textInput, textModel, textOf } from './text-models.js';

/**
 * Anthropic's Messages API over the chat path: POST /v1/messages and /v1/messages/count_tokens make the same
 * model call as /v1/chat/completions (inferStream with the `messages` parameter), so cancellation on
 * disconnect, limits, token metrics and tracing are the chat path's. An error before the first response is
 * an ordinary error reply; once a stream has started it becomes an `error` event. With tools, the calls come
 * from the chat path's response parameter `tool_calls` (whole on the last response, or streamed in pieces).
 */
export async function handleMessages(server: InferenceServer, request: TextRequest, res: ServerResponse, signal: AbortSignal, trace?: RootTrace, tenant?: string): Promise<void> {
  const responses = generate(server, request, signal, trace, tenant);
  const first = await responses.next();
  const reply = new MessageReply(request.model);
  const tools = request.parameters['tools'] !== undefined;
  if (request.stream) return stream(res, reply, first, responses, tools);
  let text = '';
  let last: Parameters | undefined;
  for (let r = first; !r.done; r = await responses.next()) {
    text += textOf(r.value);
    last = r.value.parameters ?? last;
  }
  const calls = tools ? toolCallsOf(last) ?? [] : [];
  sendJson(res, reply.whole(text, calls.map(toolUse), ending(last)));
}

/** input_tokens: the prompt tokens the model reports for the conversation, as the chat path counts them. */
export async function handleCountTokens(server: InferenceServer, request: TextRequest, res: ServerResponse, signal: AbortSignal, trace?: RootTrace, tenant?: string): Promise<void> {
  let last: Parameters | undefined;
  for await (const r of generate(server, request, signal, trace, tenant)) last = r.parameters ?? last;
  const tokens = last?.['prompt_tokens'];
  if (typeof tokens !== 'number') throw new OpenAiError('UNSUPPORTED', `model '${request.model}' does not report its prompt's token count`, 'model');
  sendJson(res, JSON.stringify({ input_tokens: tokens }));
}

function generate(server: InferenceServer, request: TextRequest, signal: AbortSignal, trace: RootTrace | undefined, tenant: string | undefined): AsyncIterableIterator<InferenceResponse> {
  const model = textModel(server, request.model);
  return server.inferStream({
    model: request.model, inputs: [textInput(model, request.prompt)], outputs: [{ name: TEXT_OUTPUT }], parameters: request.parameters, signal, trace, tenant,
  }, model);
}

async function stream(res: ServerResponse, reply: MessageReply, first: IteratorResult<InferenceResponse>, responses: AsyncIterableIterator<InferenceResponse>, tools: boolean): Promise<void> {
  res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
  const stop = (): void => void responses.return?.();
  res.once('close', stop);
  try {
    res.write(reply.opening());
    const last = await readPieces(first, responses, tools, (piece) => res.write(reply.text(piece)), (pieces) => res.write(reply.callPieces(pieces)));
    if (!res.destroyed) res.write(reply.closing(ending(last)));
  } catch (e) {
    if (!res.destroyed) res.write(errorEvent(e));
  } finally {
    res.off('close', stop);
    if (!res.destroyed) res.end();
  }
}

/** A call the chat path reported, whole: {id, type, function: {name, arguments}}. */
function toolUse(c: ToolCall): ToolUse {
  const f = (c['function'] ?? {}) as Record<string, unknown>;
  return { id: String(c['id'] ?? ''), name: String(f['name'] ?? ''), arguments: String(f['arguments'] ?? '') };
}

function sendJson(res: ServerResponse, body: string): void {
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}
