/**
 * Output blocks the server has read, to be freed by the stub that wrote them: told to the stub with the next
 * execution, or by a message of their own within RELEASE_DELAY_MS when none comes. A message of their own per
 * block would wake the stub once more per request.
 */
import type { Block } from './wire.js';

/** How long read output blocks may wait for an execution to carry their release to the stub. */
const RELEASE_DELAY_MS = 2;

export class BlockReleases {
  private pending: Block[] = [];
  private scheduled = false;

  /** @param send tells the stub, if one is up, that these blocks are free */
  constructor(private readonly send: (blocks: Block[]) => void) {}

  add(k: Block): void {
    this.pending.push(k);
    if (this.scheduled) return;
    this.scheduled = true;
    setTimeout(() => {
      this.scheduled = false;
      const blocks = this.take();
      if (blocks) this.send(blocks);
    }, RELEASE_DELAY_MS).unref();
  }

  /** The blocks waiting, for the next execution to carry; undefined when none wait. */
  take(): Block[] | undefined {
    if (this.pending.length === 0) return undefined;
    const out = this.pending;
    this.pending = [];
    return out;
  }

  /** Forgets them: the stub that wrote them is gone. */
  clear(): void {
    this.pending = [];
  }
}
