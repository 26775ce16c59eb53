/**
 * Stop strings over streamed text. Text is passed on as it comes, except a tail that could still be the
 * start of a stop string, which waits for the next piece; once a stop string appears, the text before it is
 * the last to go out.
 *
 * Matching the text rather than tokens is what OpenAI's stop means: a stop string may begin or end inside a
 * token. (node-llama-cpp's own stop triggers cut inside a token by detokenizing the token's remainder alone,
 * which for SentencePiece vocabularies drops the token's leading space.)
 */
export class StopMatcher {
  private held = '';
  private stoppedValue = false;
  private matchedValue: string | undefined;
  private readonly longest: number;

  constructor(private readonly stops: readonly string[]) {
    this.longest = stops.reduce((n, s) => Math.max(n, s.length), 0);
  }

  get stopped(): boolean {
    return this.stoppedValue;
  }

  /** The stop string that ended the text, once one has (Anthropic's API names it in stop_sequence). */
  get matched(): string | undefined {
    return this.matchedValue;
  }

  /** The text that can go out now, given the next piece. */
  push(piece: string): string {
    if (this.stoppedValue) return '';
    if (this.longest === 0) return piece;
    const text = this.held + piece;
    let cut = -1;
    let matched: string | undefined;
    for (const s of this.stops) {
      const at = text.indexOf(s);
      if (at >= 0 && (cut < 0 || at < cut)) {
        cut = at;
        matched = s;
      }
    }
    if (cut >= 0) {
      this.stoppedValue = true;
      this.matchedValue = matched;
      this.held = '';
      return text.slice(0, cut);
    }
    const keep = this.partialTail(text);
    this.held = text.slice(text.length - keep);
    return text.slice(0, text.length - keep);
  }

  /** What was held back, once generation has ended without a stop string. */
  flush(): string {
    const rest = this.held;
    this.held = '';
    return rest;
  }

  /** The length of the longest tail of `text` that some stop string starts with. */
  private partialTail(text: string): number {
    for (let n = Math.min(this.longest - 1, text.length); n > 0; n--) {
      const tail = text.slice(text.length - n);
      if (this.stops.some((s) => s.startsWith(tail))) return n;
    }
    return 0;
  }
}
