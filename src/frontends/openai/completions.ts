import type { ServerResponse } from 'node:http';
import type { InferenceResponse, Parameters, RootTrace } from '../../inference/index.js';
import type { InferenceServer } from '../../server/inference-server.js';
import { isNereidError } from '../../errors.js';
import { errorReply, OpenAiError } from './errors.js';
import type { TextRequest } from './requests.js';
import { Reply, type FinishReason, type ToolCall, type Usage } from './responses.js';
import { TEXT_OUTPUT, textInput, textModel } from './text-models.js';

/**
 * POST /v1/completions and /v1/chat/completions: one request to a text model through inferStream. The model
 * answers with text_output pieces (one, or one per token when `stream` is set) and reports on its last
 * response the parameters finish_reason, prompt_tokens and completion_tokens, which become OpenAI's
 * finish_reason and usage. An error before the first response is an ordinary error reply; once a stream
 * has started it becomes an error event. A client that goes away cancels the request, which stops the
 * generation. A chat with tools gets the calls the model made from the response parameter `tool_calls`: the
 * whole calls on the last response, or when streaming, their pieces on the responses that carry them.
 */
export async function handleCompletion(server: InferenceServer, request: TextRequest, res: ServerResponse, signal: AbortSignal, trace?: RootTrace, tenant?: string): Promise<void> {
  const model = textModel(server, request.model);
  const responses = server.inferStream({
    model: request.model,
    inputs: [textInput(model, request.prompt)],
    outputs: [{ name: TEXT_OUTPUT }],
    parameters: request.parameters,
    signal,
    trace,
    tenant,
  }, model);
  const first = await responses.next().catch((e: unknown) => {
    throw contextError(e, request) ?? e;
  });
  const reply = new Reply(request);
  if (request.stream) return stream(res, reply, request, first, responses);
  let text = '';
  let last: Parameters | undefined;
  for (let r = first; !r.done; r = await responses.next()) {
    text += textOf(r.value);
    last = r.value.parameters ?? last;
  }
  const calls = request.parameters['tools'] === undefined ? undefined : toolCallsOf(last);
  const body = reply.whole(text, finishReason(last), usage(last), calls?.map(wholeCall));
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

async function stream(res: ServerResponse, reply: Reply, request: TextRequest, first: IteratorResult<InferenceResponse>,
  responses: AsyncIterableIterator<InferenceResponse>): Promise<void> {
  res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
  const stop = (): void => void responses.return?.();
  res.once('close', stop);
  const event = (json: string): void => void res.write(`data: ${json}\n\n`);
  try {
    const opening = reply.opening();
    if (opening !== undefined) event(opening);
    let last: Parameters | undefined;
    const tools = request.parameters['tools'] !== undefined;
    for (let r = first; !r.done; r = await responses.next()) {
      const piece = textOf(r.value);
      if (piece !== '') event(reply.text(piece));
      last = r.value.parameters ?? last;
      const calls = tools ? toolCallsOf(r.value.parameters) : undefined;
      if (calls !== undefined) event(reply.toolCalls(calls));
    }
    if (res.destroyed) return;
    event(reply.finish(finishReason(last)));
    const counts = usage(last);
    if (request.includeUsage && counts) event(reply.usage(counts));
  } catch (e) {
    if (res.destroyed) return;
    event(errorReply(e).body);
  } finally {
    res.off('close', stop);
    if (!res.destroyed) res.end('data: [DONE]\n\n');
  }
}

/** A prompt past the model's context as OpenAI answers it: code context_length_exceeded, naming prompt or messages. */
function contextError(e: unknown, request: TextRequest): OpenAiError | undefined {
  if (!isNereidError(e) || e.code !== 'CONTEXT_LENGTH_EXCEEDED') return undefined;
  return new OpenAiError('INVALID_ARG', e.message, request.kind === 'chat' ? 'messages' : 'prompt', 'context_length_exceeded');
}

function textOf(r: InferenceResponse): string {
  const t = r.outputs.find((o) => o.name === TEXT_OUTPUT);
  if (!t || t.datatype !== 'BYTES') return '';
  let s = '';
  for (const e of t.data) s += Buffer.from(e.buffer, e.byteOffset, e.byteLength).toString('utf8');
  return s;
}

function finishReason(p: Parameters | undefined): FinishReason {
  const reason = p?.['finish_reason'];
  return reason === 'length' || reason === 'tool_calls' ? reason : 'stop';
}

/** The tool calls (or, streaming, their pieces) a response carries as the JSON text of OpenAI's list; none if it carries none. */
export function toolCallsOf(p: Parameters | undefined): ToolCall[] | undefined {
  const text = p?.['tool_calls'];
  if (typeof text !== 'string') return undefined;
  let calls: unknown;
  try {
    calls = JSON.parse(text);
  } catch {
    throw new OpenAiError('INTERNAL', "the model answered tool calls that are not JSON");
  }
  if (!Array.isArray(calls) || !calls.every((c) => typeof c === 'object' && c !== null)) throw new OpenAiError('INTERNAL', 'the model answered tool calls that are not a list of objects');
  return calls.length === 0 ? undefined : calls as ToolCall[];
}

/** A message's tool call: the call without the index its stream pieces carry. */
function wholeCall({ index: _index, ...call }: ToolCall): ToolCall {
  return call;
}

/** OpenAI's usage from the model's counts; undefined when the model reports none. */
function usage(p: Parameters | undefined): Usage | undefined {
  const prompt = p?.['prompt_tokens'];
  const completion = p?.['completion_tokens'];
  if (typeof prompt !== 'number' || typeof completion !== 'number') return undefined;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}
