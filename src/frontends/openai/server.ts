import { type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createHttpServer, type TlsFiles } from '../tls-listener.js';
import type { AddressInfo } from 'node:net';
import { isNereidError, NereidError } from '../../errors.js';
import type { Logger } from '../../observability/logger.js';
import type { InferenceServer } from '../../server/inference-server.js';
import type { RootTrace } from '../../inference/trace.js';
import { readBody } from '../http/body.js';
import { JsonParser } from '../http/json-parse.js';
import { originForm } from '../request-target.js';
import { handleCompletion } from './completions.js';
import { embeddingRequest, handleEmbeddings } from './embeddings.js';
import { badRequest, errorReply, isOpenAiError, OpenAiError } from './errors.js';
import { chatRequest, completionRequest } from './requests.js';
import { corsAnswered, corsPolicy, type CorsPolicy } from './cors.js';
import { textModel, textModels } from './text-models.js';
import { handleCountTokens, handleMessages } from './anthropic.js';
import { countTokensRequest, messagesRequest } from './anthropic-requests.js';
import { anthropicErrorReply } from './anthropic-replies.js';
import { isRefusal, refusalError, type ApiKey, type ApiKeys } from '../api-keys.js';
import { inputTokensRequest, responsesRequest } from './responses-requests.js';
import { deleteResponse, handleCreateResponse, handleInputTokens, sendInputItems, sendResponse, storedResponse } from './responses-api.js';
import { MemoryTextStore, type TextStore } from './responses-store.js';

export interface OpenAiOptions {
  port: number;
  address: string;
  /** Largest request body in bytes. */
  maxInputSize?: number;
  /** --api-keys-file: the keys requests must present; undefined when requests need none. */
  keys?: ApiKeys;
  /** Serve over TLS with these files (--openai-use-ssl, or HTTP's settings). */
  tls?: TlsFiles;
  /** --openai-cors-origin: the browser origins allowed to call (`*`: any); none, the default, sends no CORS headers. */
  corsOrigins?: readonly string[];
  /** Where the Responses API keeps stored responses (--openai-response-store); in memory when not given. Closed with the frontend. */
  responseStore?: TextStore;
}

export interface OpenAiFrontend {
  readonly port: number;
  close(): Promise<void>;
}

const DEFAULT_MAX_INPUT_SIZE = 64 * 1024 * 1024;

/**
 * The OpenAI-compatible frontend (the surface of Triton's OpenAI frontend): GET /v1/models, GET
 * /v1/models/{id}, POST /v1/completions and /v1/chat/completions, over the text models of the server, POST
 * /v1/embeddings over its embedding models (embeddings.ts), and
 * Triton's GET /health/ready and /metrics beside them, Anthropic's POST /v1/messages and
 * /v1/messages/count_tokens, and OpenAI's Responses API under /v1/responses (responses-api.ts). Every GET also answers HEAD; with --openai-cors-origin,
 * browsers at those origins get CORS headers and their preflights are answered. Errors answer in OpenAI's
 * shape with the status from the one table in errors.ts.
 */
export async function startOpenAiFrontend(server: InferenceServer, options: OpenAiOptions, logger: Logger): Promise<OpenAiFrontend> {
  const ctx: Context = {
    server, logger, maxInputSize: options.maxInputSize ?? DEFAULT_MAX_INPUT_SIZE, started: Math.floor(Date.now() / 1000), json: new JsonParser(),
    keys: options.keys ?? null, cors: corsPolicy(options.corsOrigins), responses: options.responseStore ?? new MemoryTextStore(),
  };
  const { server: http, stop } = createHttpServer({ keepAliveTimeout: 65_000 }, options.tls, (req, res) => {
    handle(ctx, req, res).catch((e: unknown) => sendError(res, e, ctx));
  }, (message) => logger.warn(message));
  http.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port, options.address, () => resolve());
  }).catch(async (e: unknown) => {
    await ctx.responses.close();
    throw e;
  });
  const port = (http.address() as AddressInfo).port;
  logger.info(`Started OpenAI-compatible service${options.tls === undefined ? '' : ' over TLS'} at ${options.address}:${port}`);
  return {
    port,
    close: () => {
      stop();
      return closeServer(http, ctx.json).finally(() => ctx.responses.close());
    },
  };
}

