import { invalidArg } from '../../errors.js';
import type { TraceConfig, TraceMode } from './config.js';
import type { TraceFile } from './trace-file.js';

/**
 * One trace setting (global or a model's) as Triton keeps it: the values, which of them were given rather than
 * mirrored from the level above, and its own sampling state. An update replaces the object rather than
 * changing it, so traces already sampled keep the setting they were sampled under.
 */
export class TraceSetting {
  /** count as it goes down with each trace sampled: what the setting APIs report. */
  count: number;
  private sampled = 0;
  private created = 0;
  private collected = 0;
  /** Finished traces not yet written, and how many. */
  private pending: string[] = [];
  /** Traces sampled under this setting and not yet finished. */
  live = 0;
  /** Replaced by an update: its pending traces are written once its live traces have finished. */
  retired = false;
  readonly invalidReason: string;

  constructor(
    readonly level: number,
    readonly rate: number,
    count: number,
    readonly logFrequency: number,
    readonly file: TraceFile,
    readonly mode: TraceMode,
    readonly specified: Specified,
  ) {
    this.count = count;
    if (level === 0) this.invalidReason = 'tracing is disabled';
    else if (rate === 0) this.invalidReason = 'sample rate must be non-zero';
    else if (mode === 'triton' && file.path === '') this.invalidReason = 'trace file name is not given';
    else this.invalidReason = '';
  }

  get valid(): boolean {
    return this.invalidReason === '' && this.count !== 0;
  }

  /** Triton's sampling: every rate-th request, while count (when not -1) lasts. */
  sample(): boolean {
    if (!this.valid) return false;
    const take = ++this.sampled % this.rate === 0;
    if (take && this.count > 0) {
      this.count--;
      this.created++;
    }
    return take;
  }

  /**
   * A force-sampled trace (one that carried a client's trace context) counts like one sampled here, so that
   * count still limits what is written.
   */
  force(): boolean {
    if (this.invalidReason !== '' || this.count === 0) return false;
    if (this.count > 0) {
      this.count--;
      this.created++;
    }
    return true;
  }

  /**
   * A finished trace's records (Triton mode): kept until log_frequency traces are in hand, or every trace that
   * count allowed has finished, then written to the next numbered file.
   */
  collect(records: string): void {
    this.pending.push(records);
    this.collected++;
    if ((this.count === 0 && this.collected === this.created) || (this.logFrequency !== 0 && this.pending.length >= this.logFrequency)) {
      const text = this.pending.join(',');
      this.pending = [];
      this.file.writeNumbered(text);
    }
  }

  /** What is still pending, written as Triton does when a setting goes: numbered with log_frequency, else to the file. */
  flush(): void {
    if (this.pending.length === 0) return;
    const text = this.pending.join(',');
    this.pending = [];
    if (this.logFrequency !== 0) this.file.writeNumbered(text);
    else this.file.append(text);
  }
}

export interface Specified {
  readonly level: boolean;
  readonly rate: boolean;
  readonly count: boolean;
  readonly logFrequency: boolean;
}

const NONE: Specified = { level: false, rate: false, count: false, logFrequency: false };

/** An update: a value sets the field, null clears it (back to the level above), undefined leaves it. */
export interface NewSetting {
  level?: number | null;
  rate?: number | null;
  count?: number | null;
  logFrequency?: number | null;
}

/**
 * The global setting and each model's, with Triton's update rules: a model's first update copies the fields it
 * does not give from the global setting and keeps mirroring them when the global setting changes; clearing a
 * field falls back to the level above (a model's to the global, the global's to the startup values); a model
 * with no field of its own left uses the global setting again.
 */
export class TraceSettings {
  private readonly defaults: TraceSetting;
  private global: TraceSetting;
  private readonly models = new Map<string, TraceSetting>();
  /** Models with some but not all fields of their own: a global update re-derives them. */
  private readonly mirroring = new Set<string>();
  /** Called with each setting an update replaces. */
  onRetire: (s: TraceSetting) => void = () => undefined;

  constructor(config: TraceConfig, file: TraceFile) {
    this.defaults = new TraceSetting(config.level, config.rate, config.count, config.logFrequency, file, config.mode, NONE);
    this.global = new TraceSetting(config.level, config.rate, config.count, config.logFrequency, file, config.mode, NONE);
  }

  /** The setting requests to `model` are sampled by: its own, else the global one. */
  of(model: string): TraceSetting {
    return this.models.get(model) ?? this.global;
  }

  /** Whether any setting could sample a trace (its level is not OFF). */
  anyOn(): boolean {
    if (this.global.level !== 0) return true;
    for (const s of this.models.values()) if (s.level !== 0) return true;
    return false;
  }

  all(): TraceSetting[] {
    return [this.global, ...this.models.values()];
  }

  /** `model` '' updates the global setting. Throws INVALID_ARG with Triton's words for a setting that cannot trace. */
  update(model: string, change: NewSetting): void {
    this.updateOne(model, change);
    if (model === '') for (const m of [...this.mirroring]) this.updateOne(m, {});
  }

  private updateOne(model: string, change: NewSetting): void {
    const current = model === '' ? this.global : this.models.get(model);
    const fallback = model === '' ? this.defaults : this.global;
    const pick = <T extends number>(key: keyof Specified & keyof NewSetting, fromFallback: T, fromCurrent: T | undefined): [T, boolean] => {
      const v = change[key];
      if (v === null) return [fromFallback, false];
      if (v !== undefined) return [v as T, true];
      if (current?.specified[key]) return [fromCurrent as T, true];
      return [fromFallback, false];
    };
    const [level, levelSpecified] = pick('level', fallback.level, current?.level);
    const [rate, rateSpecified] = pick('rate', fallback.rate, current?.rate);
    const [count, countSpecified] = pick('count', fallback.count, current?.count);
    const [logFrequency, logFrequencySpecified] = pick('logFrequency', fallback.logFrequency, current?.logFrequency);
    const specified: Specified = { level: levelSpecified, rate: rateSpecified, count: countSpecified, logFrequency: logFrequencySpecified };
    if (model !== '') {
      const all = levelSpecified && rateSpecified && countSpecified && logFrequencySpecified;
      const none = !levelSpecified && !rateSpecified && !countSpecified && !logFrequencySpecified;
      if (all) this.mirroring.delete(model);
      else if (none) {
        this.mirroring.delete(model);
        if (current) this.retire(current);
        this.models.delete(model);
        return;
      } else this.mirroring.add(model);
    }
    const next = new TraceSetting(level, rate, count, logFrequency, fallback.file, fallback.mode, specified);
    if (!next.valid && next.invalidReason !== '' && level !== 0) {
      throw invalidArg(`Attempting to set invalid trace setting :${next.invalidReason}`);
    }
    if (current) this.retire(current);
    if (model === '') this.global = next;
    else this.models.set(model, next);
  }

  private retire(s: TraceSetting): void {
    s.retired = true;
    this.onRetire(s);
  }
}
