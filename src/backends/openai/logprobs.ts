/**
 * Log probabilities as an engine answers them, kept to OpenAI's chat fields for the response parameter
 * `logprobs`: a list of {token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}. A chat answers that
 * list as `logprobs.content`; a completion answers it so too (llama-server) or in the legacy shape {tokens,
 * token_logprobs, top_logprobs: [{token: logprob}]}, which is turned into it. Anything else an engine adds is
 * left out, and figures not in either shape are an engine error.
 */
export interface TokenLogprob {
  token: string;
  logprob: number;
  bytes: number[] | null;
  top_logprobs: { token: string; logprob: number; bytes: number[] | null }[];
}

/** Tokens and alternatives one answer may hold: a bound on what an engine can make the gateway pass on. */
const MAX_TOKENS = 1 << 20;
const MAX_ALTERNATIVES = 20;

/** The engine's figures for one choice, checked; undefined for none (an empty list, as a last chunk may carry, too). */
export function logprobsOf(v: unknown): TokenLogprob[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) throw new Error('logprobs is not an object');
  const o = v as Record<string, unknown>;
  const figures = o['content'] !== undefined && o['content'] !== null ? list(o['content']).map(entry) : o['tokens'] !== undefined ? legacy(o) : [];
  return figures.length === 0 ? undefined : figures;
}

function list(v: unknown, max = MAX_TOKENS): unknown[] {
  if (!Array.isArray(v) || v.length > max) throw new Error(`logprobs holds no list of at most ${max} entries`);
  return v;
}

function entry(v: unknown): TokenLogprob {
  const e = alternative(v);
  const top = (v as Record<string, unknown>)['top_logprobs'];
  return { ...e, top_logprobs: top === undefined || top === null ? [] : list(top, MAX_ALTERNATIVES).map(alternative) };
}

function alternative(v: unknown): { token: string; logprob: number; bytes: number[] | null } {
  if (typeof v !== 'object' || v === null) throw new Error('a logprobs entry is not an object');
  const { token, logprob, bytes } = v as Record<string, unknown>;
  if (typeof token !== 'string' || typeof logprob !== 'number') throw new Error('a logprobs entry has no token and logprob');
  const b = Array.isArray(bytes) && bytes.every((x) => Number.isInteger(x)) ? bytes as number[] : [...Buffer.from(token, 'utf8')];
  return { token, logprob, bytes: b };
}

/** Legacy completions' lists, entry by entry. */
function legacy(o: Record<string, unknown>): TokenLogprob[] {
  const tokens = list(o['tokens']);
  const values = list(o['token_logprobs']);
  const tops = o['top_logprobs'] === undefined || o['top_logprobs'] === null ? [] : list(o['top_logprobs']);
  if (values.length !== tokens.length) throw new Error('logprobs.tokens and logprobs.token_logprobs differ in length');
  return tokens.map((token, i) => {
    const top = tops[i];
    const alternatives = typeof top === 'object' && top !== null ? Object.entries(top).slice(0, MAX_ALTERNATIVES) : [];
    return {
      ...alternative({ token, logprob: values[i] }),
      top_logprobs: alternatives.map(([t, lp]) => alternative({ token: t, logprob: lp })),
    };
  });
}
