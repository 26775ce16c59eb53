import type { ModelConfig, ModelQueuePolicy } from '../config/types.js';
import { RingQueue } from './queue.js';

/**
 * One priority level of the dynamic batcher: its number, its queue, the requests its DELAY policy moved behind
 * it, and its policy. `kept` levels (those with a policy of their own) live as long as the batcher; the others
 * exist only while they hold requests, so a config may declare up to 2^64 - 1 levels at no cost per level.
 */
export class Level<E> {
  readonly queue = new RingQueue<E>();
  readonly delayed = new RingQueue<E>();
  /** Live entries in both queues (and those held back by tenant), for max_queue_size. */
  size = 0;
  readonly timeoutUs: number;
  readonly allowOverride: boolean;
  readonly delayOnTimeout: boolean;
  readonly maxQueueSize: number;

  constructor(readonly priority: number, policy: ModelQueuePolicy | undefined, readonly kept: boolean) {
    this.timeoutUs = policy?.default_timeout_microseconds ?? 0;
    this.allowOverride = policy?.allow_timeout_override ?? false;
    this.delayOnTimeout = policy?.timeout_action === 'DELAY';
    this.maxQueueSize = policy?.max_queue_size ?? 0;
  }
}

/**
 * The levels that exist, by ascending number (1 = highest; 0 when the model has no priority levels), as
 * Triton's PriorityQueue: without priority levels one kept level 0 under the default policy; with them one
 * kept level per priority_queue_policy entry, and the others made when a request needs them and pruned once
 * empty. The batcher's cursor indexes `list`: an insertion or a prune tells it.
 */
export class PriorityLevels<E> {
  list: Level<E>[];
  private readonly maxLevel: number;
  private readonly defaultLevel: number;
  private readonly defaultPolicy: ModelQueuePolicy | undefined;
  /** A level that is not kept emptied: prune() removes it at the next safe point. */
  private pruneNeeded = false;

  constructor(db: NonNullable<ModelConfig['dynamic_batching']>) {
    this.maxLevel = db.priority_levels;
    this.defaultLevel = db.priority_levels > 0 ? db.default_priority_level : 0;
    this.defaultPolicy = db.default_queue_policy;
    this.list = db.priority_levels > 0
      ? Object.entries(db.priority_queue_policy).map(([k, v]) => new Level<E>(Number(k), v, true)).sort((a, b) => a.priority - b.priority)
      : [new Level<E>(0, db.default_queue_policy, true)];
  }

  /**
   * The level of a request's priority (0, or a number past the last level: the default level), made with the
   * default policy when it does not exist yet; `inserted` is called with the index of a level made.
   */
  of(priority: number, inserted: (index: number) => void): Level<E> {
    const p = priority === 0 || priority > this.maxLevel ? this.defaultLevel : priority;
    const levels = this.list;
    if (levels.length === 1 && levels[0]!.priority === p) return levels[0]!;
    let lo = 0;
    let hi = levels.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (levels[mid]!.priority < p) lo = mid + 1;
      else hi = mid;
    }
    if (lo < levels.length && levels[lo]!.priority === p) return levels[lo]!;
    if (this.prune()) inserted(-1);
    return this.insert(p, inserted);
  }

  private insert(p: number, inserted: (index: number) => void): Level<E> {
    const levels = this.list;
    let lo = 0;
    while (lo < levels.length && levels[lo]!.priority < p) lo++;
    const made = new Level<E>(p, this.defaultPolicy, false);
    levels.splice(lo, 0, made);
    inserted(lo);
    return made;
  }

  /** One entry of `level` left it. */
  left(level: Level<E>): void {
    if (--level.size === 0 && !level.kept) this.pruneNeeded = true;
  }

  /** Removes the levels that are not kept and hold no request; true when it did (the indices changed). */
  prune(): boolean {
    if (!this.pruneNeeded) return false;
    this.pruneNeeded = false;
    this.list = this.list.filter((l) => l.kept || l.size > 0);
    return true;
  }
}
