import type { RequestBounds } from '../inference/request.js';
import type { InputInfo, OutputInfo } from './context.js';
import type { ModelVersion } from './model-version.js';

/**
 * A model whose requests that name no version split between its versions by weight (nereid_version_weights),
 * as resolved before a request is read. The pick needs the request's routing key, which is in the request, so
 * pick() makes it once the request is decoded. Until then it describes the highest ready version, with the
 * loosest bounds of the ready versions: whichever is picked, the request must not be refused by the bounds of
 * another. Made per request, only for such models.
 */
export class VersionSplit {
  constructor(
    private readonly latest: ModelVersion,
    readonly bounds: RequestBounds,
    /** The version for a routing key (or none): the weighted pick among the versions ready now. */
    readonly pick: (routingKey: string | undefined) => ModelVersion,
  ) {}

  get name(): string {
    return this.latest.name;
  }

  get version(): number {
    return this.latest.version;
  }

  get decoupled(): boolean {
    return this.latest.decoupled;
  }

  get maxBatchSize(): number {
    return this.latest.maxBatchSize;
  }

  get inputs(): ReadonlyMap<string, InputInfo> {
    return this.latest.inputs;
  }

  get outputs(): ReadonlyMap<string, OutputInfo> {
    return this.latest.outputs;
  }
}

/** The loosest of two bounds: what a request may hold when either version may take it. */
export function looserBounds(a: RequestBounds, b: RequestBounds): RequestBounds {
  return {
    ...a,
    inputs: Math.max(a.inputs, b.inputs),
    outputs: Math.max(a.outputs, b.outputs),
    rank: Math.max(a.rank, b.rank),
    inputElements: Math.max(a.inputElements, b.inputElements),
  };
}
