/**
 * The shape of the tables of Triton's error messages that the conformance tests check Nereid's refusals
 * against. Each area (config validation, the repository manager, inference requests, shared memory, the Python
 * backend) keeps its own table beside its tests; every row names where Triton makes the message and the words
 * a client matches on. Nereid's message must contain those words; what Nereid adds (a file:line:col, a hint)
 * comes after them.
 */
import assert from 'node:assert/strict';

export interface TritonMessage {
  /** Where Triton makes the message: repository, file and function, such as `core model_config_utils.cc ValidateIOShape`. */
  readonly source: string;
  /** What the client did wrong, in a few words: the row's name in test output. */
  readonly refusal: string;
  /**
   * Triton's words for it, as a client matches them: a substring of Nereid's message, with the parts that
   * vary per request (names, numbers) filled in as the trigger makes them.
   */
  readonly words: string;
}

/** Fails with both texts side by side when Nereid's message lacks Triton's words. */
export function assertTritonWords(row: TritonMessage, message: string): void {
  assert.ok(
    message.includes(row.words),
    `${row.refusal} (${row.source}):\n  Triton's words: ${row.words}\n  Nereid's message: ${message}`,
  );
}

/** Rows must be unique by refusal so that test names and the table's count mean something. */
export function assertDistinctRefusals(rows: readonly TritonMessage[]): void {
  const seen = new Set<string>();
  for (const r of rows) {
    assert.ok(!seen.has(r.refusal), `refusal listed twice: ${r.refusal}`);
    seen.add(r.refusal);
  }
}
