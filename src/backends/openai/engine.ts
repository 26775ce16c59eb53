import { Pool, errors as undiciErrors, type Dispatcher } from 'undici';
import { NereidError, invalidArg, unavailable } from '../../errors.js';
import { EventReader } from './sse.js';
import { engineMetrics, type EngineMetrics } from './engine-metrics.js';
import { isContextError } from './context-error.js';
import { toolCallsOf, type ToolCall } from './tool-calls.js';
import { logprobsOf, type TokenLogprob } from './logprobs.js';
import { embeddingOf, type Embedding } from './embedding.js';

/** Where an engine is and how to talk to it: from the model's config parameters. */
export interface EngineSettings {
  /** The engine's root, e.g. http://127.0.0.1:8000 (a trailing /v1 is accepted and dropped). */
  readonly baseUrl: string;
  /** The model id the engine serves, sent as `model` in every request. */
  readonly modelId: string;
  /** The API key, read from the environment variable the config names; never from the config itself. */
  readonly apiKey: string | undefined;
  /** Longest wait for the engine's answer headers, then between body chunks. */
  readonly timeoutMs: number;
  /** Retries of a request that could not reach the engine at all (never of one the engine received). */
  readonly retries: number;
  /** Connections kept open to the engine. */
  readonly connections: number;
}

/** One completion chunk (or the whole answer) as Nereid passes it on. */
export interface Completion {
  readonly text: string;
  readonly finishReason: string | undefined;
  readonly usage: { promptTokens: number; completionTokens: number } | undefined;
  /** A chat's tool calls: whole, or streaming, the pieces this chunk carries (tool-calls.ts). */
  readonly toolCalls?: ToolCall[] | undefined;
  /** With `logprobs`: the figures of the tokens of this chunk's text (of the whole text, for a whole answer). */
  readonly logprobs?: TokenLogprob[] | undefined;
}

/** The JSON body of /v1/completions or /v1/chat/completions, without `model` and `stream`. */
export type EngineBody = Record<string, unknown>;

/**
 * How long one reading of the engine's /metrics serves: a scrape asks once per gauge family and instance, all
 * within a few milliseconds; a scraper's next visit, seconds later, reads afresh.
 */
const LOAD_REUSE_MS = 250;

/** Longest /metrics text read from an engine: a runaway engine cannot make a scrape hold more. */
const MAX_METRICS_TEXT = 4 * 1024 * 1024;

const ENDPOINTS = { completions: '/v1/completions', chat: '/v1/chat/completions', embeddings: '/v1/embeddings' } as const;

