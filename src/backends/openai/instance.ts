import { NereidError, invalidArg, isNereidError, unavailable } from '../../errors.js';
import { NO_RESPONSE, type Parameters } from '../../inference/index.js';
import type { Logger } from '../../observability/logger.js';
import { utf8 } from '../../tensor/bytes.js';
import type { Tensor } from '../../tensor/tensor.js';
import { READY_INSTANCE, type BackendInstance, type BackendRequest, type EngineLoad, type ExecutionTimes, type InstanceMemory, type InstanceSpec, type InstanceStatus } from '../backend.js';
import type { Completion, Engine, EngineBody } from './engine.js';
import type { ManagedEngine } from './managed-engine.js';
import { ToolCallAssembler } from './tool-calls.js';
import { EMBEDDING_OUTPUT, embeddingText, isEmbeddingModel, vectorTensor } from './embedding.js';

/** The engine an instance talks to, shared by the model's instances; `managed` when Nereid runs it. */
export interface SharedEngine {
  readonly engine: Engine;
  readonly managed?: ManagedEngine | undefined;
  release(): Promise<void>;
}

/** Request parameters passed to the engine as they are (OpenAI's names); the engine honours or refuses each. */
const SAMPLING = ['max_tokens', 'temperature', 'top_p', 'top_k', 'seed', 'presence_penalty', 'frequency_penalty', 'repetition_penalty', 'min_p', 'best_of', 'ignore_eos', 'parallel_tool_calls'] as const;
/** OpenAI's bound on alternatives per token (chat's top_logprobs; legacy completions take at most 5). */
const MAX_TOP_LOGPROBS = 20;

const HEALTH_INTERVAL_MS = 5000;
/** How long a failed request waits to learn whether its engine died (the broken connection comes first). */
const DEATH_NOTICE_MS = 2000;
const ELSEWHERE: InstanceMemory = Object.freeze({ bytes: 0, external: true });
const decoder = new TextDecoder();

/**
 * One gateway instance: each request becomes one call to the engine. A decoupled model streams (one response
 * per chunk of text, then the usage on a last response); an ordinary one answers the whole text. With
 * `logprobs`, the engine's figures of a chunk's tokens ride on its response as the parameter logprobs (the JSON
 * text of OpenAI's chat list, logprobs.ts); `n` stays refused: one request answers one text. The engine's
 * health, checked in the background, is the instance's readiness. An embedding model (parameter `embedding`
 * "true", embedding.ts) sends each text to the engine's /v1/embeddings and answers its vector.
 */
export class GatewayInstance implements BackendInstance {
  private healthy = true;
  private readonly timer: NodeJS.Timeout | undefined;
  private checking = false;
  private readonly managed: ManagedEngine | undefined;

  private constructor(
    private readonly engine: Engine,
    shared: SharedEngine,
    private readonly decoupled: boolean,
    private readonly outputName: string,
    private readonly logger: Logger,
    private readonly instanceName: string,
    private readonly embedding: boolean,
  ) {
    this.release = () => shared.release();
    this.managed = shared.managed;
    // An engine Nereid runs is watched by its supervisor; one that runs elsewhere by each instance.
    this.timer = this.managed ? undefined : setInterval(() => void this.check(), HEALTH_INTERVAL_MS).unref();
  }

  private readonly release: () => Promise<void>;

  static async create(spec: InstanceSpec, shared: SharedEngine): Promise<GatewayInstance> {
    const decoupled = spec.config.model_transaction_policy?.decoupled ?? false;
    const embedding = isEmbeddingModel(spec.config, spec.name);
    const output = embedding ? { name: EMBEDDING_OUTPUT } : spec.config.output.find((o) => o.data_type === 'TYPE_STRING');
    if (!output) throw invalidArg(`model '${spec.name}' (backend openai) needs a TYPE_STRING output for the text (text_output)`);
    if (!spec.config.input.some((i) => i.data_type === 'TYPE_STRING')) throw invalidArg(`model '${spec.name}' (backend openai) needs a TYPE_STRING input for the prompt (text_input)`);
    const instance = new GatewayInstance(shared.engine, shared, decoupled, output.name, spec.logger, spec.instanceName, embedding);
    if (instance.managed) return instance;
    await instance.check();
    if (!instance.healthy) spec.logger.warn(`model '${spec.name}': ${shared.engine.description} does not answer its health check; the model is not ready until it does`);
    return instance;
  }

