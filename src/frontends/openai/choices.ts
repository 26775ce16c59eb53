import type { Parameters } from '../../inference/index.js';
import type { Usage } from './responses.js';

/**
 * OpenAI's `n`: several choices for one prompt, each an independent generation, made as one request to the
 * model per choice (for every kind of text model alike; a llama.cpp model evaluates the prompt once for all
 * of them, and an engine behind the gateway gets n requests of one choice each).
 */

/**
 * The parameters of choice i: with a seed, seed + i, so that each choice draws differently and reproducibly;
 * and `nereid_choices`, the request's group, with which a llama.cpp model evaluates the prompt once for all
 * the choices (other backends ignore it).
 */
export function choiceParameters(p: Parameters, i: number, group: string): Parameters {
  const seed = p['seed'];
  return typeof seed === 'number' ? { ...p, seed: (seed + i) % 2 ** 32, nereid_choices: group } : { ...p, nereid_choices: group };
}

/** The choices' counts as OpenAI reports them: the prompt once, every choice's completion; undefined if any lacks counts. */
export function totalUsage(counts: readonly (Usage | undefined)[]): Usage | undefined {
  let completion = 0;
  for (const c of counts) {
    if (c === undefined) return undefined;
    completion += c.completion_tokens;
  }
  const prompt = counts[0]!.prompt_tokens;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}
