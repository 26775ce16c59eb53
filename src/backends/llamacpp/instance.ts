import { LlamaCompletion, LlamaText, TokenBias, resolveChatWrapper, type ChatHistoryItem, type ChatWrapper, type LlamaCompletionGenerationOptions, type LlamaContext, type LlamaContextSequence, type LlamaGrammar, type LlamaModel, type Token } from 'node-llama-cpp';
import { NereidError, invalidArg, toNereidError } from '../../errors.js';
import type { Parameters, RequestTrace } from '../../inference/index.js';
import type { Logger } from '../../observability/logger.js';
import { utf8 } from '../../tensor/bytes.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { BackendInstance, BackendRequest, EngineLoad, ExecutionTimes, InstanceMemory } from '../backend.js';
import { MESSAGES_PARAMETER, applyChatTemplate, chatHistory, parseMessages } from './chat.js';
import { TOOLS_PARAMETER, readTools, type ToolRequest } from './tools.js';
import { chatWithTools, type ChatOptions, type ToolCall } from './tool-chat.js';
import { readSampling, type Sampling } from './sampling.js';
import { extraOptions } from './extra-sampling.js';
import { SequencePool } from './sequence-pool.js';
import { StopMatcher } from './stop-matcher.js';
import { DeferredText } from './deferred-text.js';
import { GrammarCache } from './grammar-cache.js';
import { RESPONSE_FORMAT_PARAMETER } from './response-format.js';
import { LOGPROBS_PARAMETER, LogprobRecorder } from './token-logprobs.js';
import { PromptSharing } from './prompt-sharing.js';

export const TEXT_INPUT = 'text_input';
export const TEXT_OUTPUT = 'text_output';

const NOTHING_HELD: InstanceMemory = Object.freeze({ bytes: 0, external: false });

/** A request checked and tokenized, ready to take a sequence. */
interface Prepared {
  readonly request: BackendRequest;
  readonly tokens: Token[];
  readonly promptTokens: number;
  /** Where the chat template ends the assistant's turn; the request's own stop strings are in sampling. */
  readonly templateStops: readonly LlamaText[];
  readonly sampling: Sampling;
  /** The grammar of the request's response_format; null for plain text (most requests). */
  readonly grammar: Promise<LlamaGrammar> | null;
  /** A chat with functions the model may call (tools.ts), and its conversation; null for most requests. */
  readonly tools: { readonly request: ToolRequest; readonly history: ChatHistoryItem[] } | null;
}

/** How a generation ended, and the calls it made (with tools). */
interface Outcome {
  readonly stopReason: string;
  readonly calls: readonly ToolCall[];
}

/**
 * One instance of a GGUF model: the model's weights and one context whose sequences serve that many requests
 * at once. For a decoupled model execute() returns as soon as each request of the batch holds a sequence,
 * so the instance takes the next request while earlier ones are still generating; the scheduler's queue
 * holds whatever waits for a free sequence. A model that is not decoupled returns once its batch is answered.
 *
 * Responses: with `stream` true (decoupled models only), one per piece of text as it is generated, then a
 * last one with an empty text_output; otherwise one with the whole text, which is what a model that is not
 * decoupled always answers (KServe /infer serves it). The last response carries the parameters
 * finish_reason ("stop" or "length"), prompt_tokens and completion_tokens, and stop_sequence when one of
 * the request's stop strings ended the text. A chat with tools that calls functions ends with finish_reason
 * "tool_calls" and the calls as the parameter tool_calls, the JSON text of OpenAI's list ({id, type, function:
 * {name, arguments}}); streaming, each piece of a call comes as it is generated, on a response of its own with
 * an empty text_output, as the JSON text of a list of OpenAI's chunk deltas ({index, id, type, function}).
 * With `logprobs`, each response with text carries the parameter logprobs: the figures of the tokens that text
 * completes (token-logprobs.ts).
 */
