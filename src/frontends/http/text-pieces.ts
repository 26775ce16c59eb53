import type { InferenceResponse, Parameters } from '../../inference/index.js';
import type { BytesTensor } from '../../tensor/tensor.js';

/**
 * The responses of a streaming text model joined into the one response generate answers, as Triton's vLLM
 * backend answers a request that does not stream: each text output's pieces concatenated in order, the
 * parameters of later responses (finish_reason, token counts) over earlier ones. Only responses whose every
 * output is a one-element BYTES tensor join; anything else stays several responses, which generate refuses as
 * Triton does.
 */
export class TextPieces {
  /** Per output name, in the order outputs first appear: the shape it first came with and its pieces. */
  private readonly pieces = new Map<string, { shape: readonly number[]; list: Uint8Array[] }>();
  private parameters: Parameters | undefined;

  private constructor(private readonly first: InferenceResponse) {}

  /** The joiner started with `first`; null when `first` is not text. */
  static of(first: InferenceResponse): TextPieces | null {
    const t = new TextPieces(first);
    return t.add(first) ? t : null;
  }

  /** Adds a response's pieces; false (and nothing added) when the response is not text. */
  add(r: InferenceResponse): boolean {
    if (r.sharedMemoryOutputs !== undefined || !r.outputs.every(isTextPiece)) return false;
    for (const t of r.outputs as readonly BytesTensor[]) {
      const p = this.pieces.get(t.name);
      if (p === undefined) this.pieces.set(t.name, { shape: t.shape, list: [t.data[0]!] });
      else p.list.push(t.data[0]!);
    }
    if (r.parameters !== undefined) this.parameters = { ...this.parameters, ...r.parameters };
    return true;
  }

  /** One response: the first's identity, every output's text whole, the merged parameters. */
  whole(): InferenceResponse {
    const outputs: BytesTensor[] = [];
    for (const [name, p] of this.pieces) outputs.push({ name, datatype: 'BYTES', shape: p.shape, data: [Buffer.concat(p.list)] });
    const { model, version, id } = this.first;
    return { model, version, id, outputs, ...(this.parameters !== undefined ? { parameters: this.parameters } : {}) };
  }
}

function isTextPiece(t: InferenceResponse['outputs'][number]): boolean {
  return t.datatype === 'BYTES' && t.data.length === 1;
}
