import type { LlamaContextSequence, LlamaModel, Token } from 'node-llama-cpp';
import { invalidArg } from '../../errors.js';
import type { Parameters } from '../../inference/index.js';

/**
 * Log probabilities of the generated tokens, for requests that ask for them with the parameters `logprobs`
 * (true) and `top_logprobs` (0 to 20 alternatives per token). They leave the backend as the response
 * parameter `logprobs`: the JSON text of OpenAI's chat list [{token, logprob, bytes, top_logprobs: [{token,
 * logprob, bytes}]}] for the tokens of the text that response carries.
 *
 * The figures are node-llama-cpp's: the softmax over the candidates as llama.cpp's sampler chain leaves them
 * (after logit_bias, top-k, top-p, min-p and temperature), the distribution the token was drawn from, as
 * llama-server's `post_sampling_probs`. Greedy decoding (temperature 0) keeps every candidate and its logit,
 * and temperature 1 without top-k/top-p/min-p changes none: there the figures are the model's own softmax,
 * which llama-server reports by default.
 */
export const LOGPROBS_PARAMETER = 'logprobs';
export const TOP_LOGPROBS_PARAMETER = 'top_logprobs';
/** OpenAI's bound on alternatives per token. */
const MAX_TOP_LOGPROBS = 20;
/** What OpenAI reports for a token the sampler ruled out (log 0). */
const NEVER = -9999;

/** The alternatives a request asks for per token (0: the chosen token's alone); null when it asks for none. */
export function readLogprobs(p: Parameters | undefined): number | null {
  const asked = p?.[LOGPROBS_PARAMETER];
  const top = p?.[TOP_LOGPROBS_PARAMETER];
  // 0 is how a legacy completion says none.
  if (asked === undefined || asked === false || asked === 0 || asked === 0n) {
    if (top !== undefined && top !== 0 && top !== 0n) throw invalidArg(`parameter '${TOP_LOGPROBS_PARAMETER}' needs '${LOGPROBS_PARAMETER}' true`);
    return null;
  }
  if (asked !== true) throw invalidArg(`parameter '${LOGPROBS_PARAMETER}' must be a boolean, got ${JSON.stringify(String(asked))}`);
  if (top === undefined) return 0;
  const n = typeof top === 'bigint' ? Number(top) : top;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > MAX_TOP_LOGPROBS) {
    throw invalidArg(`parameter '${TOP_LOGPROBS_PARAMETER}' must be an integer from 0 to ${MAX_TOP_LOGPROBS}, got ${JSON.stringify(String(top))}`);
  }
  return n;
}

interface Alternative {
  readonly token: string;
  readonly logprob: number;
  readonly bytes: number[];
}

interface Entry extends Alternative {
  readonly top_logprobs: Alternative[];
}

/** What the sampler yields for one token, with the metadata a recording asks for. */
interface Sampled {
  readonly token: Token;
  readonly confidence?: number;
  readonly probabilities?: Map<Token, number>;
}

/**
 * One request's tokens and their figures, in order, matched to the text as it goes out: a piece of text takes
 * the tokens whose text it completes (the text of the last ones may still be held back by a stop string).
 */
export class LogprobRecorder {
  private readonly entries: Entry[] = [];
  /** Where each entry's text ends, in characters of the generated text. */
  private readonly ends: number[] = [];
  private recorded = 0;
  private sent = 0;
  private emitted = 0;
  private previous: Token | undefined;

  constructor(private readonly model: LlamaModel, readonly top: number) {}

  record(s: Sampled): void {
    // Each text as it would continue the text so far (a leading space is the token's own).
    const before = this.previous;
    const text = this.text(s.token, before);
    this.previous = s.token;
    const top: Alternative[] = [];
    if (this.top > 0 && s.probabilities !== undefined) {
      // The map is sorted from the likeliest down.
      for (const [token, p] of s.probabilities) {
        if (top.length === this.top) break;
        top.push(alternative(this.text(token, before), p));
      }
    }
    this.entries.push({ ...alternative(text, s.confidence ?? 0), top_logprobs: top });
    this.recorded += text.length;
    this.ends.push(this.recorded);
  }

  /** The JSON text of the entries a piece of text completes; undefined when it completes none. */
  piece(text: string): string | undefined {
    this.emitted += text.length;
    let end = this.sent;
    while (end < this.entries.length && this.ends[end]! <= this.emitted) end++;
    return this.take(end);
  }

  /**
   * The generation is over, its last text (whole, when it was not streamed) going out: the entries whose text
   * begins within what went out (a stop string's are dropped).
   */
  rest(text: string): string | undefined {
    this.emitted += text.length;
    let end = this.sent;
    while (end < this.entries.length && (end === 0 ? 0 : this.ends[end - 1]!) < this.emitted) end++;
    return this.take(end);
  }

  private take(end: number): string | undefined {
    if (end === this.sent) return undefined;
    const out = this.entries.slice(this.sent, end);
    this.sent = end;
    return JSON.stringify(out);
  }

  private text(token: Token, previous: Token | undefined): string {
    return this.model.detokenize([token], false, previous === undefined ? undefined : [previous]);
  }
}

function alternative(token: string, p: number): Alternative {
  return { token, logprob: p > 0 ? Math.log(p) : NEVER, bytes: [...Buffer.from(token, 'utf8')] };
}

type EvaluateWithMetadata = (tokens: unknown, metadata: Record<string, unknown>, options?: unknown) => AsyncGenerator<Sampled, void, unknown>;

/**
 * A sequence's hook for recording: while `recorder` is set, the sequence's evaluations ask node-llama-cpp for
 * the chosen token's probability (and with alternatives, the whole distribution) and hand each sampled token to
 * it. LlamaCompletion offers no such option, so the sequence's evaluateWithMetadata, which its evaluate() calls,
 * is wrapped once at load; while no recorder is set (every request that does not ask) it calls straight
 * through with the metadata it was given. node-llama-cpp is pinned to an exact version, and a test fails if
 * this stops working.
 */
export class ProbabilityTap {
  recorder: LogprobRecorder | null = null;

  constructor(sequence: LlamaContextSequence) {
    const target = sequence as unknown as { evaluateWithMetadata: EvaluateWithMetadata };
    const evaluate = target.evaluateWithMetadata.bind(sequence);
    const tapped: EvaluateWithMetadata = (tokens, metadata, options) => {
      const recorder = this.recorder;
      if (recorder === null) return evaluate(tokens, metadata, options);
      return recording(evaluate(tokens, { ...metadata, confidence: true, probabilities: recorder.top > 0 }, options), recorder);
    };
    Object.defineProperty(sequence, 'evaluateWithMetadata', { value: tapped, configurable: true, writable: true });
  }
}

/** The evaluation's iterator, each sampled token recorded before it is yielded (values passed to next() go on). */
async function* recording(inner: AsyncGenerator<Sampled, void, unknown>, recorder: LogprobRecorder): AsyncGenerator<Sampled, void, unknown> {
  let input: unknown;
  try {
    for (;;) {
      const { value, done } = await inner.next(input);
      if (done) return;
      recorder.record(value);
      input = yield value;
    }
  } finally {
    await inner.return();
  }
}