export class LlamaInstance implements BackendInstance {
  private readonly pool: SequencePool;
  /**
   * A model that is not decoupled answers at the end of its execution, so the scheduler hands it as many
   * requests at once as it has sequences, which then generate together; a decoupled model's execution ends as
   * soon as its request holds a sequence.
   */
  readonly pipelineDepth: number;
  private chatWrapperValue: ChatWrapper | undefined;
  private readonly eosBias: TokenBias | undefined;
  private readonly grammars: GrammarCache;
  /** The choices of one request (n) share its prompt's evaluation. */
  private readonly sharing: PromptSharing;

  constructor(
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
    private readonly name: string,
    private readonly logger: Logger,
    /** Without model_transaction_policy { decoupled: true } a request gets one response: `stream` is ignored. */
    private readonly decoupled: boolean,
    /** Ends the routing of llama.cpp's log to this instance's logger (see routeLlamaLog). */
    private readonly unrouteLog: () => void = () => undefined,
  ) {
    this.pool = new SequencePool(context);
    this.pipelineDepth = decoupled ? 1 : context.totalSequences;
    this.eosBias = endOfSequenceBias(model);
    this.grammars = new GrammarCache(model.llama);
    this.sharing = new PromptSharing(model);
    // The weights' tensors (llama.cpp's model size: the GGUF's tensor data, less its metadata and vocabulary)
    // and the context's buffers as node-llama-cpp reserves them (KV cache, output and compute buffers: the
    // figure llama.cpp's own allocation matches), both allocated in full at load.
    this.held = Object.freeze({ bytes: model.size + context.memoryUsage.ram, external: false });
  }

  /** What the model and its context hold, read once at load (see the constructor); 0 once closed. */
  private held: InstanceMemory;

  memory(): InstanceMemory {
    return this.held;
  }

  /**
   * The chat format of the GGUF's template, found on the first chat request: matching a template against
   * the library's known formats renders it many times, which a model that only completes text never needs.
   */
  private get chatWrapper(): ChatWrapper {
    return (this.chatWrapperValue ??= resolveChatWrapper(this.model));
  }

  /** Tokens of the chat wrapper's function call prefix, which a forced call starts with. */
  private get callPrefixTokens(): number {
    return (this.callPrefixTokenCount ??= LlamaText(this.chatWrapper.settings.functions.call.prefix).tokenize(this.model.tokenizer).length);
  }

  private callPrefixTokenCount: number | undefined;

  /** Sequences in use: requests generating now. */
  get busySequences(): number {
    return this.pool.busy;
  }

  /**
   * Its context as an engine: requests waiting for a sequence, sequences generating, and the KV cache's use
   * (tokens held by all sequences over the context's cells, each sequence having contextSize of its own).
   */
  engineLoad(): Promise<EngineLoad> {
    const capacity = this.context.contextSize * this.context.totalSequences;
    return Promise.resolve({
      engine: this,
      waiting: this.pool.queued,
      running: this.pool.busy,
      kvCache: { usage: capacity > 0 ? Math.min(1, this.pool.cachedTokens / capacity) : 0, capacity },
    });
  }

  async execute(requests: readonly BackendRequest[]): Promise<ExecutionTimes> {
    const t0 = process.hrtime.bigint();
    const generations: Promise<void>[] = [];
    for (const r of requests) {
      let prepared: Prepared;
      try {
        prepared = this.prepare(r);
      } catch (e) {
        r.sender.fail(toNereidError(e));
        continue;
      }
      let sequence: LlamaContextSequence;
      try {
        sequence = await this.pool.acquire();
      } catch (e) {
        r.sender.fail(toNereidError(e));
        continue;
      }
      if (r.signal?.aborted) {
        // The client left while the request waited for a sequence.
        void this.pool.release(sequence);
        r.sender.fail(new NereidError('CANCELLED', 'request cancelled'));
        continue;
      }
      generations.push(this.generate(prepared, sequence));
    }
    const inputNs = Number(process.hrtime.bigint() - t0);
    // A model that is not decoupled answers before its execution ends, as the scheduler expects.
    if (this.decoupled) return { inputNs, inferNs: 0, outputNs: 0 };
    await Promise.all(generations);
    return { inputNs, inferNs: Number(process.hrtime.bigint() - t0) - inputNs, outputNs: 0 };
  }

