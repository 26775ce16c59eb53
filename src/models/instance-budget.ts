import { limitExceeded } from '../errors.js';
import type { ModelConfig } from '../config/types.js';

/** Default of --model-max-instances: instances one model version may have (instance_group counts summed). */
export const DEFAULT_MODEL_MAX_INSTANCES = 128;
/** Default of --server-max-instances: instances of every loaded model version together. */
export const DEFAULT_SERVER_MAX_INSTANCES = 1024;

/**
 * The bound on model instances, each of which holds a session, a worker or a process: a config (a client's, through
 * the load API) cannot make the server create instances without end. A version's instances are counted from
 * before the first is created until the version is unloaded, or its load fails; while a version reloads, the old
 * one and the new one both count, as both exist.
 */
export class InstanceBudget {
  private used = 0;

  constructor(readonly perModel = DEFAULT_MODEL_MAX_INSTANCES, readonly total = DEFAULT_SERVER_MAX_INSTANCES) {}

  /** Refuses a config whose instance groups add up to more than one model may have. */
  check(name: string, config: ModelConfig): void {
    const n = instanceCount(config);
    if (n > this.perModel) {
      throw limitExceeded('INVALID_ARG', 'model-max-instances',
        `model '${name}' asks for ${n} instances; a model may have at most ${this.perModel} (--model-max-instances)`);
    }
  }

  /** Takes `n` instances for a version being loaded; the returned function gives them back (once). */
  reserve(name: string, version: number, n: number): () => void {
    if (this.used + n > this.total) {
      throw limitExceeded('RESOURCE_EXHAUSTED', 'server-max-instances',
        `model '${name}' version ${version} needs ${n} instances, but ${this.used} of the server's ${this.total} are in use (--server-max-instances)`);
    }
    this.used += n;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.used -= n;
    };
  }

  /** Instances counted now. */
  inUse(): number {
    return this.used;
  }
}

/** Instances a config asks for: every group's count, passive groups included (they are created too). */
export function instanceCount(config: ModelConfig): number {
  return config.instance_group.reduce((n, g) => n + Math.max(g.count, 0), 0);
}