interface Context {
  readonly server: InferenceServer;
  readonly logger: Logger;
  readonly maxInputSize: number;
  /** What /v1/models reports as each model's `created`: when this frontend started. */
  readonly started: number;
  /** Large bodies are parsed in its worker, so that one client's body of tiny objects never stalls the others. */
  readonly json: JsonParser;
  /** null when requests need no API key. */
  readonly keys: ApiKeys | null;
  /** null when no CORS origin is configured: requests then pay nothing for CORS. */
  readonly cors: CorsPolicy | null;
  readonly responses: TextStore;
}

async function handle(ctx: Context, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const target = req.url ?? '/';
  // An absolute-form target (RFC 9112 3.2.2) is routed by its path.
  const url = target.charCodeAt(0) === 0x2f ? target : originForm(target);
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const method = req.method ?? 'GET';
  // A preflight carries no credentials, so it is answered before any key is asked for.
  if (ctx.cors !== null && corsAnswered(ctx.cors, req, res)) return;
  if (path === '/health/ready') return ready(ctx, req, method, res);
  if (path === '/v1/messages' || path.startsWith('/v1/messages/')) return messages(ctx, req, res, path, method).catch((e: unknown) => sendError(res, e, ctx, anthropicErrorReply));
  // The key is known before the body is read; its scope is checked once the request names its model.
  const key = ctx.keys === null ? null : authenticated(ctx.keys, req);
  if (path === '/metrics') {
    allow(method, 'GET');
    if (key !== null) permitted(ctx, key, 'statistics', undefined, res);
    const text = await ctx.server.metricsText();
    res.writeHead(200, { 'Content-Type': ctx.server.metricsContentType, 'Content-Length': Buffer.byteLength(text) });
    return void res.end(text);
  }
  if (path === '/v1/models') {
    allow(method, 'GET');
    if (key !== null) permitted(ctx, key, 'metadata', undefined, res);
    const data = (await textModels(ctx.server)).map((id) => modelObject(ctx, id));
    return sendJson(res, 200, JSON.stringify({ object: 'list', data }));
  }
  if (path.startsWith('/v1/models/')) {
    allow(method, 'GET');
    const id = decodePath(path.slice('/v1/models/'.length));
    if (key !== null) permitted(ctx, key, 'metadata', id, res);
    await ctx.server.whenLoaded(id);
    textModel(ctx.server, id);
    return sendJson(res, 200, JSON.stringify(modelObject(ctx, id)));
  }
  if (path === '/v1/completions' || path === '/v1/chat/completions') {
    allow(method, 'POST');
    const body = await readJson(ctx, req);
    const request = path === '/v1/completions' ? completionRequest(body) : chatRequest(body);
    if (key !== null) permitted(ctx, key, 'inference', request.model, res);
    const gone = clientGone(res);
    // A model not loaded loads first with --model-load-on-demand.
    if (ctx.server.loadsOnDemand) await ctx.server.whenLoaded(request.model, { signal: gone });
    return handleCompletion(ctx.server, request, res, gone, traceOf(ctx.server, request.model, req, res), key?.id);
  }
  if (path === '/v1/embeddings') {
    allow(method, 'POST');
    const request = embeddingRequest(await readJson(ctx, req));
    if (key !== null) permitted(ctx, key, 'inference', request.model, res);
    const gone = clientGone(res);
    if (ctx.server.loadsOnDemand) await ctx.server.whenLoaded(request.model, { signal: gone });
    return handleEmbeddings(ctx.server, request, res, gone, traceOf(ctx.server, request.model, req, res), key?.id);
  }
  if (path === '/v1/responses' || path.startsWith('/v1/responses/')) return responses(ctx, req, res, url, path, method, key);
  throw new OpenAiError('NOT_FOUND', `Unknown request URL: ${method} ${path}`, null, 'unknown_url');
}

/**
 * OpenAI's Responses API (see responses-api.ts): POST /v1/responses and /v1/responses/input_tokens, and GET
 * and DELETE /v1/responses/{id} and GET /v1/responses/{id}/input_items, which need the scope `inference` for
 * the stored response's model.
 */
