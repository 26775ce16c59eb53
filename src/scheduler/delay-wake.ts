/**
 * The dynamic batcher's wake-up for a pending batch whose oldest request will have waited the queue delay.
 * Delays of a millisecond or more use a timer (Node's millisecond resolution, never early); shorter ones
 * re-check on each turn of the event loop, which keeps the loop busy for at most the delay.
 */
export class DelayWake {
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private immediate = false;

  /** @param wake looks at the pending batch again */
  constructor(private readonly wake: () => void) {}

  /** Wakes at `atMs` (performance.now() ms), or earlier when already set to. */
  at(atMs: number, now: number): void {
    if (atMs - now < 1) {
      if (!this.immediate) {
        this.immediate = true;
        setImmediate(this.onImmediate);
      }
      return;
    }
    if (this.timer) {
      if (this.timerAt <= atMs) return;
      clearTimeout(this.timer);
    }
    this.timerAt = atMs;
    this.timer = setTimeout(this.onTimer, atMs - now);
  }

  /** Stops the timer; a re-check already queued for this turn still runs. */
  clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private readonly onTimer = (): void => {
    // Node may fire a timer up to a millisecond before performance.now() says it is due (it counts from the
    // loop's cached time); the batcher then finds the delay not quite over and waits the rest out by turns.
    this.timer = undefined;
    this.timerAt = Infinity;
    this.wake();
  };

  private readonly onImmediate = (): void => {
    this.immediate = false;
    this.wake();
  };
}
