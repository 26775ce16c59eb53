import { InferenceServer } from '../../src/server/inference-server.js';
import type { ServerOptions } from '../../src/server/options.js';
import { defaultBackends } from '../../src/backends/registry.js';
import type { BackendInstance, InstanceSpec } from '../../src/backends/backend.js';
import { createLogger } from '../../src/observability/logger.js';

/** An instance a real load created, with the names its loader gave it. */
export interface SpiedInstance {
  readonly model: string;
  readonly version: number;
  readonly instanceName: string;
  readonly instance: BackendInstance;
}

export interface SpiedServer {
  readonly server: InferenceServer;
  /** The instances created so far for `model`, in creation order. */
  instances(model: string): SpiedInstance[];
  close(): Promise<void>;
}

/**
 * A real server (in this process, no frontend) whose built-in backends named in `backends` are wrapped so that
 * the test sees each instance they create, as the model loader made it: for what only an instance tells
 * (BackendInstance.memory) before the server shows it anywhere.
 */
export async function serveWithInstanceSpy(options: ServerOptions, backends: readonly string[]): Promise<SpiedServer> {
  const registry = defaultBackends();
  const created: SpiedInstance[] = [];
  for (const name of backends) {
    const traits = registry.traits(name);
    const real = registry.get(name);
    registry.register(name, async () => {
      const backend = await real;
      // A proxy rather than a copy: some backends are class instances whose methods live on the prototype.
      return new Proxy(backend, {
        get(target, key, receiver) {
          if (key !== 'createInstance') {
            const v: unknown = Reflect.get(target, key, receiver);
            return typeof v === 'function' ? v.bind(target) : v;
          }
          return async (spec: InstanceSpec) => {
            const instance = await target.createInstance(spec);
            created.push({ model: spec.name, version: spec.version, instanceName: spec.instanceName, instance });
            return instance;
          };
        },
      });
    }, traits);
  }
  const logger = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
  const server = await InferenceServer.create(options, { logger, backends: registry });
  return {
    server,
    instances: (model) => created.filter((c) => c.model === model),
    close: async () => {
      await server.close(5);
    },
  };
}