  ready(): boolean {
    return this.managed ? this.managed.ready() : this.healthy;
  }

  status(): InstanceStatus {
    if (this.ready()) return READY_INSTANCE;
    return { ready: false, hung: false, reason: this.managed ? this.managed.reason() : `${this.engine.description} does not answer its health check` };
  }

  /** Shutdown past --exit-timeout-secs: the engine Nereid runs is killed with its whole process group. */
  kill(): void {
    this.managed?.kill();
  }

  /** Nothing in this process: the engine runs elsewhere and holds the model there. */
  memory(): InstanceMemory {
    return ELSEWHERE;
  }

  /** What the engine reports of its load (shared by every instance on it); undefined where it reports none. */
  async engineLoad(): Promise<EngineLoad | undefined> {
    const m = await this.engine.load();
    if (!m) return undefined;
    return {
      engine: this.engine,
      waiting: m.waiting ?? 0,
      running: m.running ?? 0,
      ...(m.kvCacheUsage !== undefined ? { kvCache: { usage: m.kvCacheUsage, capacity: 1 } } : {}),
    };
  }

  /** The whole /metrics text of the engine Nereid runs for this model; none for an engine run elsewhere. */
  async engineMetrics(): Promise<{ engine: object; text: string } | undefined> {
    if (!this.managed) return undefined;
    const text = await this.engine.metricsText();
    return text === undefined ? undefined : { engine: this.engine, text };
  }

  async execute(requests: readonly BackendRequest[]): Promise<ExecutionTimes> {
    const start = process.hrtime.bigint();
    const calls = requests.map((r) => this.run(r));
    // A decoupled model answers through its senders for as long as the engine streams: the instance is free
    // at once. An ordinary one is busy until its answers are in.
    if (!this.decoupled) await Promise.all(calls);
    return { inputNs: 0, inferNs: Number(process.hrtime.bigint() - start), outputNs: 0 };
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.release();
  }

  private async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      const ok = await this.engine.healthy();
      if (ok !== this.healthy) this.logger.info(`${this.engine.description} is ${ok ? 'healthy again' : 'not healthy'}`);
      this.healthy = ok;
    } finally {
      this.checking = false;
    }
  }

  /** One request to the engine; every outcome ends in the request's sender, never in a throw. */
  private async run(r: BackendRequest): Promise<void> {
    const trace = r.trace;
    const started = trace === undefined ? 0n : process.hrtime.bigint();
    const managed = this.managed;
    let generation = 0;
    try {
      const call = this.embedding ? embeddingText(r) : engineRequest(r);
      if (managed) {
        if (!managed.ready()) await this.engineUp(managed, r);
        generation = managed.generation;
      }
      const traceparent = trace === undefined ? undefined : trace.traceparent();
      if (typeof call === 'string') {
        const e = await this.engine.embed(call, r.signal, traceparent);
        r.sender.send([vectorTensor(e.vector)], true, e.promptTokens === undefined ? undefined : { prompt_tokens: e.promptTokens });
        return;
      }
      const { kind, body } = call;
      if (!this.decoupled) {
        const c = await this.engine.complete(kind, body, r.signal, traceparent);
        r.sender.send([this.text(c.text)], true, usageParameters(c));
        return;
      }
      // A request that did not ask to stream gets the engine's streamed calls whole, on the last response.
      const streaming = r.parameters?.['stream'] === true;
      let assembler: ToolCallAssembler | undefined;
      let last: Completion | undefined;
      await this.engine.stream(kind, body, (c) => {
        if (c.logprobs !== undefined) r.sender.send([this.text(c.text)], false, { logprobs: JSON.stringify(c.logprobs) });
        else if (c.text !== '') r.sender.send([this.text(c.text)], false);
        if (c.toolCalls !== undefined) {
          if (streaming) r.sender.send([this.text('')], false, { tool_calls: JSON.stringify(c.toolCalls) });
          else (assembler ??= new ToolCallAssembler()).push(c.toolCalls);
        }
        if (c.usage || c.finishReason) last = { text: '', finishReason: c.finishReason ?? last?.finishReason, usage: c.usage ?? last?.usage };
      }, r.signal, traceparent);
      const toolCalls = assembler?.whole();
      if (toolCalls) last = { text: '', finishReason: last?.finishReason, usage: last?.usage, toolCalls };
      // The usage and finish reason on a last, empty response; without them, the FINAL flag alone.
      if (last) r.sender.send([this.text('')], true, usageParameters(last));
      else r.sender.send(NO_RESPONSE, true);
    } catch (e) {
      if (!isNereidError(e) || e.code !== 'CANCELLED') this.noteFailure(e);
      if (managed && lostConnection(e) && await managed.diedSince(generation, DEATH_NOTICE_MS)) {
        r.sender.fail(unavailable(`Failed to process the request(s) for model instance '${this.instanceName}', message: Engine process '${this.instanceName}' is not healthy.`));
        return;
      }
      r.sender.fail(isNereidError(e) ? e : new NereidError('INTERNAL', (e as Error).message));
    } finally {
      if (trace !== undefined) trace.phase?.('engine', started, process.hrtime.bigint());
    }
  }

  /** Waits for an engine Nereid runs to be ready again, within the request's timeout or else the engine timeout. */
  private engineUp(managed: ManagedEngine, r: BackendRequest): Promise<void> {
    return managed.whenReady(r.timeoutUs ? Math.ceil(r.timeoutUs / 1000) : this.engine.settings.timeoutMs, r.signal);
  }

  /** A request that could not reach the engine makes the model unready until the next health check passes. */
  private noteFailure(e: unknown): void {
    if (isNereidError(e) && e.code === 'UNAVAILABLE' && /unreachable/.test(e.message)) this.healthy = false;
  }

  private text(s: string): Tensor {
    return { name: this.outputName, datatype: 'BYTES', shape: [1], data: [utf8(s)] };
  }
}