const CONNECT_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * An OpenAI-compatible engine (vLLM, SGLang, TGI, llama.cpp's server, any /v1 endpoint) over one pool of
 * kept-alive connections (undici). Requests the engine never received are retried; anything else the engine
 * says is mapped to a NereidError naming the engine, so a client can tell a bad request from a broken engine.
 */
export class Engine {
  private pool: Pool;
  private root: URL;
  private readonly headers: Record<string, string>;
  private lastMetrics: { at: number; value: Promise<string | undefined> } | undefined;

  /** `healthPath`: the one path that tells the engine's health (an engine Nereid starts); absent: /health, else /v1/models. */
  constructor(readonly settings: EngineSettings, private readonly healthPath?: string) {
    this.root = rootOf(settings.baseUrl);
    this.pool = this.connect();
    this.headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    if (settings.apiKey) this.headers['authorization'] = `Bearer ${settings.apiKey}`;
  }

  get description(): string {
    return `engine ${this.root.origin}${this.root.pathname === '/' ? '' : this.root.pathname} (model '${this.settings.modelId}')`;
  }

  /**
   * Talks to the engine at another address from now on (an engine Nereid restarted on another port); requests
   * still on the old connections fail.
   */
  retarget(baseUrl: string): void {
    const old = this.pool;
    this.root = rootOf(baseUrl);
    this.pool = this.connect();
    void old.destroy().catch(() => undefined);
  }

  private connect(): Pool {
    return new Pool(this.root.origin, { connections: this.settings.connections, headersTimeout: this.settings.timeoutMs, bodyTimeout: this.settings.timeoutMs });
  }

  /** True when the engine answers its health check (GET /health, else GET /v1/models) with a 2xx. */
  async healthy(signal?: AbortSignal): Promise<boolean> {
    for (const path of this.healthPath ? [this.healthPath] : ['/health', '/v1/models']) {
      try {
        const r = await this.pool.request({ method: 'GET', path: this.path(path), headers: this.headers, signal, headersTimeout: 5000, bodyTimeout: 5000 });
        await r.body.dump();
        if (r.statusCode >= 200 && r.statusCode < 300) return true;
        if (r.statusCode !== 404) return false;
      } catch {
        return false;
      }
    }
    return false;
  }

  /**
   * The load the engine reports on GET /metrics (vLLM, SGLang, TGI, TensorRT-LLM; llama-server with --metrics),
   * for the model this engine serves: undefined when there is no such endpoint or it says nothing of requests.
   * Never rejects.
   */
  async load(): Promise<EngineMetrics | undefined> {
    const text = await this.metricsText();
    return text === undefined ? undefined : engineMetrics(text, this.settings.modelId);
  }

  /**
   * The text of the engine's GET /metrics (undefined when it has none), at most MAX_METRICS_TEXT
   * characters. Never rejects; one reading serves every caller for LOAD_REUSE_MS (a scrape asks for the load
   * and, of an engine Nereid runs, the whole text).
   */
  metricsText(): Promise<string | undefined> {
    const now = Date.now();
    if (this.lastMetrics && now - this.lastMetrics.at < LOAD_REUSE_MS) return this.lastMetrics.value;
    const value = this.readMetrics();
    this.lastMetrics = { at: now, value };
    return value;
  }

  private async readMetrics(): Promise<string | undefined> {
    try {
      const r = await this.pool.request({ method: 'GET', path: this.path('/metrics'), headers: this.headers, headersTimeout: 2000, bodyTimeout: 2000 });
      if (r.statusCode < 200 || r.statusCode >= 300) {
        await r.body.dump();
        return undefined;
      }
      let text = '';
      for await (const chunk of r.body) {
        text += (chunk as Buffer).toString('utf8');
        if (text.length > MAX_METRICS_TEXT) {
          r.body.destroy();
          break;
        }
      }
      return text.slice(0, MAX_METRICS_TEXT);
    } catch {
      return undefined;
    }
  }

  /** One whole answer (stream false). */
  async complete(kind: 'completions' | 'chat', body: EngineBody, signal?: AbortSignal, traceparent?: string): Promise<Completion> {
    const r = await this.send(kind, { ...body, stream: false }, signal, traceparent);
    const text = await r.body.text();
    const json = parseJson(text, this.description);
    return completionOf(json, kind, this.description);
  }

  /**
   * The answer as it is generated (stream true): `onChunk` gets one Completion per server-sent event, as each
   * arrives, until [DONE]. Events are read from the body's chunks synchronously, as this is the per-token path.
   * Resolves at [DONE] (or the end of the body); rejects on the engine's errors, which name the engine.
   */
  async stream(kind: 'completions' | 'chat', body: EngineBody, onChunk: (c: Completion) => void, signal?: AbortSignal, traceparent?: string): Promise<void> {
    const r = await this.send(kind, { ...body, stream: true, stream_options: { include_usage: true } }, signal, traceparent);
    const engine = this.description;
    // An engine (or a proxy before it) that does not stream answers one whole JSON completion: one chunk.
    if (!isEventStream(r.headers['content-type'])) {
      const json = parseJson(await r.body.text(), engine);
      if (json && typeof json === 'object' && 'error' in json) throw engineError(500, json, engine);
      onChunk(completionOf(json, kind, engine));
      return;
    }
    const timeoutMs = this.settings.timeoutMs;
    await new Promise<void>((resolve, reject) => {
      let done = false;
      const reader = new EventReader((data) => {
        if (done) return;
        if (data === '[DONE]') {
          done = true;
          resolve();
          return;
        }
        const json = parseJson(data, engine);
        if (json && typeof json === 'object' && 'error' in json) throw engineError(500, json, engine);
        onChunk(completionOf(json, kind, engine));
      });
      const fail = (e: unknown): void => {
        done = true;
        r.body.destroy();
        reject(e);
      };
      r.body.on('data', (chunk: Buffer) => {
        try {
          reader.push(chunk);
        } catch (e) {
          fail(e);
        }
      });
      r.body.once('end', () => {
        try {
          reader.end();
          resolve();
        } catch (e) {
          reject(e);
        }
      });
      r.body.once('error', (e) => {
        if (done) return;
        if (signal?.aborted) reject(new NereidError('CANCELLED', 'request cancelled'));
        else if (e instanceof undiciErrors.BodyTimeoutError) reject(unavailable(`${engine} stopped streaming: nothing for ${timeoutMs} ms`));
        else reject(unavailable(`${engine} broke off the stream: ${e.message}`));
      });
    });
  }

  /** One text's vector from the engine's /v1/embeddings, asked for as floats (every engine gives those). */
  async embed(input: string, signal?: AbortSignal, traceparent?: string): Promise<Embedding> {
    const r = await this.send('embeddings', { input, encoding_format: 'float' }, signal, traceparent);
    return embeddingOf(parseJson(await r.body.text(), this.description), this.description);
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  private path(p: string): string {
    const base = this.root.pathname.replace(/\/+$/, '');
    return `${base}${p}`;
  }

  /** POSTs to the engine, retrying only when the request never reached it; a non-2xx answer becomes an error. */
  private async send(kind: 'completions' | 'chat' | 'embeddings', body: EngineBody, signal?: AbortSignal, traceparent?: string): Promise<Dispatcher.ResponseData> {
    const path = this.path(ENDPOINTS[kind]);
    const payload = JSON.stringify({ ...body, model: this.settings.modelId });
    // A traced request's context goes on to the engine (W3C traceparent), so that its trace continues there.
    const headers = traceparent ? { ...this.headers, traceparent } : this.headers;
    for (let attempt = 0; ; attempt++) {
      let r: Dispatcher.ResponseData;
      try {
        r = await this.pool.request({ method: 'POST', path, headers, body: payload, signal });
      } catch (e) {
        if (signal?.aborted) throw new NereidError('CANCELLED', 'request cancelled');
        const code = (e as { code?: string }).code ?? '';
        if (CONNECT_ERRORS.has(code) && attempt < this.settings.retries) {
          await new Promise((res) => setTimeout(res, 100 * 2 ** attempt));
          continue;
        }
        if (e instanceof undiciErrors.HeadersTimeoutError || e instanceof undiciErrors.BodyTimeoutError) {
          throw unavailable(`${this.description} did not answer within ${this.settings.timeoutMs} ms`);
        }
        throw unavailable(`${this.description} is unreachable: ${(e as Error).message}${code ? ` (${code})` : ''}`);
      }
      if (r.statusCode >= 200 && r.statusCode < 300) return r;
      const text = await r.body.text().catch(() => '');
      let json: unknown = text;
      try {
        json = JSON.parse(text);
      } catch {
        // not JSON: the text itself is the message
      }
      throw engineError(r.statusCode, json, this.description);
    }
  }
}

function rootOf(baseUrl: string): URL {
  return new URL(baseUrl.replace(/\/+$/, '').replace(/\/v1$/, ''));
}

/** True for text/event-stream, and for an answer that names no type (read as events, as before). */
function isEventStream(contentType: string | string[] | undefined): boolean {
  const type = Array.isArray(contentType) ? contentType[0] : contentType;
  return type === undefined || !/^\s*application\/json\b/i.test(type);
}

function parseJson(text: string, engine: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new NereidError('INTERNAL', `${engine} answered something that is not JSON: ${JSON.stringify(text.slice(0, 200))}`);
  }
}

/** An engine's error answer: its 4xx are the client's mistakes (400), its 5xx the engine's failures. */
function engineError(status: number, body: unknown, engine: string): NereidError {
  const message = errorMessage(body);
  if (status === 404) return invalidArg(`${engine}: not found: ${message}`);
  if (status === 400 && isContextError(body, message)) return new NereidError('CONTEXT_LENGTH_EXCEEDED', `${engine} refused the request (${status}): ${message}`);
  if (status === 429 || status === 503) return unavailable(`${engine} is overloaded or not ready (${status}): ${message}`);
  // llama-server without --embeddings, or an engine without the endpoint's feature.
  if (status === 501) return new NereidError('UNSUPPORTED', `${engine} does not support this request (${status}): ${message}`);
  if (status >= 400 && status < 500) return invalidArg(`${engine} refused the request (${status}): ${message}`);
  return new NereidError('INTERNAL', `${engine} failed (${status}): ${message}`);
}

function errorMessage(body: unknown): string {
  if (typeof body === 'string') return body.slice(0, 500) || 'no message';
  const e = (body as { error?: unknown; message?: unknown } | null)?.error ?? (body as { message?: unknown } | null)?.message;
  if (typeof e === 'string') return e;
  if (e && typeof e === 'object' && typeof (e as { message?: unknown }).message === 'string') return (e as { message: string }).message;
  return JSON.stringify(body).slice(0, 500);
}

/** The text, finish reason and usage of a completion or chat completion (whole or chunk). */
function completionOf(json: unknown, kind: 'completions' | 'chat', engine: string): Completion {
  const j = json as { choices?: unknown; usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } } | null;
  if (!j || typeof j !== 'object') throw new NereidError('INTERNAL', `${engine} answered JSON that is not a completion: ${JSON.stringify(json).slice(0, 200)}`);
  const choices = Array.isArray(j.choices) ? j.choices : [];
  const c = choices[0] as { text?: unknown; delta?: { content?: unknown; tool_calls?: unknown }; message?: { content?: unknown; tool_calls?: unknown }; finish_reason?: unknown; logprobs?: unknown } | undefined;
  if (!c && !j.usage) throw new NereidError('INTERNAL', `${engine} answered JSON that is not a completion: ${JSON.stringify(json).slice(0, 200)}`);
  const raw = kind === 'chat' ? (c?.delta?.content ?? c?.message?.content) : c?.text;
  if (raw !== undefined && raw !== null && typeof raw !== 'string') throw new NereidError('INTERNAL', `${engine} answered a completion whose text is not a string`);
  const usage = j.usage && typeof j.usage.prompt_tokens === 'number' && typeof j.usage.completion_tokens === 'number'
    ? { promptTokens: j.usage.prompt_tokens, completionTokens: j.usage.completion_tokens } : undefined;
  const text = (raw as string | undefined) ?? '';
  const finishReason = typeof c?.finish_reason === 'string' ? c.finish_reason : undefined;
  const calls = c?.delta?.tool_calls ?? c?.message?.tool_calls;
  const logprobs = c?.logprobs === undefined || c.logprobs === null ? undefined : figuresOf(c.logprobs, engine);
  if (calls === undefined || calls === null) return logprobs === undefined ? { text, finishReason, usage } : { text, finishReason, usage, logprobs };
  try {
    return { text, finishReason, usage, toolCalls: toolCallsOf(calls, c?.delta !== undefined), logprobs };
  } catch (e) {
    throw new NereidError('INTERNAL', `${engine} answered tool calls not in OpenAI's shape: ${(e as Error).message}`);
  }
}

function figuresOf(v: unknown, engine: string): TokenLogprob[] | undefined {
  try {
    return logprobsOf(v);
  } catch (e) {
    throw new NereidError('INTERNAL', `${engine} answered log probabilities not in OpenAI's shape: ${(e as Error).message}`);
  }
}
