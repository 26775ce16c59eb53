import { TokenBias, type LlamaCompletionGenerationOptions, type LlamaModel, type Token } from 'node-llama-cpp';
import { invalidArg } from '../../errors.js';
import type { ParameterValue, Parameters } from '../../inference/index.js';

/**
 * The sampling fields few requests set: min_p, OpenAI's presence and frequency penalties, vLLM's repetition
 * penalty and OpenAI's logit_bias, all honoured through node-llama-cpp's options; and the fields it cannot
 * honour (best_of, several choices in one request), refused rather than ignored.
 */
export interface Extra {
  /** 0 = off. */
  readonly minP: number;
  /** Multiplicative (vLLM's and llama.cpp's repetition penalty); 1 = off. */
  readonly repetition: number;
  readonly presence: number;
  readonly frequency: number;
  /** Token id → bias added to its logit; empty = none. */
  readonly logitBias: ReadonlyMap<number, number>;
}

/** Entries a logit_bias may hold: each becomes work on every token. */
const MAX_LOGIT_BIAS_ENTRIES = 1024;
/**
 * Tokens the penalties look back over, as llama-server's repeat_last_n defaults (64): OpenAI's penalties count
 * every token generated, llama.cpp's only the last ones.
 */
const PENALTY_LAST_TOKENS = 64;
/** Parameters this backend cannot honour, with the value that asks for nothing (and is accepted). */
const REFUSED: readonly [string, (v: ParameterValue) => boolean][] = [
  ['best_of', (v) => v === 1 || v === 1n],
  ['n', (v) => v === 1 || v === 1n],
];

/**
 * The node-llama-cpp options of a request's min_p, penalties and logit_bias (after the options every request
 * has, so that its bias replaces the plain ignore_eos one); empty for a request that sets none of them.
 */
export function extraOptions(x: Extra | null, ignoreEos: boolean, model: LlamaModel): LlamaCompletionGenerationOptions {
  if (x === null) return NO_OPTIONS;
  const penalised = x.repetition !== 1 || x.presence !== 0 || x.frequency !== 0;
  return {
    ...(x.minP > 0 ? { minP: x.minP } : {}),
    ...(penalised ? {
      repeatPenalty: { penalty: x.repetition, presencePenalty: x.presence, frequencyPenalty: x.frequency, lastTokens: PENALTY_LAST_TOKENS, penalizeNewLine: true },
    } : {}),
    ...(x.logitBias.size > 0 ? { tokenBias: tokenBias(x.logitBias, model, ignoreEos) } : {}),
  };
}

const NO_OPTIONS: LlamaCompletionGenerationOptions = Object.freeze({});

/**
 * OpenAI's logit_bias as node-llama-cpp's bias, added to the logits as OpenAI adds it; with ignore_eos the
 * end-of-sequence token stays out. TokenBias.set() skips end-of-generation tokens and tokenizes text, so the
 * entries go into its map directly (as the ignore_eos bias does; node-llama-cpp is pinned to an exact version).
 * llama.cpp skips ids outside the vocabulary.
 */
function tokenBias(bias: ReadonlyMap<number, number>, model: LlamaModel, ignoreEos: boolean): TokenBias {
  const t = new TokenBias(model.tokenizer);
  const map = (t as unknown as { _biases: Map<Token, number> })._biases;
  for (const [token, logit] of bias) map.set(token as Token, logit);
  const eos = model.tokens.eos;
  if (ignoreEos && eos !== null) map.set(eos, -Infinity);
  return t;
}

/** The rarely set fields; null when the request sets none, so that the common request builds nothing more. */
export function readExtra(p: Parameters): Extra | null {
  for (const [key, asksNothing] of REFUSED) {
    const v = p[key];
    if (v !== undefined && !asksNothing(v)) throw invalidArg(`parameter '${key}' is not supported by llama.cpp models in process, got ${JSON.stringify(String(v))}`);
  }
  const minP = number(p, 'min_p', 0, 1);
  const repetition = number(p, 'repetition_penalty', 0, 10);
  if (repetition === 0) throw invalidArg("parameter 'repetition_penalty' must be greater than 0");
  const presence = number(p, 'presence_penalty', -2, 2);
  const frequency = number(p, 'frequency_penalty', -2, 2);
  const logitBias = logitBiasOf(p);
  if (minP === undefined && repetition === undefined && presence === undefined && frequency === undefined && logitBias === undefined) return null;
  return { minP: minP ?? 0, repetition: repetition ?? 1, presence: presence ?? 0, frequency: frequency ?? 0, logitBias: logitBias ?? new Map() };
}

/**
 * logit_bias: OpenAI's object of token ids to biases from -100 to 100, as JSON text (parameters are scalars;
 * the OpenAI frontend passes the object so).
 */
function logitBiasOf(p: Parameters): Map<number, number> | undefined {
  const v = p['logit_bias'];
  if (v === undefined) return undefined;
  const wrong = (why: string): Error => invalidArg(`parameter 'logit_bias' must be a JSON object of token ids to numbers from -100 to 100: ${why}`);
  if (typeof v !== 'string') throw wrong('got no JSON text');
  let o: unknown;
  try {
    o = JSON.parse(v);
  } catch {
    throw wrong('the text is not JSON');
  }
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw wrong('not an object');
  const entries = Object.entries(o);
  if (entries.length > MAX_LOGIT_BIAS_ENTRIES) throw wrong(`at most ${MAX_LOGIT_BIAS_ENTRIES} entries, got ${entries.length}`);
  const bias = new Map<number, number>();
  for (const [k, b] of entries) {
    const token = Number(k);
    if (!/^\d{1,10}$/.test(k) || token > 2 ** 31 - 1) throw wrong(`${JSON.stringify(k)} is not a token id`);
    if (typeof b !== 'number' || !Number.isFinite(b) || b < -100 || b > 100) throw wrong(`the bias of token ${k} is ${JSON.stringify(b)}`);
    bias.set(token, b);
  }
  return bias;
}


function number(p: Parameters, key: string, min: number, max: number): number | undefined {
  const v = p[key];
  if (v === undefined) return undefined;
  const n = typeof v === 'bigint' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n) || n < min || n > max) {
    throw invalidArg(`parameter '${key}' must be a number from ${min} to ${max}, got ${JSON.stringify(String(v))}`);
  }
  return n;
}