/** A failure of the connection to the engine (rather than an answer of the engine's). */
function lostConnection(e: unknown): boolean {
  return isNereidError(e) && e.code === 'UNAVAILABLE' && /unreachable|broke off|stopped streaming|did not answer/.test(e.message);
}

/**
 * The engine call a request asks for: a chat completion when it carries `messages` (OpenAI's chat messages, as
 * JSON text), else a completion of its text input. Sampling parameters pass through; `stop` may be one string
 * or a JSON array of strings.
 */
export function engineRequest(r: BackendRequest): { kind: 'completions' | 'chat'; body: EngineBody } {
  const p = r.parameters ?? {};
  const body: EngineBody = {};
  for (const k of SAMPLING) if (p[k] !== undefined) body[k] = typeof p[k] === 'bigint' ? Number(p[k]) : p[k];
  if (p['logit_bias'] !== undefined) body['logit_bias'] = logitBiasOf(p['logit_bias']);
  // One request answers one text: the engine's other choices would be dropped.
  if (p['n'] !== undefined && p['n'] !== 1 && p['n'] !== 1n) throw invalidArg("parameter 'n' is not supported: one request answers one text_output");
  const max = body['max_tokens'];
  if (max !== undefined && (typeof max !== 'number' || !Number.isInteger(max) || max < 1)) throw invalidArg(`max_tokens must be a positive integer, got ${JSON.stringify(max)}`);
  if (p['stop'] !== undefined) body['stop'] = stopOf(p['stop']);
  if (p['response_format'] !== undefined) body['response_format'] = responseFormatOf(p['response_format']);
  if (p['tools'] !== undefined) body['tools'] = jsonOf(p['tools'], 'tools', Array.isArray);
  const choice = p['tool_choice'];
  // tool_choice is a word (auto, none, required) or the JSON text of a named function.
  if (choice !== undefined) body['tool_choice'] = typeof choice === 'string' && choice.startsWith('{') ? jsonOf(choice, 'tool_choice', isObject) : choice;
  const top = topLogprobs(p);
  const messages = p['messages'];
  if (messages !== undefined) {
    body['messages'] = messagesOf(messages);
    if (top !== null) Object.assign(body, { logprobs: true, top_logprobs: top });
    return { kind: 'chat', body };
  }
  // Legacy completions spell it as one number: the alternatives per token.
  if (top !== null) body['logprobs'] = top;
  const input = r.inputs.find((t) => t.datatype === 'BYTES');
  if (!input || input.datatype !== 'BYTES' || input.data.length !== 1) throw invalidArg('the request needs one text_input string (or chat messages)');
  const prompt = decoder.decode(input.data[0]);
  if (prompt === '') throw invalidArg('the prompt (text_input) is empty');
  body['prompt'] = prompt;
  return { kind: 'completions', body };
}

