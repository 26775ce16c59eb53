import { NereidError, invalidArg, isNereidError } from '../../errors.js';
import { NO_RESPONSE, type Parameters } from '../../inference/index.js';
import type { Logger } from '../../observability/logger.js';
import { utf8 } from '../../tensor/bytes.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { BackendInstance, BackendRequest, EngineLoad, ExecutionTimes, InstanceMemory, InstanceSpec } from '../backend.js';
import type { Completion, Engine, EngineBody } from './engine.js';

/** Request parameters passed to the engine as they are (OpenAI's names); the engine honours or refuses each. */
const SAMPLING = ['max_tokens', 'temperature', 'top_p', 'top_k', 'seed', 'presence_penalty', 'frequency_penalty', 'repetition_penalty', 'min_p', 'best_of', 'ignore_eos'] as const;
/** Parameters whose answer has no place in text_output: refused, since the engine would compute them for nothing. */
const NO_PLACE = ['logprobs', 'top_logprobs'] as const;

const HEALTH_INTERVAL_MS = 5000;
const ELSEWHERE: InstanceMemory = Object.freeze({ bytes: 0, external: true });
const decoder = new TextDecoder();

/**
 * One gateway instance: each request becomes one call to the engine. A decoupled model streams (one response
 * per chunk of text, then the usage on a last response); an ordinary one answers the whole text. The engine's
 * health, checked in the background, is the instance's readiness.
 */
export class GatewayInstance implements BackendInstance {
  private healthy = true;
  private readonly timer: NodeJS.Timeout;
  private checking = false;

  private constructor(
    private readonly engine: Engine,
    private readonly release: () => Promise<void>,
    private readonly decoupled: boolean,
    private readonly outputName: string,
    private readonly logger: Logger,
  ) {
    this.timer = setInterval(() => void this.check(), HEALTH_INTERVAL_MS).unref();
  }

  static async create(spec: InstanceSpec, shared: { engine: Engine; release(): Promise<void> }): Promise<GatewayInstance> {
    const decoupled = spec.config.model_transaction_policy?.decoupled ?? false;
    const output = spec.config.output.find((o) => o.data_type === 'TYPE_STRING');
    if (!output) throw invalidArg(`model '${spec.name}' (backend openai) needs a TYPE_STRING output for the text (text_output)`);
    if (!spec.config.input.some((i) => i.data_type === 'TYPE_STRING')) throw invalidArg(`model '${spec.name}' (backend openai) needs a TYPE_STRING input for the prompt (text_input)`);
    const instance = new GatewayInstance(shared.engine, () => shared.release(), decoupled, output.name, spec.logger);
    await instance.check();
    if (!instance.healthy) spec.logger.warn(`model '${spec.name}': ${shared.engine.description} does not answer its health check; the model is not ready until it does`);
    return instance;
  }

  ready(): boolean {
    return this.healthy;
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

  async execute(requests: readonly BackendRequest[]): Promise<ExecutionTimes> {
    const start = process.hrtime.bigint();
    const calls = requests.map((r) => this.run(r));
    // A decoupled model answers through its senders for as long as the engine streams: the instance is free
    // at once. An ordinary one is busy until its answers are in.
    if (!this.decoupled) await Promise.all(calls);
    return { inputNs: 0, inferNs: Number(process.hrtime.bigint() - start), outputNs: 0 };
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
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
    try {
      const { kind, body } = engineRequest(r);
      const traceparent = trace === undefined ? undefined : trace.traceparent();
      if (!this.decoupled) {
        const c = await this.engine.complete(kind, body, r.signal, traceparent);
        r.sender.send([this.text(c.text)], true, usageParameters(c));
        return;
      }
      let last: Completion | undefined;
      await this.engine.stream(kind, body, (c) => {
        if (c.text !== '') r.sender.send([this.text(c.text)], false);
        if (c.usage || c.finishReason) last = { text: '', finishReason: c.finishReason ?? last?.finishReason, usage: c.usage ?? last?.usage };
      }, r.signal, traceparent);
      // The usage and finish reason on a last, empty response; without them, the FINAL flag alone.
      if (last) r.sender.send([this.text('')], true, usageParameters(last));
      else r.sender.send(NO_RESPONSE, true);
    } catch (e) {
      if (!isNereidError(e) || e.code !== 'CANCELLED') this.noteFailure(e);
      r.sender.fail(isNereidError(e) ? e : new NereidError('INTERNAL', (e as Error).message));
    } finally {
      if (trace !== undefined) trace.phase?.('engine', started, process.hrtime.bigint());
    }
  }

  /** A request that could not reach the engine makes the model unready until the next health check passes. */
  private noteFailure(e: unknown): void {
    if (isNereidError(e) && e.code === 'UNAVAILABLE' && /unreachable/.test(e.message)) this.healthy = false;
  }

  private text(s: string): Tensor {
    return { name: this.outputName, datatype: 'BYTES', shape: [1], data: [utf8(s)] };
  }
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
  for (const k of NO_PLACE) {
    const v = p[k];
    if (v !== undefined && v !== false && v !== 0 && v !== 0n) throw invalidArg(`parameter '${k}' is not supported: the model's text_output has no place for log probabilities`);
  }
  if (p['logit_bias'] !== undefined) body['logit_bias'] = logitBiasOf(p['logit_bias']);
  // One request answers one text: the engine's other choices would be dropped.
  if (p['n'] !== undefined && p['n'] !== 1 && p['n'] !== 1n) throw invalidArg("parameter 'n' is not supported: one request answers one text_output");
  const max = body['max_tokens'];
  if (max !== undefined && (typeof max !== 'number' || !Number.isInteger(max) || max < 1)) throw invalidArg(`max_tokens must be a positive integer, got ${JSON.stringify(max)}`);
  if (p['stop'] !== undefined) body['stop'] = stopOf(p['stop']);
  if (p['response_format'] !== undefined) body['response_format'] = responseFormatOf(p['response_format']);
  const messages = p['messages'];
  if (messages !== undefined) {
    body['messages'] = messagesOf(messages);
    return { kind: 'chat', body };
  }
  const input = r.inputs.find((t) => t.datatype === 'BYTES');
  if (!input || input.datatype !== 'BYTES' || input.data.length !== 1) throw invalidArg('the request needs one text_input string (or chat messages)');
  const prompt = decoder.decode(input.data[0]);
  if (prompt === '') throw invalidArg('the prompt (text_input) is empty');
  body['prompt'] = prompt;
  return { kind: 'completions', body };
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
  if (c.usage) {
    p['prompt_tokens'] = c.usage.promptTokens;
    p['completion_tokens'] = c.usage.completionTokens;
  }
  return Object.keys(p).length > 0 ? p : undefined;
}
