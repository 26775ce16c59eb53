/**
 * Whether an engine's 400 says the prompt does not fit its context, as each engine words it: llama-server's
 * error type exceed_context_size_error, OpenAI's (and some proxies') code context_length_exceeded, vLLM's
 * "maximum context length", SGLang's "longer than the model's context length", TGI's "tokens + `max_new_tokens`
 * must be <=". The frontend answers it as OpenAI does, apart from other bad requests.
 */
export function isContextError(body: unknown, message: string): boolean {
  const e = (body as { error?: unknown } | null)?.error;
  if (e !== null && typeof e === 'object') {
    const { type, code } = e as { type?: unknown; code?: unknown };
    if (type === 'exceed_context_size_error' || code === 'context_length_exceeded') return true;
  }
  return CONTEXT_WORDS.test(message);
}

const CONTEXT_WORDS = /maximum context length|longer than the model's context length|exceeds the available context size|max_new_tokens` must be <=/i;