  /** Reads the prompt (text_input, or the chat template over `messages`) and the sampling settings. */
  private prepare(request: BackendRequest): Prepared {
    const sampling = readSampling(request.parameters);
    const messages = request.parameters?.[MESSAGES_PARAMETER];
    let tokens: Token[];
    let templateStops: readonly LlamaText[] = [];
    let tools: Prepared['tools'] = null;
    if (messages !== undefined) {
      const history = chatHistory(parseMessages(messages));
      const toolRequest = readTools(request.parameters);
      const chat = applyChatTemplate(this.model, this.chatWrapper, history, toolRequest?.functions);
      tokens = chat.tokens;
      templateStops = chat.stopTriggers;
      if (toolRequest !== null) tools = { request: toolRequest, history };
    } else {
      if (request.parameters?.[TOOLS_PARAMETER] !== undefined) throw invalidArg(`parameter '${TOOLS_PARAMETER}' needs a chat: the parameter '${MESSAGES_PARAMETER}'`);
      const text = textInput(request);
      if (text === '') throw invalidArg(`input '${TEXT_INPUT}' is empty: a prompt is required`);
      tokens = this.model.tokenize(text, false, 'trimLeadingSpace');
    }
    // LlamaCompletion puts the beginning-of-sequence token in front itself.
    const bos = this.model.tokens.bos;
    if (bos !== null && tokens[0] === bos) tokens = tokens.slice(1);
    const promptTokens = tokens.length + (this.model.tokens.shouldPrependBosToken ? 1 : 0);
    const room = this.context.contextSize;
    // A forced call's prefix is put in the context before the model writes.
    const injected = tools?.request.forced ? this.callPrefixTokens : 0;
    if (promptTokens + injected + sampling.maxTokens > room) {
      throw new NereidError('CONTEXT_LENGTH_EXCEEDED', `this model's context holds ${room} tokens; the prompt has ${promptTokens} and max_tokens asks for ${sampling.maxTokens} more`);
    }
    const grammar = this.grammar(request.parameters, sampling);
    if (grammar !== null && tools !== null) throw invalidArg(`parameter '${RESPONSE_FORMAT_PARAMETER}' cannot be combined with '${TOOLS_PARAMETER}' on this model`);
    if (sampling.logprobs !== null && tools !== null) throw invalidArg(`parameter '${LOGPROBS_PARAMETER}' cannot be combined with '${TOOLS_PARAMETER}' on this model`);
    return { request, tokens, promptTokens, templateStops, sampling, grammar, tools };
  }

  private grammar(p: Parameters | undefined, sampling: Sampling): Promise<LlamaGrammar> | null {
    const format = p?.[RESPONSE_FORMAT_PARAMETER];
    if (format === undefined) return null;
    const grammar = this.grammars.grammarFor(format);
    // Once the grammar is complete only the end of sequence may follow, which ignore_eos forbids.
    if (grammar !== null && sampling.ignoreEos) throw invalidArg(`parameter 'ignore_eos' cannot be combined with '${RESPONSE_FORMAT_PARAMETER}'`);
    return grammar;
  }

