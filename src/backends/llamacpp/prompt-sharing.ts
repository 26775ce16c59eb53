import type { LlamaContextSequence, LlamaModel, Token } from 'node-llama-cpp';
import type { Parameters } from '../../inference/index.js';

/**
 * The choices of one OpenAI request (`n`), which reach the model as n requests with the same prompt and the
 * parameter `nereid_choices` naming their group: the first to hold a sequence evaluates the prompt, the others
 * copy its KV cache into their own sequences (llama.cpp's sequence copy) instead of evaluating it again. Each
 * then evaluates the prompt's last token itself, as its draws need the logits. Requests without the parameter
 * never come here.
 *
 * A copy is always right, whatever the first choice's sequence holds by then: node-llama-cpp copies a
 * sequence's tokens with its cache, under the context's lock, and LlamaCompletion keeps only the part that
 * matches the prompt (evaluating the rest). The sequence copy is node-llama-cpp's internal
 * _copyStateFromOtherSequence (its own decision contexts share prefixes so); node-llama-cpp is pinned to an
 * exact version, and a test counts the tokens evaluated and fails if this stops working.
 */
export const CHOICES_PARAMETER = 'nereid_choices';

interface Share {
  readonly donor: LlamaContextSequence;
  /** Resolves true once the donor holds the prompt, false if it could not evaluate it. */
  readonly ready: Promise<boolean>;
}

type Copyable = { _copyStateFromOtherSequence(other: LlamaContextSequence, upToTokenIndex: number): Promise<boolean> };

export class PromptSharing {
  /** Groups whose first choice holds its sequence: removed when that choice ends, so an abandoned group holds nothing. */
  private readonly shares = new Map<string, Share>();

  constructor(private readonly model: LlamaModel) {}

  /** The request's group, if it is one of several choices. */
  static group(p: Parameters | undefined): string | undefined {
    const g = p?.[CHOICES_PARAMETER];
    return typeof g === 'string' && g !== '' ? g : undefined;
  }

  /**
   * Puts the prompt's tokens but the last into `sequence`: evaluated, for the first of the group, or copied from
   * the first. Never rejects: a failed share leaves the evaluation to the generation itself.
   */
  async prepare(group: string, tokens: readonly Token[], sequence: LlamaContextSequence): Promise<void> {
    const bos = this.model.tokens.shouldPrependBosToken ? this.model.tokens.bos : null;
    const prefix = bos === null ? tokens.slice(0, -1) : [bos, ...tokens.slice(0, -1)];
    if (prefix.length === 0) return;
    const share = this.shares.get(group);
    if (share === undefined || share.donor === sequence) {
      const ready = sequence.evaluateWithoutGeneratingNewTokens(prefix).then(() => true, () => false);
      this.shares.set(group, { donor: sequence, ready });
      await ready;
      return;
    }
    if (!(await share.ready)) return;
    await (sequence as unknown as Copyable)._copyStateFromOtherSequence(share.donor, prefix.length).catch(() => false);
  }

  /** The choice on `sequence` is over: if it was its group's first, later choices evaluate the prompt themselves. */
  end(group: string, sequence: LlamaContextSequence): void {
    if (this.shares.get(group)?.donor === sequence) this.shares.delete(group);
  }
}
