import { invalidArg } from '../../errors.js';
import type { ParameterValue, Parameters } from '../../inference/index.js';
import { readExtra, type Extra } from './extra-sampling.js';
import { readLogprobs } from './token-logprobs.js';

/**
 * A text request's generation settings, read from its parameters. The names are those of Triton's LLM
 * backends (and of OpenAI's API, which the OpenAI frontend passes through unchanged): max_tokens,
 * temperature, top_p, top_k, min_p, presence_penalty, frequency_penalty, repetition_penalty, logit_bias, seed,
 * stop, stream, ignore_eos, logprobs, top_logprobs. Defaults are OpenAI's: temperature 1, top_p 1, no top-k, min-p or penalties;
 * max_tokens defaults to 16, as in Triton's vLLM backend and OpenAI's completions. What node-llama-cpp cannot
 * do (best_of, several choices in one request) is refused, never ignored.
 */
export interface Sampling {
  readonly maxTokens: number;
  readonly temperature: number;
  readonly topP: number;
  /** 0 = the whole vocabulary. */
  readonly topK: number;
  readonly seed: number | undefined;
  readonly stop: readonly string[];
  /** true: one response per generated piece of text; false: one response with the whole text. */
  readonly stream: boolean;
  /** Keep generating past the end-of-sequence token (benchmarks that need a fixed token count). */
  readonly ignoreEos: boolean;
  /** min_p, the penalties and logit_bias, which few requests set; null when the request sets none. */
  readonly extra: Extra | null;
  /** Alternatives per token with `logprobs` (0: the chosen token's figure alone); null, the common case, for none. */
  readonly logprobs: number | null;
}

export const DEFAULT_MAX_TOKENS = 16;
/** OpenAI's limit on stop sequences. */
const MAX_STOP_SEQUENCES = 4;
export function readSampling(p: Parameters | undefined): Sampling {
  return {
    maxTokens: integer(p, 'max_tokens', 1, Number.MAX_SAFE_INTEGER) ?? DEFAULT_MAX_TOKENS,
    temperature: number(p, 'temperature', 0, 2) ?? 1,
    topP: number(p, 'top_p', 0, 1) ?? 1,
    topK: topK(p),
    seed: integer(p, 'seed', 0, 2 ** 32 - 1),
    stop: stop(p),
    stream: bool(p, 'stream') ?? false,
    ignoreEos: bool(p, 'ignore_eos') ?? false,
    extra: p === undefined ? null : readExtra(p),
    logprobs: readLogprobs(p),
  };
}

function value(p: Parameters | undefined, key: string): ParameterValue | undefined {
  return p === undefined ? undefined : p[key];
}

function number(p: Parameters | undefined, key: string, min: number, max: number): number | undefined {
  const v = value(p, key);
  if (v === undefined) return undefined;
  const n = typeof v === 'bigint' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n) || n < min || n > max) {
    throw invalidArg(`parameter '${key}' must be a number from ${min} to ${max}, got ${JSON.stringify(String(v))}`);
  }
  return n;
}

function integer(p: Parameters | undefined, key: string, min: number, max: number): number | undefined {
  const v = value(p, key);
  if (v === undefined) return undefined;
  const n = typeof v === 'bigint' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
    throw invalidArg(`parameter '${key}' must be an integer from ${min} to ${max}, got ${JSON.stringify(String(v))}`);
  }
  return n;
}

function bool(p: Parameters | undefined, key: string): boolean | undefined {
  const v = value(p, key);
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw invalidArg(`parameter '${key}' must be a boolean, got ${JSON.stringify(String(v))}`);
  return v;
}

/** top_k: 0 or -1 (vLLM's spelling of "off") mean the whole vocabulary. */
function topK(p: Parameters | undefined): number {
  const k = integer(p, 'top_k', -1, 2 ** 31 - 1) ?? 0;
  return k < 0 ? 0 : k;
}

/**
 * stop: one string, or a JSON array of strings (parameters are scalars, so a list travels as JSON text, which
 * is how the OpenAI frontend passes OpenAI's array form).
 */
function stop(p: Parameters | undefined): string[] {
  const v = value(p, 'stop');
  if (v === undefined) return [];
  if (typeof v !== 'string') throw invalidArg("parameter 'stop' must be a string or a JSON array of strings");
  let list: unknown = [v];
  if (v.startsWith('[')) {
    try {
      list = JSON.parse(v);
    } catch {
      list = [v];
    }
  }
  if (!Array.isArray(list) || !list.every((s): s is string => typeof s === 'string')) {
    throw invalidArg("parameter 'stop' must be a string or a JSON array of strings");
  }
  if (list.length > MAX_STOP_SEQUENCES) throw invalidArg(`parameter 'stop' may hold at most ${MAX_STOP_SEQUENCES} sequences, got ${list.length}`);
  return list.filter((s) => s !== '');
}
