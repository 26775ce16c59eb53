import type { LlamaContextSequence } from 'node-llama-cpp';

type EvaluateWithMetadata = (tokens: unknown, metadata: unknown, options?: { topK?: number | null }) => unknown;

/**
 * Makes top_k 0 (the whole vocabulary, OpenAI's default) sample without sorting the vocabulary.
 *
 * node-llama-cpp turns top_k 0 into llama.cpp's top-k sampler with k = the vocabulary's size, which sorts every
 * candidate on every token: with a 32k vocabulary, most of a token's CPU. llama.cpp's chain without a top-k
 * sampler draws from the same distribution unsorted, as llama-server does for top_k 0, and node-llama-cpp builds
 * that chain when a sequence is asked with top_k null; LlamaCompletion drops null options before they reach the
 * sequence, so the sequence itself reads 0 as null. Done once per sequence at load; a test fails if it stops
 * working (node-llama-cpp is pinned to an exact version).
 */
export function sampleWholeVocabularyUnsorted(sequence: LlamaContextSequence): void {
  const target = sequence as unknown as { evaluateWithMetadata: EvaluateWithMetadata };
  const evaluate = target.evaluateWithMetadata.bind(sequence);
  const patched: EvaluateWithMetadata = (tokens, metadata, options) =>
    evaluate(tokens, metadata, options?.topK === 0 ? { ...options, topK: null } : options);
  Object.defineProperty(sequence, 'evaluateWithMetadata', { value: patched, configurable: true, writable: true });
}