async function responses(ctx: Context, req: IncomingMessage, res: ServerResponse, url: string, path: string, method: string, key: ApiKey | null): Promise<void> {
  const count = path === '/v1/responses/input_tokens';
  if (count || path === '/v1/responses') {
    allow(method, 'POST');
    const body = await readJson(ctx, req);
    const request = count ? inputTokensRequest(body) : responsesRequest(body);
    if (key !== null) permitted(ctx, key, 'inference', request.model, res);
    const gone = clientGone(res);
    if (ctx.server.loadsOnDemand) await ctx.server.whenLoaded(request.model, { signal: gone });
    return (count ? handleInputTokens : handleCreateResponse)(ctx.server, ctx.responses, request, res, gone, traceOf(ctx.server, request.model, req, res), key?.id);
  }
  const [id, sub, ...more] = path.slice('/v1/responses/'.length).split('/');
  if (more.length > 0 || (sub !== undefined && sub !== 'input_items')) throw new OpenAiError('NOT_FOUND', `Unknown request URL: ${method} ${path}`, null, 'unknown_url');
  if (method !== 'DELETE' || sub !== undefined) allow(method, 'GET');
  const query = new URLSearchParams(url.slice(path.length + 1));
  const asked = sub === undefined ? [...query.keys()][0] : undefined;
  if (asked !== undefined) throw badRequest(`'${asked}' is not supported by this server when retrieving a response`, asked);
  const stored = await storedResponse(ctx.responses, decodePath(id!), key?.id);
  if (key !== null) permitted(ctx, key, 'inference', stored.response['model'] as string, res);
  if (sub === 'input_items') return sendInputItems(stored, query, res);
  return method === 'DELETE' ? deleteResponse(ctx.responses, decodePath(id!), res) : sendResponse(stored, res);
}

/**
 * Anthropic's Messages API (see anthropic.ts), answering errors in Anthropic's shape. The key may come as
 * Anthropic's clients send it, `x-api-key`, as well as `Authorization: Bearer`.
 */
async function messages(ctx: Context, req: IncomingMessage, res: ServerResponse, path: string, method: string): Promise<void> {
  const apiKey = req.headers['x-api-key'];
  if (ctx.keys !== null && apiKey === undefined && req.headers.authorization === undefined) throw new NereidError('UNAUTHENTICATED', 'x-api-key header is required');
  const key = ctx.keys === null ? null : authenticated(ctx.keys, req, apiKey);
  const count = path === '/v1/messages/count_tokens';
  if (!count && path !== '/v1/messages') throw new OpenAiError('NOT_FOUND', `Unknown request URL: ${method} ${path}`);
  allow(method, 'POST');
  const body = await readJson(ctx, req);
  const request = count ? countTokensRequest(body) : messagesRequest(body);
  if (key !== null) permitted(ctx, key, 'inference', request.model, res);
  const gone = clientGone(res);
  if (ctx.server.loadsOnDemand) await ctx.server.whenLoaded(request.model, { signal: gone });
  return (count ? handleCountTokens : handleMessages)(ctx.server, request, res, gone, traceOf(ctx.server, request.model, req, res), key?.id);
}

/** The request's API key (`Authorization: Bearer`, or `apiKey` when given); throws UNAUTHENTICATED without a valid one. */
function authenticated(keys: ApiKeys, req: IncomingMessage, apiKey?: string | string[]): ApiKey {
  const key = keys.authenticate(typeof apiKey === 'string' ? `Bearer ${apiKey}` : req.headers.authorization);
  if (isRefusal(key)) throw refusalError(key);
  return key;
}

/**
 * Throws PERMISSION_DENIED, naming the scope, when `key` lacks `category` for `model`, and RESOURCE_EXHAUSTED
 * (429) when its quota refuses the request; a request counted in flight is released when its answer is over.
 */
function permitted(ctx: Context, key: ApiKey, category: string, model: string | undefined, res: ServerResponse): void {
  const keys = ctx.keys!;
  const refusal = keys.permit(key, category, model) ?? keys.admit(key);
  if (refusal !== null) {
    if (refusal.retryAfterSecs !== undefined) res.setHeader('Retry-After', refusal.retryAfterSecs);
    throw refusalError(refusal);
  }
  if (key.quota.tracksInflight) res.once('close', () => key.quota.release());
}

