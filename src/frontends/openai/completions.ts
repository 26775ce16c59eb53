import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { InferenceResponse, Parameters, RootTrace } from '../../inference/index.js';
import type { InferenceServer } from '../../server/inference-server.js';
import { errorReply } from './errors.js';
import type { TextRequest } from './requests.js';
import { Reply, type Choice, type TokenLogprob, type Usage } from './responses.js';
import { TEXT_OUTPUT, textInput, textModel, textOf } from './text-models.js';
import { contextError, finishReason, logprobsOf, toolCallsOf, usage, wholeCall } from './model-answers.js';
import { choiceParameters, totalUsage } from './choices.js';

/**
 * POST /v1/completions and /v1/chat/completions: one request to a text model through inferStream per choice
 * (`n`, one unless asked). The model answers with text_output pieces (one, or one per token when `stream` is
 * set) and reports on its last response the parameters finish_reason, prompt_tokens and completion_tokens,
 * which become OpenAI's finish_reason and usage. An error before the first response is an ordinary error reply;
 * once a stream has started it becomes an error event. A client that goes away cancels the request, which stops
 * the generation. A chat with tools gets the calls the model made from the response parameter `tool_calls`: the
 * whole calls on the last response, or when streaming, their pieces on the responses that carry them. With
 * `logprobs`, each response's parameter `logprobs` holds the figures of the tokens its text completes.
 */
export async function handleCompletion(server: InferenceServer, request: TextRequest, res: ServerResponse, signal: AbortSignal, trace?: RootTrace, tenant?: string): Promise<void> {
  const model = textModel(server, request.model);
  // Several choices end together: the first failure cancels the others.
  const failed = request.n === 1 ? null : new AbortController();
  const both = failed === null ? signal : AbortSignal.any([signal, failed.signal]);
  const group = failed === null ? '' : randomUUID();
  const streams: AsyncIterableIterator<InferenceResponse>[] = [];
  for (let i = 0; i < request.n; i++) {
    streams.push(server.inferStream({
      model: request.model,
      inputs: [textInput(model, request.prompt)],
      outputs: [{ name: TEXT_OUTPUT }],
      parameters: failed === null ? request.parameters : choiceParameters(request.parameters, i, group),
      signal: both,
      // One trace per client request: it follows the first choice.
      trace: i === 0 ? trace : undefined,
      tenant,
    }, model));
  }
  const cancel = (e: unknown): never => {
    failed?.abort();
    throw contextError(e, request) ?? e;
  };
  const firsts = await Promise.all(streams.map((s) => s.next())).catch(cancel);
  const reply = new Reply(request);
  if (request.stream) return stream(res, reply, request, firsts, streams, failed);
  const answers = await Promise.all(streams.map((s, i) => whole(request, firsts[i]!, s))).catch(cancel);
  const body = reply.whole(answers.map((a) => a.choice), totalUsage(answers.map((a) => a.usage)));
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

/** One choice's whole answer: its text, how it ended, its calls and figures, and its token counts. */
async function whole(request: TextRequest, first: IteratorResult<InferenceResponse>, responses: AsyncIterableIterator<InferenceResponse>): Promise<{ choice: Choice; usage: Usage | undefined }> {
  let text = '';
  let last: Parameters | undefined;
  let logprobs: TokenLogprob[] | undefined;
  for (let r = first; !r.done; r = await responses.next()) {
    text += textOf(r.value);
    last = r.value.parameters ?? last;
    if (request.logprobs) (logprobs ??= []).push(...logprobsOf(r.value.parameters) ?? []);
  }
  const calls = request.parameters['tools'] === undefined ? undefined : toolCallsOf(last);
  return { choice: { text, finish: finishReason(last), toolCalls: calls?.map(wholeCall), logprobs }, usage: usage(last) };
}

async function stream(res: ServerResponse, reply: Reply, request: TextRequest, firsts: IteratorResult<InferenceResponse>[],
  streams: AsyncIterableIterator<InferenceResponse>[], failed: AbortController | null): Promise<void> {
  res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
  const stop = (): void => {
    for (const s of streams) void s.return?.();
  };
  res.once('close', stop);
  // After a failure, the other choices may still be ending (cancelled) once the stream is closed.
  const event = (json: string): void => {
    if (!res.writableEnded) res.write(`data: ${json}\n\n`);
  };
  try {
    const counts = await Promise.all(streams.map((s, i) => streamChoice(reply, request, firsts[i]!, s, i, event)));
    if (res.destroyed) return;
    const total = totalUsage(counts);
    if (request.includeUsage && total) event(reply.usage(total));
  } catch (e) {
    failed?.abort();
    if (res.destroyed) return;
    event(errorReply(e).body);
  } finally {
    res.off('close', stop);
    if (!res.destroyed) res.end('data: [DONE]\n\n');
  }
}

/** One choice's chunks, its index on each, closed by its finish reason; resolves to its token counts. */
async function streamChoice(reply: Reply, request: TextRequest, first: IteratorResult<InferenceResponse>,
  responses: AsyncIterableIterator<InferenceResponse>, index: number, event: (json: string) => void): Promise<Usage | undefined> {
  const opening = reply.opening(index);
  if (opening !== undefined) event(opening);
  let last: Parameters | undefined;
  const tools = request.parameters['tools'] !== undefined;
  for (let r = first; !r.done; r = await responses.next()) {
    const piece = textOf(r.value);
    const figures = request.logprobs ? logprobsOf(r.value.parameters) : undefined;
    if (piece !== '' || figures !== undefined) event(reply.text(piece, index, figures));
    last = r.value.parameters ?? last;
    const calls = tools ? toolCallsOf(r.value.parameters) : undefined;
    if (calls !== undefined) event(reply.toolCalls(calls, index));
  }
  event(reply.finish(finishReason(last), index));
  return usage(last);
}
