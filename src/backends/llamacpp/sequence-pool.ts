import type { LlamaContext, LlamaContextSequence } from 'node-llama-cpp';
import { unavailable } from '../../errors.js';
import { decodeTogether } from './batch-gate.js';
import { sampleWholeVocabularyUnsorted } from './whole-vocabulary.js';
import { ProbabilityTap } from './token-logprobs.js';

/**
 * The context's sequences, one per request being generated. A context holds a fixed number of them (the
 * config's `parallel`), all evaluated together in shared batches; a request takes one for its whole
 * generation and gives it back, and the sequence's KV cache is cleared before the next request gets it.
 * Requests that find none free wait in arrival order.
 *
 * The sequences are made once and kept: a disposed sequence returns its slot to the context only later,
 * asynchronously, so disposing and asking again could find the context still full.
 */
export class SequencePool {
  private readonly all: LlamaContextSequence[] = [];
  private readonly free: LlamaContextSequence[] = [];
  /** Each sequence's hook for a request that asks for log probabilities (token-logprobs.ts). */
  private readonly taps = new Map<LlamaContextSequence, ProbabilityTap>();
  private readonly waiting: { resolve(s: LlamaContextSequence): void; reject(e: Error): void }[] = [];
  private readonly size: number;
  private closed = false;

  constructor(context: LlamaContext) {
    while (context.sequencesLeft > 0) this.all.push(context.getSequence());
    for (const s of this.all) {
      sampleWholeVocabularyUnsorted(s);
      this.taps.set(s, new ProbabilityTap(s));
    }
    this.free.push(...this.all);
    this.size = this.all.length;
    decodeTogether(this.all, () => this.busy);
  }

  /** Sequences taken and not yet given back (cleared): for tests and statistics. */
  get busy(): number {
    return this.size - this.free.length;
  }

  /** Requests waiting for a sequence. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Tokens held in the KV cache by all sequences (a released sequence holds none once cleared). */
  get cachedTokens(): number {
    let n = 0;
    for (const s of this.all) n += s.nextTokenIndex;
    return n;
  }

  /** The sequence's probability hook; its recorder is cleared when the sequence is released. */
  tap(sequence: LlamaContextSequence): ProbabilityTap {
    return this.taps.get(sequence)!;
  }

  acquire(): Promise<LlamaContextSequence> {
    if (this.closed) return Promise.reject(unavailable('the model instance is unloading'));
    const s = this.free.pop();
    if (s) return Promise.resolve(s);
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
  }

  /** Gives a sequence back once its history is cleared; never rejects. */
  async release(sequence: LlamaContextSequence): Promise<void> {
    this.taps.get(sequence)!.recorder = null;
    try {
      await sequence.clearHistory();
    } catch {
      // The context is being disposed: nobody will take the sequence again.
    }
    const next = this.waiting.shift();
    if (next && !this.closed) next.resolve(sequence);
    else this.free.push(sequence);
  }

  close(): void {
    this.closed = true;
    for (const w of this.waiting.splice(0)) w.reject(unavailable('the model instance was unloaded before the request started'));
  }
}
