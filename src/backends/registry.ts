import { unavailable } from '../errors.js';
import type { Backend, BackendTraits } from './backend.js';

/**
 * Backends by name. Heavy engines register a loader, not an instance, so their libraries are imported only
 * when a model needs them.
 */
export type BackendLoader = () => Promise<Backend>;

const NO_TRAITS: BackendTraits = Object.freeze({});

export class BackendRegistry {
  private readonly loaders = new Map<string, BackendLoader>();
  private readonly loaded = new Map<string, Promise<Backend>>();
  private readonly traitsByName = new Map<string, BackendTraits>();

  /** Registers a backend by name; `traits` are what a model's config needs of it before it is loaded. */
  register(name: string, loader: BackendLoader, traits: BackendTraits = NO_TRAITS): void {
    this.loaders.set(name, loader);
    this.traitsByName.set(name, traits);
    this.loaded.delete(name);
  }

  /** The traits of a backend (none for a name not registered), known without loading it. */
  traits(name: string): BackendTraits {
    return this.traitsByName.get(name) ?? NO_TRAITS;
  }

  has(name: string): boolean {
    return this.loaders.has(name);
  }

  /** Loads the backend and lets it start ahead (Backend.prestart) in the background; errors show at get(). */
  prestart(name: string, modelDir: string): void {
    if (!this.loaders.has(name)) return;
    this.get(name).then((b) => b.prestart?.(modelDir), () => undefined);
  }

  /** Loads the backend's modules ahead, in the background; errors show at get(). */
  preload(name: string): void {
    if (this.loaders.has(name)) this.get(name).catch(() => undefined);
  }

  get(name: string): Promise<Backend> {
    let p = this.loaded.get(name);
    if (p) return p;
    const loader = this.loaders.get(name);
    if (!loader) return Promise.reject(unavailable(`unable to find backend '${name}': Nereid has no such backend`));
    p = loader();
    p.catch(() => this.loaded.delete(name));
    this.loaded.set(name, p);
    return p;
  }
}

/** The registry with Nereid's built-in backends. */
export function defaultBackends(): BackendRegistry {
  const r = new BackendRegistry();
  // Triton gives a CPU group without a count two ONNX Runtime instances (core's SetDefaultInstanceCount).
  r.register('onnxruntime', async () => (await import('./onnxruntime/backend.js')).onnxRuntimeBackend, { defaultCpuInstanceCount: 2 });
  r.register('javascript', async () => (await import('./javascript/backend.js')).createJavascriptBackend());
  r.register('python', async () => (await import('./python/backend.js')).pythonModelBackend);
  r.register('pytorch', async () => (await import('./pytorch/backend.js')).pytorchBackend);
  r.register('llamacpp', async () => (await import('./llamacpp/backend.js')).llamaCppBackend);
  r.register('openai', async () => (await import('./openai/backend.js')).createOpenAiBackend());
  // Triton's example backends, which its QA model repositories use everywhere.
  r.register('identity', async () => (await import('./identity/backend.js')).identityBackend);
  r.register('repeat', async () => (await import('./repeat/backend.js')).repeatBackend);
  r.register('square', async () => (await import('./square/backend.js')).squareBackend);
  return r;
}
