import { type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { NereidError, invalidArg, isNereidError, unavailable, unsupported } from '../../errors.js';
import type { InferenceServer } from '../../server/inference-server.js';
import type { InferenceResponse, RequestBounds } from '../../inference/index.js';
import type { Logger } from '../../observability/logger.js';
import { INSPECT_BYTES, readBody } from './body.js';
import { DirectPath, type DirectHandlers } from './direct/direct-path.js';
import type { Answer, RequestInfo } from './exchange.js';
import { compress, decompress, negotiate, requestEncoding } from './compression.js';
import { decodeInfer, decodeRaw, isObject, type DecodedInfer } from './infer-request.js';
import { rawInput } from './raw-request.js';
import { answerClientError } from './client-error.js';
import { JsonParser } from './json-parse.js';
import { scanHeader } from './json-scan.js';
import { category, restriction, routeModel, type HttpRestrictedGroup } from './restricted.js';
import { isRefusal, type ApiKey, type ApiKeys, type KeyRefusal } from '../api-keys.js';
import { rawHeaderForwarder } from '../forwarded-headers.js';
import { RouteCache, type Route } from './routes.js';
import { originForm } from '../request-target.js';
import { createHttpServer, type TlsFiles, type TlsLimits } from '../tls-listener.js';
import { HTTP_ERROR_HEADERS, HTTP_STATUS } from './status.js';
import { handleGenerate } from './generate.js';
import { ConsoleAssets, consoleUrl } from './console.js';
import { serverInfo, type ShownFlag } from './server-info.js';
import { handleLoad, handleRepoIndex, handleUnload } from './repository.js';
import { JSON_HEADERS, releaseWhenDone, sendEmpty, sendJson } from './reply.js';
import type { RootTrace, TraceContextCarrier } from '../../inference/trace.js';
import { settingEntries, traceSetting, type GivenSetting, type GivenValue } from '../../server/trace-setting.js';

export interface HttpOptions {
  port: number;
  address: string;
  /** --http-max-input-size: largest request body, before and after decompression. */
  maxInputSize: number;
  /** --http-restricted-api groups. */
  restricted?: readonly HttpRestrictedGroup[];
  /** --http-header-forward-pattern: headers whose names match it (any case) become inference request parameters. */
  headerForwardPattern?: string;
  /** --api-keys-file: the keys requests must present; undefined when requests need none. */
  keys?: ApiKeys;
  /** --http-use-ssl: serve over TLS with these files. */
  tls?: TlsFiles;
  /** Bounds on TLS handshakes; the defaults unless given (tests give others). */
  tlsLimits?: TlsLimits;
  /** --allow-console: serve the web console at /console/ (the CLI turns it on for loopback addresses). */
  console?: boolean;
  /** The flags in effect, secrets hidden, for GET /v2/nereid/server (none for a server started in process). */
  flags?: readonly ShownFlag[];
}

export interface HttpFrontend {
  readonly port: number;
  close(): Promise<void>;
}


/** The console's files; without them (a package copied without its console folder) the server runs without it. */
function consoleAssets(logger: Logger): ConsoleAssets | null {
  try {
    return new ConsoleAssets();
  } catch (e) {
    logger.warn(`the web console is off: its files cannot be read (${(e as Error).message})`);
    return null;
  }
}

/**
 * The KServe v2 HTTP/REST frontend with Triton's extensions, on node:http. It translates between the wire
 * and the InferenceServer API and nothing more; every error is answered as `{"error": "..."}` with the status
 * from the one table in status.ts.
 */
export async function startHttpFrontend(server: InferenceServer, options: HttpOptions, logger: Logger): Promise<HttpFrontend> {
  const json = new JsonParser();
  const ctx: Context = {
    server, options, json, logger, restrict: restriction(options.restricted), keys: options.keys ?? null, tenants: new WeakMap(), forwarded: rawHeaderForwarder(options.headerForwardPattern),
    parseBody: (body, exact) => json.parseBody(body, exact), routes: new RouteCache(), console: options.console === true ? consoleAssets(logger) : null,
  };
  const { server: http, stop } = createHttpServer({ keepAliveTimeout: 65_000 }, options.tls, (req, res) => {
    // Dispatch is synchronous up to the handler that waits for something: an async function per layer of
    // routing would cost each request a promise and a microtask turn apiece.
    let pending: Promise<void> | void;
    try {
      pending = handle(ctx, req, res);
    } catch (e) {
      sendError(res, e, ctx);
      return;
    }
    if (pending instanceof Promise) pending.catch((e: unknown) => sendError(res, e, ctx));
  }, (message) => logger.warn(message), options.tlsLimits);
  http.on('clientError', answerClientError);
  // Bodies the early look (readBody's inspect) may need to see go to node:http, which streams them.
  const direct = new DirectPath(http, directHandlers(ctx), Math.min(INSPECT_BYTES - 1, options.maxInputSize));
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port, options.address, () => resolve());
  });
  const port = (http.address() as AddressInfo).port;
  // Before Triton's line, which scripts wait for: whoever has seen that line has seen this one.
  if (ctx.console !== null) logger.info(`Console at ${consoleUrl(options.address, port, options.tls !== undefined)}`);
  // Triton's line, which scripts wait for; TLS is said apart.
  logger.info(`Started HTTPService at ${options.address}:${port}`);
  if (options.tls !== undefined) logger.info(`HTTPService serves TLS (client certificates ${options.tls.mutual ? 'required' : 'not asked for'})`);
  return {
    port,
    close: () => {
      stop();
      return closeServer(http, direct, ctx.json);
    },
  };
}