/**
 * The parameters `logprobs` (true) and `top_logprobs` (alternatives per token): the alternatives asked for, null
 * for none. The engine's figures come back as the response parameter `logprobs` (logprobs.ts).
 */
function topLogprobs(p: Parameters): number | null {
  const asked = p['logprobs'];
  const top = p['top_logprobs'] ?? 0;
  const n = typeof top === 'bigint' ? Number(top) : top;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > MAX_TOP_LOGPROBS) throw invalidArg(`parameter 'top_logprobs' must be an integer from 0 to ${MAX_TOP_LOGPROBS}`);
  if (asked === undefined || asked === false || asked === 0 || asked === 0n) {
    if (n > 0) throw invalidArg("parameter 'top_logprobs' needs 'logprobs' true");
    return null;
  }
  if (asked !== true) throw invalidArg("parameter 'logprobs' must be a boolean");
  return n;
}

function stopOf(v: Parameters[string]): string | string[] {
  if (typeof v !== 'string') throw invalidArg('stop must be a string or a JSON array of strings');
  if (!v.startsWith('[')) return v;
  try {
    const a = JSON.parse(v) as unknown;
    if (Array.isArray(a) && a.every((x) => typeof x === 'string')) return a as string[];
  } catch {
    // fall through: a stop string that happens to start with '['
  }
  return v;
}

/** logit_bias travels as JSON text (parameters are scalars); the engine gets OpenAI's object and checks it. */
function logitBiasOf(v: Parameters[string]): unknown {
  if (typeof v === 'string') {
    try {
      const o = JSON.parse(v) as unknown;
      if (typeof o === 'object' && o !== null && !Array.isArray(o)) return o;
    } catch {
      // refused below
    }
  }
  throw invalidArg("parameter 'logit_bias' must be a JSON object of token ids to biases");
}

/** response_format travels as JSON text; the engine gets OpenAI's object as the client sent it, and checks it. */
function responseFormatOf(v: Parameters[string]): unknown {
  if (typeof v === 'string') {
    try {
      const o = JSON.parse(v) as unknown;
      if (typeof o === 'object' && o !== null && !Array.isArray(o)) return o;
    } catch {
      // refused below
    }
  }
  throw invalidArg("parameter 'response_format' must be the JSON text of an object");
}

/** A parameter that travels as JSON text, for the engine as the client sent it (the engine checks it). */
function jsonOf(v: Parameters[string], name: string, is: (o: unknown) => boolean): unknown {
  if (typeof v === 'string') {
    try {
      const o = JSON.parse(v) as unknown;
      if (is(o)) return o;
    } catch {
      // refused below
    }
  }
  throw invalidArg(`parameter '${name}' must be the JSON text of ${name === 'tools' ? 'a list of tools' : 'an object'}`);
}

function isObject(o: unknown): boolean {
  return typeof o === 'object' && o !== null && !Array.isArray(o);
}

function messagesOf(v: Parameters[string]): unknown[] {
  let m: unknown = v;
  if (typeof v === 'string') {
    try {
      m = JSON.parse(v);
    } catch {
      throw invalidArg('messages must be a JSON array of chat messages');
    }
  }
  if (!Array.isArray(m) || m.length === 0 || !m.every((x) => x && typeof x === 'object' && typeof (x as { role?: unknown }).role === 'string')) {
    throw invalidArg('messages must be a non-empty array of {role, content} objects');
  }
  return m;
}

function usageParameters(c: Completion): Parameters | undefined {
  const p: Parameters = {};
  if (c.finishReason) p['finish_reason'] = c.finishReason;
  if (c.toolCalls !== undefined) p['tool_calls'] = JSON.stringify(c.toolCalls);
  if (c.logprobs !== undefined) p['logprobs'] = JSON.stringify(c.logprobs);
  if (c.usage) {
    p['prompt_tokens'] = c.usage.promptTokens;
    p['completion_tokens'] = c.usage.completionTokens;
  }
  return Object.keys(p).length > 0 ? p : undefined;
}
