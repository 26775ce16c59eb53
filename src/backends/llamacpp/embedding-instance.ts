import type { LlamaEmbeddingContext, LlamaModel } from 'node-llama-cpp';
import { NereidError, invalidArg, toNereidError } from '../../errors.js';
import type { ModelConfig } from '../../config/types.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { BackendInstance, BackendRequest, ExecutionTimes, InstanceMemory } from '../backend.js';

export const EMBEDDING_OUTPUT = 'embedding';
const TEXT_INPUT = 'text_input';

/**
 * One instance of a GGUF model configured as an embedding model (parameter `embedding: "true"`): each request's
 * text_input becomes one vector in the output `embedding` (TYPE_FP32, dims [ -1 ]), pooled as the GGUF says
 * (a GGUF that names no pooling gives its last token's state, as llama.cpp does with `--pooling last`) and
 * scaled to unit length (L2), as llama.cpp's server and OpenAI's embeddings are. The response's parameter
 * prompt_tokens counts the tokens read, the beginning-of-sequence token included.
 */
export class EmbeddingInstance implements BackendInstance {
  private held: InstanceMemory;

  constructor(
    private readonly model: LlamaModel,
    private readonly context: LlamaEmbeddingContext,
    private readonly contextSize: number,
    private readonly unrouteLog: () => void,
  ) {
    this.held = Object.freeze({ bytes: model.size, external: false });
  }

  memory(): InstanceMemory {
    return this.held;
  }

  /** The context evaluates one text at a time, so the requests of a batch take their turns. */
  async execute(requests: readonly BackendRequest[]): Promise<ExecutionTimes> {
    const t0 = process.hrtime.bigint();
    for (const r of requests) {
      try {
        if (r.signal?.aborted) throw new NereidError('CANCELLED', 'request cancelled');
        const { vector, tokens } = await this.embed(textOf(r));
        r.sender.send([vectorTensor(vector)], true, { prompt_tokens: tokens });
      } catch (e) {
        r.sender.fail(toNereidError(e));
      }
    }
    return { inputNs: 0, inferNs: Number(process.hrtime.bigint() - t0), outputNs: 0 };
  }

  private async embed(text: string): Promise<{ vector: Float32Array; tokens: number }> {
    if (text === '') throw invalidArg(`input '${TEXT_INPUT}' is empty: a text is required`);
    const tokens = this.model.tokenize(text, false);
    // The count with the tokens the context puts around the text (beginning of sequence, and end where the vocabulary wants it).
    const count = this.context.calculateInputLength(tokens);
    if (count >= this.contextSize) {
      throw new NereidError('CONTEXT_LENGTH_EXCEEDED', `this model's context holds ${this.contextSize - 1} tokens for an input; the input has ${count}`);
    }
    const { vector } = await this.context.getEmbeddingFor(tokens);
    return { vector: unitLength(vector), tokens: count };
  }

  async close(): Promise<void> {
    this.held = Object.freeze({ bytes: 0, external: false });
    try {
      await this.context.dispose();
      await this.model.dispose();
    } finally {
      this.unrouteLog();
    }
  }
}

/** Checks at load that the config declares what an embedding model answers: output `embedding`, TYPE_FP32. */
export function checkEmbeddingConfig(config: ModelConfig, name: string): void {
  const out = config.output.find((o) => o.name === EMBEDDING_OUTPUT);
  if (out === undefined || out.data_type !== 'TYPE_FP32') {
    throw invalidArg(`model '${name}' is an embedding model (parameter 'embedding'): it needs an output '${EMBEDDING_OUTPUT}' of TYPE_FP32`);
  }
}

/** L2 normalisation (llama.cpp's embd_normalize 2, its server's default); a zero vector stays zero. */
function unitLength(v: readonly number[]): Float32Array {
  let sum = 0;
  for (const x of v) sum += x * x;
  const scale = sum > 0 ? 1 / Math.sqrt(sum) : 0;
  const out = new Float32Array(v.length);
  for (let i = 0; i < v.length; i++) out[i] = v[i]! * scale;
  return out;
}

function textOf(request: BackendRequest): string {
  const t = request.inputs.find((i) => i.name === TEXT_INPUT);
  if (!t || t.datatype !== 'BYTES' || t.data.length !== 1) throw invalidArg(`input '${TEXT_INPUT}' (TYPE_STRING) must hold one string`);
  return Buffer.from(t.data[0]!.buffer, t.data[0]!.byteOffset, t.data[0]!.byteLength).toString('utf8');
}

function vectorTensor(v: Float32Array): Tensor {
  return { name: EMBEDDING_OUTPUT, datatype: 'FP32', shape: [v.length], data: new Uint8Array(v.buffer, v.byteOffset, v.byteLength) };
}