/**
 * Stops listening and closes connections as their responses finish. Called after the server has drained
 * (or given up at --exit-timeout-secs), so a connection still busy after a short grace period is waiting
 * for an answer that will not come: it is closed rather than kept open until its keep-alive timeout.
 */
async function closeServer(http: Server, direct: DirectPath<unknown>, json: JsonParser, graceMs = 1000): Promise<void> {
  const force = setTimeout(() => {
    http.closeAllConnections();
    direct.closeAll();
  }, graceMs);
  await new Promise<void>((resolve) => {
    http.close(() => resolve());
    http.closeIdleConnections();
    direct.closeIdle();
  });
  clearTimeout(force);
  direct.closeAll();
  await json.close();
}

interface Context {
  readonly server: InferenceServer;
  readonly options: HttpOptions;
  readonly json: JsonParser;
  readonly logger: Logger;
  /** null when requests need no API key. */
  readonly keys: ApiKeys | null;
  /** The id of the key each request head passed with (see keyPassed): its requests' tenant. */
  readonly tenants: WeakMap<object, string>;
  /** null when no API category is restricted. */
  readonly restrict: ((r: Route, headers: IncomingHttpHeaders) => string | null) | null;
  /** Header forwarding over the raw header list, names as sent (see rawHeaderForwarder). */
  readonly forwarded: (rawHeaders: readonly string[]) => Record<string, string> | undefined;
  /** JSON bodies of the endpoints other than infer: json.parseBody. */
  readonly parseBody: (body: Buffer, exact?: boolean) => Promise<unknown>;
  readonly routes: RouteCache;
  /** null when the console is off. */
  readonly console: ConsoleAssets | null;
}

/** Routes a request node:http read; what answers at once returns nothing, what waits returns its promise. */
function handle(ctx: Context, req: IncomingMessage, res: ServerResponse): Promise<void> | void {
  const r = routeOf(ctx, req.url ?? '/');
  // Only a path no API route takes can be the console's.
  if (r === undefined && ctx.console !== null && ctx.console.answer(req, res)) return;
  const method = req.method ?? 'GET';
  if (refused(ctx, r, method, req.headers, res)) return;
  if (wholeBody(r, method)) return answerWhole(ctx, r, method, req, res, req);
  const s = ctx.server;
  switch (r.kind) {
    case 'logging': return readJson(ctx, req).then((j) => updateLogging(ctx, j, res));
    case 'trace':
      // An unknown model is refused before its body is read, as Triton does.
      checkTraceModel(ctx, r.model ?? '');
      return readJson(ctx, req).then((j) => handleTrace(ctx, r.model ?? '', httpTraceSetting(j), res));
    case 'repo_index': return readJson(ctx, req).then((j) => handleRepoIndex(s, j, res));
    case 'repo_model':
      if (r.repository !== '') throw unsupported("'repository_name' specification is not supported");
      return readJson(ctx, req).then((j) => (r.action === 'load' ? handleLoad(s, r.model, j, res, ctx.parseBody) : handleUnload(s, r.model, j, res)));
    case 'shm': return registerSharedMemory(ctx, r, req, res);
    case 'model':
      return handleGenerate(s, r.model, r.version, r.action === 'generate_stream', req, res, ctx.options.maxInputSize, connectionSignal(req.socket), ctx.parseBody,
        s.traces.active ? sampleHttp(ctx, r.model, req, res) : null, tenantOf(ctx, req.headers));
    default: throw unsupported("'repository_name' specification is not supported");
  }
}