function decodePath(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function modelObject(ctx: Context, id: string): Record<string, unknown> {
  return { id, object: 'model', created: ctx.started, owned_by: 'nereid' };
}

/** GET paths take HEAD too (node:http then sends the headers alone). */
function allow(method: string, expected: 'GET' | 'POST'): void {
  if (method === expected || (method === 'HEAD' && expected === 'GET')) return;
  throw new OpenAiError('METHOD_NOT_ALLOWED', `Method ${method} is not allowed here; use ${expected}`, null, 'method_not_allowed', undefined, expected === 'GET' ? 'GET, HEAD' : expected);
}

/**
 * Triton's OpenAI frontend's readiness: an empty 200 when the server is ready, else 400 with its words in
 * FastAPI's {"detail"} shape. Open to probes without a key unless --api-keys-protect-health.
 */
function ready(ctx: Context, req: IncomingMessage, method: string, res: ServerResponse): void {
  allow(method, 'GET');
  if (ctx.keys !== null) {
    const key = ctx.keys.check(req.headers.authorization, 'health', undefined);
    if (key !== null && isRefusal(key)) throw refusalError(key);
  }
  if (ctx.server.isReady()) {
    res.writeHead(200, { 'Content-Length': 0 });
    return void res.end();
  }
  sendJson(res, 400, JSON.stringify({ detail: 'Attached inference engine is not ready for inference requests.' }));
}

/**
 * The request's trace when tracing samples it (a client's traceparent makes it continue the client's trace),
 * ended once the answer has gone; undefined otherwise, after one read of `traces.active` while tracing is off.
 */
function traceOf(server: InferenceServer, model: string, req: IncomingMessage, res: ServerResponse): RootTrace | undefined {
  const traces = server.traces;
  if (!traces.active) return undefined;
  const h = req.headers;
  const traceparent = h['traceparent'];
  const tracestate = h['tracestate'];
  const trace = traces.sample(model, typeof traceparent === 'string' ? { traceparent, tracestate: typeof tracestate === 'string' ? tracestate : undefined } : null);
  if (trace === null) return undefined;
  trace.stamp('HTTP_RECV_START', process.hrtime.bigint());
  res.once('close', () => trace.end());
  return trace;
}

/** Aborts when the client closes the connection before its response is complete. */
function clientGone(res: ServerResponse): AbortSignal {
  const ac = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) ac.abort();
  });
  return ac.signal;
}

/**
 * The body as JSON, refused past the size limit before it is all read. A large body is parsed in the worker,
 * which refuses one of more JSON values than such a request can need (see JsonParser.parseBody).
 */
async function readJson(ctx: Context, req: IncomingMessage): Promise<unknown> {
  const body = await readBody(req, ctx.maxInputSize, (_size, max) => tooLarge(max));
  try {
    return await ctx.json.parseBody(body);
  } catch (e) {
    throw badRequest(`We could not parse the JSON body of your request: ${(e as Error).message}`);
  }
}

function tooLarge(limit: number): OpenAiError {
  return new OpenAiError('PAYLOAD_TOO_LARGE', `the request body exceeds ${limit} bytes`, null, null, 'http-max-input-size');
}

function sendJson(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

function sendError(res: ServerResponse, e: unknown, ctx: Context, reply = errorReply): void {
  ctx.server.reportError(e);
  if (!isOpenAiError(e) && !isNereidError(e)) ctx.logger.error(`OpenAI frontend: ${String((e as Error)?.stack ?? e)}`);
  if (res.headersSent) {
    if (!res.destroyed) res.end();
    return;
  }
  const { status, body } = reply(e);
  if (isOpenAiError(e) && e.allow !== undefined) res.setHeader('Allow', e.allow);
  if (status === 401) res.setHeader('WWW-Authenticate', 'Bearer');
  if (isNereidError(e) && e.retryAfterSecs !== undefined) res.setHeader('Retry-After', e.retryAfterSecs);
  sendJson(res, status, body);
}

async function closeServer(http: Server, json: JsonParser, graceMs = 1000): Promise<void> {
  const force = setTimeout(() => http.closeAllConnections(), graceMs);
  await new Promise<void>((resolve) => {
    http.close(() => resolve());
    http.closeIdleConnections();
  });
  clearTimeout(force);
  await json.close();
}
