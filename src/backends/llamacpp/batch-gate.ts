import type { LlamaContextSequence } from 'node-llama-cpp';

type AfterBatch = (sequenceStateLength: number) => Promise<void> | void;

/**
 * Makes a context's generating sequences decode together, one token each per llama.cpp batch, as llama-server's
 * parallel slots do.
 *
 * node-llama-cpp evaluates the sequences that have queued a token when a batch starts, and starts the next batch
 * as soon as the previous one's tokens are drawn; a sequence draws its token on a worker thread and queues the
 * next one through several promise turns, so the sequence whose draw ends last nearly always misses the next
 * batch. With four sequences generating, batches held one to three of them (about two on average), which is
 * that many more decodes per token. Each sequence's after-batch step is the one hook between a batch and the
 * next: it now waits one turn of the event loop, by which time every sequence that goes on has queued its
 * token. The turn is shared by all sequences of the batch, and the sequences of one context share one gate;
 * with one sequence generating there is nobody to wait for, and nothing waits.
 * Installed once per sequence at load; a test counts the batches and fails if this stops working
 * (node-llama-cpp is pinned to an exact version).
 */
export function decodeTogether(sequences: readonly LlamaContextSequence[], generating: () => number): void {
  let turn: Promise<void> | undefined;
  // After the turn, the batch's other sequences pass without waiting again; reset before the next batch ends
  // (its decode and draws take further turns of the loop).
  let passed = false;
  const endTurn = (resolve: () => void): void => {
    turn = undefined;
    passed = true;
    setImmediate(() => (passed = false));
    resolve();
  };
  const nextTurn = (): Promise<void> | undefined => {
    if (passed || generating() < 2) return undefined;
    return (turn ??= new Promise((resolve) => setImmediate(endTurn, resolve)));
  };
  for (const sequence of sequences) {
    const target = sequence as unknown as { _takeIntervalCheckpointIfNeededAfterBatch: AfterBatch };
    const after = target._takeIntervalCheckpointIfNeededAfterBatch;
    const gated: AfterBatch = (length) => {
      const pending = after(length);
      return pending instanceof Promise ? pending.then(nextTurn) : nextTurn();
    };
    target._takeIntervalCheckpointIfNeededAfterBatch = gated;
  }
}