/** The direct path's part (direct/direct-path.ts): plain requests to the routes that take a whole body or none. */
function directHandlers(ctx: Context): DirectHandlers<Route | null> {
  return {
    decide(head) {
      const r = routeOf(ctx, head.url) ?? null;
      // With the console on, a path no API route takes is left to node:http, where the console answers it.
      if (r === null) return ctx.console === null ? null : undefined;
      return !methodAllowed(r, head.method) || wholeBody(r, head.method) ? r : undefined;
    },
    serve(head, body, answer, r) {
      let pending: Promise<void> | void;
      try {
        if (refused(ctx, r ?? undefined, head.method, head.headers, answer)) return;
        pending = answerWhole(ctx, r!, head.method, head, answer, body);
      } catch (e) {
        sendError(answer, e, ctx);
        return;
      }
      if (pending instanceof Promise) pending.catch((e: unknown) => sendError(answer, e, ctx));
    },
    timesArrival: () => ctx.server.traces.active,
  };
}

function routeOf(ctx: Context, url: string): Route | undefined {
  const target = url.charCodeAt(0) === SLASH ? url : originForm(url);
  const q = target.indexOf('?');
  return ctx.routes.route(q === -1 ? target : target.slice(0, q));
}

const SLASH = 0x2f;

/** Answers, and returns true for, a request refused before its route's handler: no route, no key, restricted, wrong method. */
function refused(ctx: Context, r: Route | undefined, method: string, headers: IncomingHttpHeaders, res: Answer): r is undefined {
  if (!r) {
    sendJson(res, 404, '{"error":"Not Found"}');
    return true;
  }
  if (ctx.keys !== null && !keyPassed(ctx, ctx.keys, r, headers, res)) return true;
  if (ctx.restrict !== null) {
    const refusal = ctx.restrict(r, headers);
    if (refusal !== null) {
      sendJson(res, 403, JSON.stringify({ error: refusal }));
      return true;
    }
  }
  if (!methodAllowed(r, method)) {
    sendJson(res, 405, '{"error":"Method Not Allowed"}');
    return true;
  }
  return false;
}

/**
 * Whether the request's API key holds the route's scope and its quota takes the request; if not, the refusal
 * is answered. A request counted in flight is released once its answer is over, whichever way.
 */
function keyPassed(ctx: Context, keys: ApiKeys, r: Route, headers: IncomingHttpHeaders, res: Answer): boolean {
  // The direct path's repeated heads are one frozen object: its key is looked up once per connection.
  const key = keys.check(headers.authorization, category(r), routeModel(r), headers);
  if (key === null) return true;
  if (isRefusal(key)) {
    sendKeyRefusal(res, key);
    return false;
  }
  const overQuota = keys.admit(key);
  if (overQuota !== null) {
    sendKeyRefusal(res, overQuota);
    return false;
  }
  if (key.quota.tracksInflight) releaseWhenOver(res, key);
  // The direct path's repeated head is one object per connection: its tenant is recorded once.
  if (ctx.tenants.get(headers) !== key.id) ctx.tenants.set(headers, key.id);
  return true;
}

/** The request's tenant: the id of the API key it passed with, when the server checks keys. */
function tenantOf(ctx: Context, headers: IncomingHttpHeaders): string | undefined {
  return ctx.keys === null ? undefined : ctx.tenants.get(headers);
}

function releaseWhenOver(res: Answer, key: ApiKey): void {
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    key.quota.release();
  };
  res.once('finish', release);
  res.once('close', release);
}

/** 401 with the challenge RFC 6750 asks for, 403, or 429 with Retry-After; the body in Triton's error shape. */
function sendKeyRefusal(res: Answer, refusal: KeyRefusal): void {
  const body = JSON.stringify({ error: refusal.message });
  const headers: Record<string, string | number> = { ...JSON_HEADERS, 'Content-Length': Buffer.byteLength(body) };
  if (refusal.kind === 'unauthenticated') headers['WWW-Authenticate'] = 'Bearer';
  if (refusal.retryAfterSecs !== undefined) headers['Retry-After'] = refusal.retryAfterSecs;
  res.writeHead(refusal.kind === 'unauthenticated' ? 401 : refusal.kind === 'permission-denied' ? 403 : 429, headers);
  res.end(body);
}

