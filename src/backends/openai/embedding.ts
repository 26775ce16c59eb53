import { NereidError, invalidArg } from '../../errors.js';
import type { ModelConfig } from '../../config/types.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { BackendRequest } from '../backend.js';

const decoder = new TextDecoder();

/** One vector an engine answered at /v1/embeddings, with the tokens it read. */
export interface Embedding {
  readonly vector: Float32Array;
  readonly promptTokens: number | undefined;
}

/**
 * The first (only) vector of an engine's embeddings answer, OpenAI's shape: `data[0].embedding` a list of
 * numbers, `usage.prompt_tokens`. Anything else is the engine's fault (INTERNAL), named.
 */
export function embeddingOf(json: unknown, engine: string): Embedding {
  const j = json as { data?: unknown; usage?: { prompt_tokens?: unknown } } | null;
  const first = j && typeof j === 'object' && Array.isArray(j.data) ? (j.data[0] as { embedding?: unknown } | undefined) : undefined;
  const v = first?.embedding;
  if (!Array.isArray(v) || v.length === 0 || !v.every((x) => typeof x === 'number')) {
    throw new NereidError('INTERNAL', `${engine} answered JSON that is not an embedding: ${JSON.stringify(json).slice(0, 200)}`);
  }
  const tokens = j?.usage?.prompt_tokens;
  return { vector: Float32Array.from(v as number[]), promptTokens: typeof tokens === 'number' ? tokens : undefined };
}

export const EMBEDDING_OUTPUT = 'embedding';

/**
 * Whether the model is an embedding model (parameter `embedding` "true", as for llama.cpp models): it then
 * answers each text_input with the engine's vector in its output `embedding` (TYPE_FP32, dims [ -1 ]), one
 * response per request. Checked at load: the parameter's value and the config's tensors.
 */
export function isEmbeddingModel(config: ModelConfig, name: string): boolean {
  const v = config.parameters?.['embedding']?.string_value ?? 'false';
  if (v !== 'true' && v !== 'false') throw invalidArg(`parameter 'embedding' of model '${name}' must be "true" or "false", got '${v}'`);
  if (v === 'false') return false;
  const out = config.output.find((o) => o.name === EMBEDDING_OUTPUT);
  if (out === undefined || out.data_type !== 'TYPE_FP32') {
    throw invalidArg(`model '${name}' is an embedding model (parameter 'embedding'): it needs an output '${EMBEDDING_OUTPUT}' of TYPE_FP32`);
  }
  if (config.model_transaction_policy?.decoupled) throw invalidArg(`model '${name}' is an embedding model (parameter 'embedding'): one vector answers a request, so it cannot be decoupled`);
  return true;
}

/** The request's one text_input string. */
export function embeddingText(r: BackendRequest): string {
  const t = r.inputs.find((i) => i.datatype === 'BYTES');
  if (!t || t.datatype !== 'BYTES' || t.data.length !== 1) throw invalidArg('the request needs one text_input string');
  const text = decoder.decode(t.data[0]);
  if (text === '') throw invalidArg("input 'text_input' is empty: a text is required");
  return text;
}

export function vectorTensor(v: Float32Array): Tensor {
  return { name: EMBEDDING_OUTPUT, datatype: 'FP32', shape: [v.length], data: new Uint8Array(v.buffer, v.byteOffset, v.byteLength) };
}
