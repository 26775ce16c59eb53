import { invalidArg } from '../../errors.js';
import type { ModelConfig } from '../../config/types.js';
import type { Backend, BackendInstance, InstanceSpec, ModelFiles } from '../backend.js';
import { Engine, type EngineSettings } from './engine.js';
import { engineCommandOf } from './engine-command.js';
import { GatewayInstance, type SharedEngine } from './instance.js';
import { ManagedEngine } from './managed-engine.js';

/**
 * Backend "openai": the server as a gateway to an engine that runs on its own — vLLM, SGLang, TGI, llama.cpp's
 * server, any OpenAI-compatible /v1 endpoint. The model folder holds only a config (and an empty version
 * folder); its parameters say where the engine is:
 *
 * ```
 * backend: "openai"
 * parameters { key: "base_url" value { string_value: "http://127.0.0.1:8080" } }
 * parameters { key: "model_id" value { string_value: "meta-llama/Llama-3.1-8B-Instruct" } }
 * parameters { key: "api_key_env" value { string_value: "VLLM_API_KEY" } }   # optional: a variable's name
 * parameters { key: "timeout_ms" value { string_value: "600000" } }          # optional
 * parameters { key: "max_retries" value { string_value: "2" } }              # optional: connection failures only
 * ```
 *
 * Or Nereid runs the engine itself: `engine` names a preset (llama-server, vllm, sglang, tgi) or
 * `engine_command` gives a command line with placeholders ({port}, {model_dir}, {model_file}, …); see
 * engine-command.ts and managed-engine.ts. base_url is then Nereid's own choice and must not be given.
 *
 * Requests use Triton's LLM tensors: `text_input` in, `text_output` out, sampling as request parameters
 * (max_tokens, temperature, top_p, top_k, seed, stop, …); a `messages` parameter (chat messages as JSON) makes it
 * a chat completion. A decoupled model streams the engine's tokens as they come. With the parameter `embedding`
 * "true" the model answers each text with the engine's /v1/embeddings vector in its output `embedding`.
 */
export function createOpenAiBackend(): Backend {
  const engines = new EngineShares();
  return {
    name: 'openai',

    async autoComplete(_files: ModelFiles, config: ModelConfig): Promise<void> {
      const flags = { is_shape_tensor: false, is_non_linear_format_io: false };
      if (config.input.length === 0) {
        config.input = [{ name: 'text_input', data_type: 'TYPE_STRING', format: 'FORMAT_NONE', dims: [1], allow_ragged_batch: false, optional: false, ...flags }];
      }
      if (config.output.length === 0) {
        const embedding = config.parameters?.['embedding']?.string_value === 'true';
        config.output = [embedding ? { name: 'embedding', data_type: 'TYPE_FP32', dims: [-1], label_filename: '', ...flags } : { name: 'text_output', data_type: 'TYPE_STRING', dims: [1], label_filename: '', ...flags }];
      }
      // A gateway instance only waits on the network: many of them, so many requests are in flight at once.
      if (config.instance_group.length === 0) {
        config.instance_group = [{ name: '', kind: 'KIND_CPU', count: 64, gpus: [], secondary_devices: [], profile: [], passive: false, host_policy: '' }];
      }
    },

    async createInstance(spec: InstanceSpec): Promise<BackendInstance> {
      return GatewayInstance.create(spec, await engines.share(spec));
    },
  };
}

/**
 * One engine (one connection pool, and the engine's process when Nereid runs it) per model version and
 * settings, shared by its instances; it closes with the last of them. The settings are part of the key: a model
 * reloaded with another base_url (or command, or key, or timeout) gets a new engine while the old version's
 * instances still serve on theirs.
 */
class EngineShares {
  private readonly engines = new Map<string, { started: Promise<{ engine: Engine; managed?: ManagedEngine }>; users: number }>();

  async share(spec: InstanceSpec): Promise<SharedEngine> {
    const managedConfig = spec.config.parameters?.['engine'] !== undefined || spec.config.parameters?.['engine_command'] !== undefined;
    const settings = settingsOf(spec.config, spec.name, managedConfig);
    const key = `${spec.modelDir}\u0000${spec.version}\u0000${JSON.stringify(settings)}\u0000${JSON.stringify(spec.config.parameters ?? {})}`;
    let e = this.engines.get(key);
    if (!e) {
      e = { started: start(spec, settings), users: 0 };
      this.engines.set(key, e);
    }
    e.users++;
    const entry = e;
    const release = async (): Promise<void> => {
      if (--entry.users > 0) return;
      if (this.engines.get(key) === entry) this.engines.delete(key);
      const started = await entry.started.catch(() => undefined);
      await (started?.managed ? started.managed.stop() : started?.engine.close());
    };
    try {
      const started = await entry.started;
      return { ...started, release };
    } catch (err) {
      // A start that failed is not kept: the next load starts afresh.
      if (this.engines.get(key) === entry) this.engines.delete(key);
      entry.users--;
      throw err;
    }
  }
}

async function start(spec: InstanceSpec, settings: EngineSettings): Promise<{ engine: Engine; managed?: ManagedEngine }> {
  const command = await engineCommandOf(spec, spec.config, settings.modelId);
  if (!command) return { engine: new Engine(settings) };
  const managed = await ManagedEngine.start(command, settings, spec.name, spec.logger);
  return { engine: managed.engine, managed };
}

/** The engine settings from the config's parameters; the API key from the environment variable they name. */
export function settingsOf(config: ModelConfig, model: string, managed = false): EngineSettings {
  const p = (k: string): string | undefined => config.parameters?.[k]?.string_value;
  // An engine Nereid starts gets its address when it starts: a placeholder until then.
  const baseUrl = managed && p('base_url') === undefined ? 'http://127.0.0.1' : p('base_url');
  if (!baseUrl) throw invalidArg(`model '${model}' (backend openai) needs the parameter base_url, the engine's address`);
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw invalidArg(`model '${model}': base_url '${baseUrl}' is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalidArg(`model '${model}': base_url must be http or https, got '${url.protocol}'`);
  const int = (k: string, d: number, min: number): number => {
    const v = p(k);
    if (v === undefined) return d;
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw invalidArg(`model '${model}': parameter ${k} must be an integer of at least ${min}, got '${v}'`);
    return n;
  };
  const keyEnv = p('api_key_env');
  if (keyEnv !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(keyEnv)) throw invalidArg(`model '${model}': api_key_env must name an environment variable, got '${keyEnv}'`);
  if (p('api_key') !== undefined) throw invalidArg(`model '${model}': an API key does not belong in config.pbtxt; put it in an environment variable and name it with api_key_env`);
  return {
    baseUrl,
    modelId: p('model_id') ?? model,
    apiKey: keyEnv ? process.env[keyEnv] : undefined,
    timeoutMs: int('timeout_ms', 600_000, 1),
    retries: int('max_retries', 2, 0),
    connections: int('max_connections', 64, 1),
  };
}