/**
 * Routes whose handlers take the body whole, or read none: all but those that read a JSON body of settings or
 * stream their answer. These are the routes the direct path serves.
 */
function wholeBody(r: Route, method: string): boolean {
  switch (r.kind) {
    case 'repo_index': case 'repo_index_named': case 'repo_model': return false;
    case 'logging': case 'trace': return method === 'GET';
    case 'shm': return r.action !== 'register';
    case 'model': return r.action !== 'generate' && r.action !== 'generate_stream';
    default: return true;
  }
}

/** A whole-body route's answer; `body` is the body itself on the direct path, the request to read it from on node:http's. */
function answerWhole(ctx: Context, r: Route, method: string, req: RequestInfo, res: Answer, body: Buffer | IncomingMessage): Promise<void> | void {
  const s = ctx.server;
  switch (r.kind) {
    case 'live': return sendEmpty(res, s.isLive() ? 200 : 400);
    case 'ready': return sendEmpty(res, s.isReady() ? 200 : 400);
    case 'server_metadata': return sendJson(res, 200, JSON.stringify(s.metadata()));
    case 'all_stats': return sendJson(res, 200, JSON.stringify(s.statistics()));
    case 'all_instance_stats': return sendJson(res, 200, JSON.stringify(s.instanceStatistics()));
    case 'logging': return sendJson(res, 200, JSON.stringify(ctx.logger.settings()));
    case 'nereid_server': return sendJson(res, 200, JSON.stringify(serverInfo(s, ctx.logger, ctx.options.flags ?? [])));
    case 'nereid_traces': return sendJson(res, 200, s.traces.recent.json());
    case 'trace': return handleTrace(ctx, r.model ?? '', null, res);
    case 'shm': return handleSharedMemory(ctx, r, res);
    case 'model': return handleModel(ctx, r, req, res, body);
    default: throw new Error(`${r.kind} is not a whole-body route (${method})`);
  }
}

function methodAllowed(r: Route, method: string): boolean {
  switch (r.kind) {
    case 'live': case 'ready': case 'server_metadata': case 'all_stats': case 'all_instance_stats': case 'nereid_server': case 'nereid_traces': return method === 'GET';
    case 'logging': case 'trace': return method === 'GET' || method === 'POST';
    case 'repo_index': case 'repo_index_named': case 'repo_model': return method === 'POST';
    case 'shm': return r.action === 'status' ? method === 'GET' : method === 'POST';
    case 'model':
      return r.action === 'infer' || r.action === 'generate' || r.action === 'generate_stream' ? method === 'POST' : method === 'GET';
  }
}

function handleModel(ctx: Context, r: Extract<Route, { kind: 'model' }>, req: RequestInfo, res: Answer, body: Buffer | IncomingMessage): Promise<void> | void {
  const s = ctx.server;
  if (s.loadsOnDemand && r.action !== 'infer') {
    // Metadata, config and ready calls load a model that is not loaded (ready answers once the load is over).
    const loading = s.whenLoaded(r.model, { signal: connectionSignal(req.socket) });
    if (loading !== undefined) return (r.action === 'ready' ? loading.catch(() => undefined) : loading).then(() => handleModelNow(ctx, r, req, res, body));
  }
  return handleModelNow(ctx, r, req, res, body);
}

function handleModelNow(ctx: Context, r: Extract<Route, { kind: 'model' }>, req: RequestInfo, res: Answer, body: Buffer | IncomingMessage): Promise<void> | void {
  const s = ctx.server;
  switch (r.action) {
    case 'metadata': return sendJson(res, 200, JSON.stringify(s.modelMetadata(r.model, r.version)));
    case 'ready':
      return s.isModelReady(r.model, r.version) ? sendEmpty(res, 200) : sendJson(res, 400, '{"error":"Model version not ready"}');
    case 'config': return sendJson(res, 200, JSON.stringify(s.modelConfigJson(r.model, r.version)));
    case 'stats': return sendJson(res, 200, JSON.stringify(s.statistics(r.model, r.version)));
    case 'nereid_instance_stats': return sendJson(res, 200, JSON.stringify(s.instanceStatistics(r.model, r.version)));
    case 'infer': return handleInfer(ctx, r.model, r.version, req, res, body);
    default: throw new Error(`${r.action} is not a whole-body action`);
  }
}

