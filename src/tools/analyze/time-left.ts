/**
 * The time left in a config search, as the progress line shows it. Projected from the mean time per config
 * measured so far, as an end time; a later projection may move that end earlier, never later, so the time shown
 * only falls. A search running past its projection shows no time rather than a time that rises.
 */
export class TimeLeft {
  private end = Infinity;

  constructor(private readonly started: number, private readonly planned: number) {}

  /** Milliseconds left at `now` with `done` configs measured, or undefined before the first or past the end. */
  at(now: number, done: number): number | undefined {
    if (done === 0) return undefined;
    const projected = this.started + ((now - this.started) / done) * Math.max(this.planned, done);
    this.end = Math.min(this.end, projected);
    const left = this.end - now;
    return left > 0 ? left : undefined;
  }
}

export function durationText(ms: number): string {
  const secs = Math.round(ms / 1000);
  return secs >= 60 ? `${Math.floor(secs / 60)} min ${secs % 60} s` : `${secs} s`;
}
