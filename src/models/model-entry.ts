import type { ModelConfig } from '../config/types.js';
import type { ModelLocation } from '../repository/local.js';
import type { OverrideDir } from '../repository/overrides.js';
import type { PreparedModel } from './loader.js';
import type { ModelVersion } from './model-version.js';

/** The states of a model version, as Triton's ModelReadyState names them. */
export type ModelState = 'UNKNOWN' | 'READY' | 'UNAVAILABLE' | 'LOADING' | 'UNLOADING';

/** One line of the repository index. */
export interface IndexEntry {
  name: string;
  version?: string;
  state?: ModelState;
  reason?: string;
  /** Nereid's: the memory the version's load took, in bytes, while it is loaded and was measured. */
  nereid_memory_bytes?: number;
}

/** What a load request brings in place of the repository's files (the repository API's load parameters). */
export interface LoadRequest {
  readonly config?: ModelConfig;
  readonly files?: ReadonlyMap<string, Uint8Array>;
}

/** One version of a model: its state, why it is not ready if it is not, and the loaded version while it serves. */
export interface VersionSlot {
  state: ModelState;
  reason: string;
  model: ModelVersion | undefined;
}

/** A model and what is known of it: where it lives, its versions, and why it is not ready if it is not. */
export interface ModelEntry {
  readonly name: string;
  /** Its repository with --model-namespacing, else ''. */
  readonly namespace: string;
  /** Its key in the manager (see modelKey). */
  readonly key: string;
  location: ModelLocation | undefined;
  prepared: PreparedModel | undefined;
  configJson: string;
  versions: Map<number, VersionSlot>;
  /** Why the model as a whole failed (no version got as far as loading). */
  failure: string;
  timestamps: Map<string, bigint>;
  overrides: OverrideDir | undefined;
  /** Unloaded on request: not counted by strict readiness. */
  unloaded: boolean;
  /**
   * Loaded because it was asked for by name (a load request, --load-model, every model in modes none and
   * poll), not only as a model an ensemble runs on: unload_dependents leaves such a model loaded.
   */
  explicit: boolean;
  /**
   * Unloaded because a model one of its steps runs on stopped serving. Triton keeps such an ensemble in its
   * dependency graph and loads it again once every step has a model to run on, unless it is unloaded by name.
   */
  waiting: boolean;
  /** The config the last load was given in place of the repository's, for loading it again the same way. */
  configOverride: ModelConfig | undefined;
  /** Operations on one model run one at a time, in order (see ModelTable.serially). */
  busy: Promise<void>;
  /** Loaded because a request named it (--model-load-on-demand): strict readiness does not wait for it. */
  onDemand: boolean;
  /** Operations queued or running on it (a model under one is never evicted). */
  ops: number;
  /** The memory its last load took, in bytes (the estimate for its next load); 0 before any. */
  lastBytes: number;
}

/** A new entry that knows nothing of its model yet. */
export function newEntry(key: string, name: string, namespace: string): ModelEntry {
  return {
    name, namespace, key, location: undefined, prepared: undefined, configJson: '', versions: new Map(), failure: '', timestamps: new Map(),
    overrides: undefined, unloaded: false, explicit: false, waiting: false, configOverride: undefined, busy: Promise.resolve(), onDemand: false, ops: 0, lastBytes: 0,
  };
}

/** Whether a version of the entry is READY (as the lifecycle holds it, whatever its instances say). */
export function hasReadyVersion(e: ModelEntry): boolean {
  for (const s of e.versions.values()) if (s.state === 'READY') return true;
  return false;
}