function handleInfer(ctx: Context, model: string, version: number | undefined, req: RequestInfo, res: Answer, body: Buffer | IncomingMessage): Promise<void> {
  const traces = ctx.server.traces;
  if (traces.active) {
    const trace = traces.sample(model, traceCarrier(req.headers));
    if (trace !== null) {
      followAnswer(trace, res, req.receivedAt);
      return infer(ctx, model, version, req, res, body, trace);
    }
  }
  return infer(ctx, model, version, req, res, body, null);
}

/** generate / generate_stream: the request's trace when sampled, followed to the end of its answer. */
function sampleHttp(ctx: Context, model: string, req: IncomingMessage, res: ServerResponse): RootTrace | null {
  const trace = ctx.server.traces.sample(model, traceCarrier(req.headers));
  if (trace !== null) followAnswer(trace, res);
  return trace;
}

/** The frontend's timestamps around a sampled request, and its trace ended once the answer has gone. */
function followAnswer(trace: RootTrace, res: Answer, receivedAt?: bigint): void {
  // Triton's HTTP_RECV_START is when the request began to arrive: known on the direct path, which has the
  // whole request by the time its handler runs; node:http's requests are stamped as their handler starts.
  trace.stamp('HTTP_RECV_START', receivedAt ?? process.hrtime.bigint());
  let ended = false;
  const end = (): void => {
    if (ended) return;
    ended = true;
    trace.end();
  };
  res.once('finish', () => {
    trace.stamp('HTTP_SEND_END', process.hrtime.bigint());
    end();
  });
  res.once('close', end);
}

async function infer(
  ctx: Context, model: string, version: number | undefined, req: RequestInfo, res: Answer, source: Buffer | IncomingMessage, trace: RootTrace | null,
): Promise<void> {
  // As Triton's HandleInfer, the model is looked up before the body is read (an unknown model is refused
  // then), and a decoupled one is refused (CheckTransactionPolicy). Its bounds let the decoding refuse a
  // request that holds more than the model could take before doing the work it asks for.
  const signal = connectionSignal(req.socket);
  // A model not loaded is loaded first with --model-load-on-demand.
  const found = ctx.server.resolveLoaded(model, version, { signal });
  const resolved = found instanceof Promise ? await found : found;
  if (resolved.decoupled) throw unsupported("HTTP end point doesn't support models with decoupled transaction policy");
  const bounds = resolved.bounds;
  const limit = ctx.options.maxInputSize;
  const encoding = requestEncoding(req.headers['content-encoding'] as string | undefined);
  // Only a body that can reach INSPECT_BYTES (or of unknown length) is looked at from its start.
  const declared = req.headers['content-length'];
  // A raw binary body (header length 0) holds no JSON to look at.
  const raw = Number(req.headers['inference-header-content-length']) === 0;
  const inspect = !raw && encoding === 'identity' && (declared === undefined || Number(declared) >= INSPECT_BYTES) ? earlyRefusal(req, res, bounds) : undefined;
  // The direct path has read the whole body already (it takes only bodies too small for the early look).
  let body = Buffer.isBuffer(source) ? source : await readBody(source, limit, undefined, inspect);
  if (encoding !== 'identity') body = await decompress(body, limit);
  if (trace !== null) trace.stamp('HTTP_RECV_END', process.hrtime.bigint());
  const headerLength = parseHeaderLength(req.headers['inference-header-content-length'], body.byteLength);
  // Borrowed outputs go to the socket without a copy; they are given back once the response is over.
  const target = { model, version, signal, forwarded: ctx.forwarded(req.rawHeaders), borrowOutputs: true, tenant: tenantOf(ctx, req.headers) };
  let decoded: DecodedInfer;
  if (headerLength === 0) {
    decoded = decodeRaw(rawInput(model, resolved, body), target);
  } else {
    const jsonLength = headerLength ?? body.byteLength;
    // A body that is all JSON may be handed to the JSON worker without a copy: only its (empty) binary part is
    // read afterwards.
    const binary = jsonLength === body.byteLength ? NO_BINARY : body;
    const header = ctx.json.parse(body, jsonLength, bounds, limit);
    const parsed = header instanceof Promise ? await header : header;
    decoded = decodeInfer(parsed, binary, binary === NO_BINARY ? 0 : jsonLength, target);
  }
  const request = trace === null ? decoded.request : { ...decoded.request, trace };
  // Answered through callbacks: a model run at once answers before inferTo returns, and the response is
  // written then, without waiting for a turn of the promise jobs.
  return new Promise<void>((resolve, reject) => {
    ctx.server.inferTo(request, resolved, (response) => {
      let sent: Promise<void> | undefined;
      try {
        sent = answerInfer(ctx, req, res, signal, decoded, response, trace);
      } catch (e) {
        reject(e);
        return;
      }
      if (sent === undefined) resolve();
      else sent.then(resolve, reject);
    }, reject);
  });
}

