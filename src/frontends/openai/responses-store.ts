/**
 * Where the Responses API keeps stored responses (`store: true`) for retrieval, deletion and
 * previous_response_id: a text per response id. In memory per frontend by default; the command line hands
 * in a Redis one (cache/redis-text-store.ts) with --openai-response-store, which has this shape.
 */
export interface TextStore {
  get(key: string): Promise<string | undefined>;
  /** Keeps `value` under `key`, evicting the oldest entries past the store's bounds. */
  set(key: string, value: string): Promise<void>;
  /** Whether there was an entry to delete. */
  delete(key: string): Promise<boolean>;
  close(): Promise<void>;
}

export interface StoreBounds {
  /** Entries kept at most; the oldest goes first. */
  readonly maxEntries: number;
  /** UTF-16 code units of all values together at most (about their bytes for the JSON kept here). */
  readonly maxChars: number;
  /** How long an entry is kept after it was stored. */
  readonly ttlMs: number;
}

/** One stored response's text at most: a larger one is not stored. */
export const MAX_ENTRY_CHARS = 4 * 1024 * 1024;

export const DEFAULT_STORE_BOUNDS: StoreBounds = { maxEntries: 1000, maxChars: 64 * 1024 * 1024, ttlMs: 24 * 3600 * 1000 };

interface Entry {
  readonly value: string;
  readonly expires: number;
}

/**
 * A bounded in-memory store: a Map in insertion order, so the oldest entry (and the first to expire: every
 * entry lives the same time) is always first. Nothing runs on a timer; expired entries go when met.
 */
export class MemoryTextStore implements TextStore {
  private readonly entries = new Map<string, Entry>();
  private chars = 0;

  constructor(private readonly bounds: StoreBounds = DEFAULT_STORE_BOUNDS, private readonly now: () => number = Date.now) {}

  async get(key: string): Promise<string | undefined> {
    this.expire();
    return this.entries.get(key)?.value;
  }

  async set(key: string, value: string): Promise<void> {
    if (value.length > Math.min(MAX_ENTRY_CHARS, this.bounds.maxChars)) return;
    this.remove(key);
    this.entries.set(key, { value, expires: this.now() + this.bounds.ttlMs });
    this.chars += value.length;
    this.expire();
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.bounds.maxEntries && this.chars <= this.bounds.maxChars) break;
      this.remove(oldest);
    }
  }

  async delete(key: string): Promise<boolean> {
    this.expire();
    return this.remove(key);
  }

  async close(): Promise<void> {
    this.entries.clear();
    this.chars = 0;
  }

  private expire(): void {
    const now = this.now();
    for (const [key, e] of this.entries) {
      if (e.expires > now) break;
      this.remove(key);
    }
  }

  private remove(key: string): boolean {
    const e = this.entries.get(key);
    if (e === undefined) return false;
    this.chars -= e.value.length;
    return this.entries.delete(key);
  }
}