  private async generate(p: Prepared, sequence: LlamaContextSequence): Promise<void> {
    const { request, sampling } = p;
    const stream = sampling.stream && this.decoupled;
    const sender = request.sender;
    const stops = new StopMatcher(sampling.stop);
    const stopper = new AbortController();
    let text = '';
    // Only a request that asks for log probabilities records them (token-logprobs.ts).
    const recorder = sampling.logprobs === null ? null : (this.pool.tap(sequence).recorder = new LogprobRecorder(this.model, sampling.logprobs));
    const streamed = new DeferredText(recorder === null
      ? (piece) => sender.send([textTensor(piece)], false)
      : (piece) => sender.send([textTensor(piece)], false, logprobsOf(recorder.piece(piece))));
    const emit = (piece: string): void => {
      if (stream) streamed.push(piece);
      else text += piece;
    };
    const onPiece = (piece: string): void => {
      emit(stops.push(piece));
      if (stops.stopped) stopper.abort();
    };
    // A traced request notes when its first text came (the prompt read, generation begun); others pay nothing.
    const trace = request.trace;
    const startNs = trace === undefined ? 0n : process.hrtime.bigint();
    let firstNs = 0n;
    const onText = trace === undefined ? onPiece : (piece: string): void => {
      if (firstNs === 0n) firstNs = process.hrtime.bigint();
      onPiece(piece);
    };
    const sendCalls = stream && p.tools !== null ? (delta: ToolCall): void => {
      streamed.flush();
      sender.send([textTensor('')], false, { tool_calls: JSON.stringify([delta]) });
    } : undefined;
    // Only one of several choices of a request has a group (prompt-sharing.ts); a chat with tools keeps its own state.
    const group = p.tools === null ? PromptSharing.group(request.parameters) : undefined;
    try {
      if (group !== undefined) await this.sharing.prepare(group, p.tokens, sequence);
      const signal = request.signal ? AbortSignal.any([request.signal, stopper.signal]) : stopper.signal;
      const outcome = await this.run(p, sequence, signal, onText, sendCalls);
      if (request.signal?.aborted) {
        streamed.discard();
        sender.fail(new NereidError('CANCELLED', 'request cancelled'));
        return;
      }
      emit(stops.flush());
      streamed.flush();
      const ending = this.ending(p, sequence, outcome, stops, stream);
      const figures = recorder?.rest(text);
      if (figures !== undefined) ending[LOGPROBS_PARAMETER] = figures;
      sender.send([textTensor(text)], true, ending);
    } catch (e) {
      streamed.discard();
      this.logger.verbose(1, `llama.cpp model '${this.name}' failed a generation: ${(e as Error).message}`);
      sender.fail(request.signal?.aborted ? new NereidError('CANCELLED', 'request cancelled') : toNereidError(e));
    } finally {
      if (trace !== undefined) tracePhases(trace, startNs, firstNs, process.hrtime.bigint());
      if (group !== undefined) this.sharing.end(group, sequence);
      await this.pool.release(sequence);
    }
  }

  /** The generation itself: a completion of the prompt's tokens, or with tools a chat that may call them. */
  private async run(p: Prepared, sequence: LlamaContextSequence, signal: AbortSignal, onTextChunk: (text: string) => void, onDelta: ((delta: ToolCall) => void) | undefined): Promise<Outcome> {
    const options = this.samplingOptions(p.sampling);
    if (p.tools !== null) {
      return chatWithTools(sequence, this.chatWrapper, p.tools.history, p.tools.request, { ...options, signal, stopOnAbortSignal: true, onTextChunk }, onDelta);
    }
    const completion = new LlamaCompletion({ contextSequence: sequence });
    try {
      const grammar = p.grammar === null ? undefined : await p.grammar;
      const result = await completion.generateCompletionWithMeta(p.tokens, {
        // Never drop the start of the prompt to make room: prepare() has checked that everything fits.
        ...options, disableContextShift: true, grammar, customStopTriggers: p.templateStops, signal, stopOnAbortSignal: true, onTextChunk,
      });
      return { stopReason: result.metadata.stopReason, calls: [] };
    } finally {
      completion.dispose({ disposeSequence: false });
    }
  }

  /** The last response's parameters: why the generation ended, the token counts, the stop string, the calls. */
  private ending(p: Prepared, sequence: LlamaContextSequence, outcome: Outcome, stops: StopMatcher, stream: boolean): Parameters {
    const length = !stops.stopped && outcome.stopReason === 'maxTokens';
    const parameters: Parameters = {
      finish_reason: outcome.calls.length > 0 ? 'tool_calls' : length ? 'length' : 'stop',
      prompt_tokens: p.promptTokens,
      completion_tokens: length ? p.sampling.maxTokens : generatedTokens(sequence, p.promptTokens),
    };
    if (stops.matched !== undefined) parameters['stop_sequence'] = stops.matched;
    // Streamed calls went out piece by piece.
    if (outcome.calls.length > 0 && !stream) parameters['tool_calls'] = JSON.stringify(outcome.calls);
    return parameters;
  }