/** The response to an infer request, written at once unless its encoding or compression is asynchronous. */
function answerInfer(
  ctx: Context, req: RequestInfo, res: Answer, signal: AbortSignal, decoded: DecodedInfer, response: InferenceResponse, trace: RootTrace | null,
): Promise<void> | undefined {
  if (response.release) releaseWhenDone(res, signal, response.release);
  if (signal.aborted) return undefined;
  const encoded = ctx.json.encode(response, decoded.binaryOutputs, decoded.binaryDefault);
  if (encoded instanceof Promise) return encoded.then(({ json, blobs }) => sendEncoded(req, res, json, blobs, trace));
  return sendEncoded(req, res, encoded.json, encoded.blobs, trace);
}

function sendEncoded(req: RequestInfo, res: Answer, header: string | Uint8Array, blobs: readonly Uint8Array[], trace: RootTrace | null): Promise<void> | undefined {
  const answer = negotiate(req.headers['accept-encoding'] as string | undefined);
  if (trace !== null) {
    // As Triton's: the response is complete once it is written out (here, encoded), then it is sent.
    trace.stamp('INFER_RESPONSE_COMPLETE', process.hrtime.bigint());
    trace.stamp('HTTP_SEND_START', process.hrtime.bigint());
  }
  if (answer !== 'identity') return sendCompressed(res, header, blobs, answer);
  sendInfer(res, header, blobs);
  return undefined;
}

const NO_BINARY = Buffer.alloc(0);

/**
 * The look at the start of a large body (readBody's `inspect`): the JSON header's first bytes are scanned for
 * more inputs, outputs or parameters than the model allows, so that such a request is refused before the rest
 * of it is read. The connection closes after the answer: the rest of the body is not read to keep it.
 */
function earlyRefusal(req: RequestInfo, res: Answer, bounds: RequestBounds): (prefix: Buffer) => void {
  const declared = Number(req.headers['inference-header-content-length'] ?? Number.NaN);
  return (prefix) => {
    try {
      scanHeader(Number.isSafeInteger(declared) && declared > 0 && declared < prefix.byteLength ? prefix.subarray(0, declared) : prefix, bounds);
    } catch (e) {
      res.shouldKeepAlive = false;
      throw e;
    }
  };
}

const kAbort = Symbol('nereid.abort');

/**
 * A client that goes away before its answer cancels its requests while they are still queued. One signal per
 * connection, aborted when the socket closes, rather than one AbortController and listener per request: a
 * closed connection can receive no answer, so everything on it is cancelled.
 */
function connectionSignal(socket: Socket & { [kAbort]?: AbortController }): AbortSignal {
  let c = socket[kAbort];
  if (!c) {
    const controller = new AbortController();
    socket.once('close', () => controller.abort());
    socket[kAbort] = c = controller;
  }
  return c.signal;
}

function parseHeaderLength(h: string | string[] | undefined, bodyLength: number): number | undefined {
  if (h === undefined) return undefined;
  const v = Array.isArray(h) ? h[0]! : h;
  const n = Number(v);
  if (!/^\s*[0-9]+\s*$/.test(v) || !Number.isSafeInteger(n) || n > bodyLength) {
    throw invalidArg(`inference header size should be in range (0, ${bodyLength}), got: ${v} (Inference-Header-Content-Length must be a non-negative integer no larger than the body)`);
  }
  return n;
}

