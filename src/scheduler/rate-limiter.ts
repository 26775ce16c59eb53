import { invalidArg, type NereidError } from '../errors.js';
import type { ModelRateLimiter } from '../config/types.js';
import { instanceStatus, type BackendInstance, type BackendRequest, type EngineLoad, type ExecutionTimes, type InstanceMemory, type InstanceStatus } from '../backends/backend.js';

/** --rate-limit-resource=<name>:<count>[:<device>]: units of a resource on one device, or on every device. */
export interface ResourceOverride {
  readonly name: string;
  readonly count: number;
  readonly device: number | undefined;
}

interface Waiter {
  readonly instance: LimitedInstance;
  readonly resolve: () => void;
}

/**
 * Triton's rate limiter (--rate-limit=execution_count). An instance whose config declares rate_limiter
 * resources runs only while those resources are free on its device (or in the global pool for `global`
 * resources); they are held for the execution. When several instances wait, the one with the fewest
 * executions scaled by its priority goes first (priority 0 counts as 1; priority 2 gets half the chances of
 * priority 1). Availability per resource is the largest count any loaded instance asks for, unless
 * --rate-limit-resource says otherwise. CPU instances are on device 0.
 */
export class RateLimiter {
  /** Units that exist and units held, by `global:<name>` or `<device>:<name>`. */
  private readonly capacity = new Map<string, number>();
  private readonly inUse = new Map<string, number>();
  private readonly waiting: Waiter[] = [];

  constructor(readonly enabled: boolean, private readonly overrides: readonly ResourceOverride[] = []) {}

  /** Wraps an instance when limiting is on and its group declares resources; otherwise returns it as is. */
  wrap(instance: BackendInstance, limiter: ModelRateLimiter | undefined, device = 0): BackendInstance {
    if (!this.enabled || !limiter || limiter.resources.length === 0) return instance;
    const needs = limiter.resources.map((r) => {
      const key = r.global ? `global:${r.name}` : `${device}:${r.name}`;
      const other = r.global ? `${device}:${r.name}` : `global:${r.name}`;
      if (this.capacity.has(other)) throw invalidArg(`rate limiter resource '${r.name}' is declared both global and per device by the loaded models`);
      const set = this.available(r.name, r.global ? undefined : device);
      this.capacity.set(key, set ?? Math.max(this.capacity.get(key) ?? 0, r.count));
      if (set !== undefined && r.count > set) {
        throw invalidArg(`rate limiter resource '${r.name}' asks for ${r.count} units but --rate-limit-resource makes ${set} available`);
      }
      return { key, count: r.count };
    });
    return new LimitedInstance(instance, this, needs, Math.max(1, limiter.priority));
  }

  /** The count --rate-limit-resource sets for a resource on a device (or for all devices), if any. */
  private available(name: string, device: number | undefined): number | undefined {
    const exact = this.overrides.find((o) => o.name === name && o.device === device);
    return (exact ?? this.overrides.find((o) => o.name === name && o.device === undefined))?.count;
  }

  acquire(instance: LimitedInstance): Promise<void> {
    if (this.waiting.length === 0 && this.fits(instance)) {
      this.take(instance);
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.waiting.push({ instance, resolve });
      this.grant();
    });
  }

  release(instance: LimitedInstance): void {
    for (const n of instance.needs) this.inUse.set(n.key, (this.inUse.get(n.key) ?? 0) - n.count);
    this.grant();
  }

  private fits(instance: LimitedInstance): boolean {
    return instance.needs.every((n) => (this.capacity.get(n.key) ?? 0) - (this.inUse.get(n.key) ?? 0) >= n.count);
  }

  private take(instance: LimitedInstance): void {
    for (const n of instance.needs) this.inUse.set(n.key, (this.inUse.get(n.key) ?? 0) + n.count);
    instance.executions++;
  }

  /** Starts every waiter that fits, lowest executions × priority first. */
  private grant(): void {
    for (;;) {
      let best = -1;
      for (let i = 0; i < this.waiting.length; i++) {
        const w = this.waiting[i]!;
        if (!this.fits(w.instance)) continue;
        if (best < 0 || scaled(w.instance) < scaled(this.waiting[best]!.instance)) best = i;
      }
      if (best < 0) return;
      const [w] = this.waiting.splice(best, 1);
      this.take(w!.instance);
      w!.resolve();
    }
  }
}

function scaled(i: LimitedInstance): number {
  return i.executions * i.priority;
}

/** An instance that holds its rate-limiter resources for the length of each execution. */
class LimitedInstance implements BackendInstance {
  executions = 0;
  // Waiting for resources is asynchronous, so the scheduler must not treat this instance as inline.
  readonly synchronous = false;

  constructor(
    private readonly inner: BackendInstance,
    private readonly limiter: RateLimiter,
    readonly needs: readonly { key: string; count: number }[],
    readonly priority: number,
  ) {
    // What the engine reports passes through, present only where the inner instance has it.
    if (inner.memory) this.memory = () => inner.memory!();
    if (inner.engineLoad) this.engineLoad = () => inner.engineLoad!();
    if (inner.engineMetrics) this.engineMetrics = () => inner.engineMetrics!();
  }

  readonly memory?: () => InstanceMemory;
  readonly engineLoad?: () => Promise<EngineLoad | undefined>;
  readonly engineMetrics?: BackendInstance['engineMetrics'];

  async execute(requests: readonly BackendRequest[]): Promise<ExecutionTimes> {
    await this.limiter.acquire(this);
    try {
      return await this.inner.execute(requests);
    } finally {
      this.limiter.release(this);
    }
  }

  /** The instance's own health: the rate limiter changes nothing of it. */
  status(): InstanceStatus {
    return instanceStatus(this.inner);
  }

  kill(error: NereidError): void {
    this.inner.kill?.(error);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