  /** The request's sampling as node-llama-cpp options (LlamaCompletion's and LlamaChat's alike); no repeat penalty, as OpenAI's defaults have none. */
  private samplingOptions(sampling: Sampling): LlamaCompletionGenerationOptions & ChatOptions {
    return {
      maxTokens: sampling.maxTokens,
      temperature: sampling.temperature,
      topP: sampling.topP,
      topK: sampling.topK,
      // Without a seed, a fresh random one: node-llama-cpp's default is the current second, so requests sent
      // in the same second would all draw the same text.
      seed: sampling.seed ?? randomSeed(),
      ...(sampling.ignoreEos && this.eosBias ? { tokenBias: this.eosBias } : {}),
      repeatPenalty: false,
      ...extraOptions(sampling.extra, sampling.ignoreEos, this.model),
    };
  }

  async close(): Promise<void> {
    this.pool.close();
    this.held = NOTHING_HELD;
    try {
      await this.context.dispose();
      await this.model.dispose();
    } finally {
      this.unrouteLog();
    }
  }
}

/** A seed from the whole range llama.cpp takes (32 bits); not for secrets, only for independent draws. */
function randomSeed(): number {
  return Math.floor(Math.random() * 2 ** 32);
}

function textInput(request: BackendRequest): string {
  const t = request.inputs.find((i) => i.name === TEXT_INPUT);
  if (!t || t.datatype !== 'BYTES') throw invalidArg(`input '${TEXT_INPUT}' (TYPE_STRING) is required`);
  if (t.data.length !== 1) throw invalidArg(`input '${TEXT_INPUT}' must hold one string, got ${t.data.length}`);
  return Buffer.from(t.data[0]!.buffer, t.data[0]!.byteOffset, t.data[0]!.byteLength).toString('utf8');
}

function logprobsOf(figures: string | undefined): Parameters | undefined {
  return figures === undefined ? undefined : { [LOGPROBS_PARAMETER]: figures };
}

function textTensor(text: string): Tensor {
  return { name: TEXT_OUTPUT, datatype: 'BYTES', shape: [1], data: [utf8(text)] };
}

/**
 * A bias that keeps the end-of-sequence token out, for ignore_eos. TokenBias.set() skips end-of-generation
 * tokens on purpose, so the entry goes into its map directly; node-llama-cpp is pinned to an exact version,
 * and a test fails if this stops working.
 */
function endOfSequenceBias(model: LlamaModel): TokenBias | undefined {
  const eos = model.tokens.eos;
  if (eos === null) return undefined;
  const bias = new TokenBias(model.tokenizer);
  (bias as unknown as { _biases: Map<Token, number> })._biases.set(eos, -Infinity);
  return bias;
}

/**
 * Tokens generated into a sequence that started empty: what it holds past the prompt, plus the last token
 * drawn, which ended the generation before it was evaluated. (onToken is no count: a token held back for an
 * unfinished UTF-8 character can be reported again with the next one.)
 */
function generatedTokens(sequence: LlamaContextSequence, promptTokens: number): number {
  return Math.max(0, sequence.contextTokens.length - promptTokens + 1);
}

/** Nereid's stage spans (opentelemetry,nereid_stage_spans): reading the prompt, then generating the text. */
function tracePhases(trace: RequestTrace, startNs: bigint, firstNs: bigint, endNs: bigint): void {
  if (trace.phase === undefined) return;
  trace.phase('prompt', startNs, firstNs === 0n ? endNs : firstNs);
  if (firstNs !== 0n) trace.phase('generation', firstNs, endNs);
}