/** The response as it is: one write of the JSON, or one writev of the JSON and the binary outputs. */
function sendInfer(res: Answer, header: string | Uint8Array, blobs: readonly Uint8Array[]): void {
  if (blobs.length === 0 && typeof header === 'string') {
    // Text as it is: node:http then sends the status line, the headers and the body as one string in one
    // write, with no buffer made for the body.
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(header) });
    res.end(header);
    return;
  }
  if (blobs.length === 0) {
    const head = asBuffer(header);
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': head.byteLength });
    res.end(head);
    return;
  }
  // The JSON part goes as text too (it is encoded as it is written), the binary outputs as they are.
  const headLength = typeof header === 'string' ? Buffer.byteLength(header) : header.byteLength;
  let length = headLength;
  for (const b of blobs) length += b.byteLength;
  res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': headLength, 'Content-Length': length });
  // All parts in one writev; end() after uncork, as ending a corked response costs an extra flush.
  res.cork();
  res.write(header);
  for (const b of blobs) res.write(b);
  res.uncork();
  res.end();
}

/** The response compressed as the client asked; sent uncompressed when compression fails, as Triton does. */
async function sendCompressed(res: Answer, header: string | Uint8Array, blobs: readonly Uint8Array[], encoding: 'gzip' | 'deflate'): Promise<void> {
  const head = asBuffer(header);
  let packed: Buffer;
  try {
    packed = await compress(blobs.length === 0 ? head : Buffer.concat([head, ...blobs]), encoding);
  } catch {
    return sendInfer(res, header, blobs);
  }
  const headers: Record<string, string | number> = { 'Content-Encoding': encoding, 'Content-Length': packed.byteLength };
  if (blobs.length === 0) headers['Content-Type'] = 'application/json';
  else {
    headers['Content-Type'] = 'application/octet-stream';
    headers['Inference-Header-Content-Length'] = head.byteLength;
  }
  res.writeHead(200, headers);
  res.end(packed);
}

/** Text as UTF-8, bytes as they are (no copy). */
function asBuffer(b: string | Uint8Array): Buffer {
  return typeof b === 'string' ? Buffer.from(b) : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

/** Status and unregister, which read no body. */
function handleSharedMemory(ctx: Context, r: Extract<Route, { kind: 'shm' }>, res: Answer): void {
  const shm = ctx.server.sharedMemory;
  if (r.action === 'status') return sendJson(res, 200, JSON.stringify(r.cuda ? shm.cudaStatus(r.region) : shm.systemStatus(r.region)));
  if (r.cuda) shm.unregisterCuda();
  else shm.unregisterSystem(r.region);
  sendEmpty(res, 200);
}

async function registerSharedMemory(ctx: Context, r: Extract<Route, { kind: 'shm' }>, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const shm = ctx.server.sharedMemory;
  shm.checkAllowed();
  // The path without a region matches too (as Triton's router has it), and is refused in Triton's words.
  if (r.region === undefined || r.region === '') throw invalidArg(`'region name' is necessary to register ${r.cuda ? 'cuda' : 'system'} shared memory region`);
  const name = r.region;
  const body = parseRegisterBody(await readJson(ctx, req));
  if (r.cuda) shm.registerCuda(name);
  else shm.registerSystem(name, requiredString(body, 'key'), optionalUint(body, 'offset'), requiredUint(body, 'byte_size'));
  sendEmpty(res, 200);
}

function parseRegisterBody(j: unknown): Record<string, unknown> {
  if (!isObject(j)) throw invalidArg('the shared memory register request must be a JSON object');
  return j;
}

/** A request body as JSON (undefined when empty), parsed off the event loop when large. */
async function readJson(ctx: Context, req: IncomingMessage): Promise<unknown> {
  return ctx.parseBody(await readBody(req, ctx.options.maxInputSize));
}

function requiredString(j: Record<string, unknown>, key: string): string {
  const v = j[key];
  if (v === undefined) throw invalidArg(`Shared memory register request has no '${key}' field`);
  if (typeof v !== 'string') throw invalidArg(`attempt to access JSON non-string as string ('${key}' of the shared memory register request)`);
  return v;
}

function requiredUint(j: Record<string, unknown>, key: string): number {
  if (j[key] === undefined) throw invalidArg(`Shared memory register request has no '${key}' field`);
  return optionalUint(j, key);
}

function optionalUint(j: Record<string, unknown>, key: string): number {
  const v = j[key];
  if (v === undefined) return 0;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
    throw invalidArg(`attempt to access JSON non-unsigned-integer as unsigned-integer ('${key}' of the shared memory register request)`);
  }
  if (!Number.isSafeInteger(v)) throw invalidArg(`'${key}' of the shared memory register request must be below 2^53`);
  return v;
}

/** POST /v2/logging: a body that is not JSON is Triton's 500 (its JSON wrapper's INTERNAL); a client's mistake is 400 here, as on every path. */
function updateLogging(ctx: Context, j: unknown, res: Answer): void {
  if (j !== undefined) {
    if (!isObject(j)) throw invalidArg('the logging settings must be a JSON object');
    ctx.logger.update(j);
  }
  sendJson(res, 200, JSON.stringify(ctx.logger.settings()));
}

/** GET (`given` null) or POST of the global (model '') or a model's trace setting; the answer is the setting then in force. */
function handleTrace(ctx: Context, model: string, given: GivenSetting | null, res: Answer): void {
  checkTraceModel(ctx, model);
  const view = traceSetting(ctx.server, model, given);
  sendJson(res, 200, JSON.stringify(Object.fromEntries(settingEntries(view))));
}

function checkTraceModel(ctx: Context, model: string): void {
  if (model !== '' && !ctx.server.isModelReady(model)) throw invalidArg(`Request for unknown model : ${model}`);
}

/** The body of a trace setting update: strings (trace_level a list of them), null to clear, as TritonJson reads it. */
function httpTraceSetting(j: unknown): GivenSetting {
  if (j === undefined) return { level: undefined, rate: undefined, count: undefined, logFrequency: undefined, file: false };
  if (!isObject(j)) throw invalidArg('the trace settings must be a JSON object');
  const scalar = (key: string): GivenValue => {
    const v = j[key];
    if (v === undefined || v === null) return v;
    if (typeof v !== 'string') throw wrongJsonType('string');
    return [v];
  };
  let level: GivenValue;
  const l = j['trace_level'];
  if (l === undefined || l === null) level = l;
  else if (!Array.isArray(l)) throw wrongJsonType('array');
  else level = l.map((e: unknown) => {
    if (typeof e !== 'string') throw wrongJsonType('string');
    return e;
  });
  return { level, rate: scalar('trace_rate'), count: scalar('trace_count'), logFrequency: scalar('log_frequency'), file: 'trace_file' in j };
}

/** TritonJson's refusal of a value of the wrong JSON type (an INTERNAL error, 500 over HTTP). */
function wrongJsonType(what: 'string' | 'array'): NereidError {
  return new NereidError('INTERNAL', `attempt to access JSON non-${what} as ${what}`);
}

/** A client's W3C trace context, read only for requests of a server that traces. */
function traceCarrier(h: IncomingHttpHeaders): TraceContextCarrier | null {
  const traceparent = h['traceparent'];
  if (traceparent === undefined) return null;
  const tracestate = h['tracestate'];
  return { traceparent: Array.isArray(traceparent) ? traceparent[0] : traceparent, tracestate: Array.isArray(tracestate) ? tracestate.join(',') : tracestate };
}

function sendError(res: Answer, e: unknown, ctx: Context): void {
  const err = isNereidError(e) ? e : new NereidError('INTERNAL', 'internal error');
  if (err.limit !== undefined) ctx.server.reportError(err);
  if (!isNereidError(e)) ctx.logger.error(`unexpected error in the HTTP frontend: ${(e as Error)?.stack ?? String(e)}`);
  else if (res.socket === null || res.socket.destroyed) {
    // The client has gone (mid-upload, or while its request waited): there is no one to answer, and nothing
    // went wrong here. One line for whoever follows requests; the message is ours, never the client's text.
    if (ctx.logger.isVerbose(1)) ctx.logger.verbose(1, `HTTP client closed its connection before its answer (${err.code}${err.code === 'CANCELLED' ? `: ${err.message}` : ''})`);
    return;
  }
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify({ error: err.message });
  const headers: Record<string, string | number> = { ...JSON_HEADERS, ...HTTP_ERROR_HEADERS[err.code], 'Content-Length': Buffer.byteLength(body) };
  if (err.retryAfterSecs !== undefined) headers['Retry-After'] = err.retryAfterSecs;
  res.writeHead(HTTP_STATUS[err.code], headers);
  res.end(body);
}
