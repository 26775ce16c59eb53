import { invalidArg } from '../../errors.js';
import type { ModelConfig } from '../../config/types.js';
import { resolveModelFileOnly, withoutServerPaths } from '../../config/model-files.js';
import { versionFolder, type Backend, type BackendInstance, type InstanceSpec } from '../backend.js';
import { routeLlamaLog, startLlama } from './engine.js';
import { LlamaInstance } from './instance.js';
import { EmbeddingInstance, checkEmbeddingConfig } from './embedding-instance.js';

/**
 * Backend "llamacpp": GGUF language models run in this process by llama.cpp, through node-llama-cpp. The
 * version folder holds `model.gguf` (or the config's default_model_filename). A model is a text model in
 * the shape of Triton's LLM backends: input `text_input` (TYPE_STRING), output `text_output` (TYPE_STRING),
 * decoupled so that tokens stream (not decoupled, it answers the whole text at once, which KServe infer
 * serves); sampling comes from request parameters (see sampling.ts), and a chat
 * request passes its messages as the `messages` parameter (see chat.ts).
 *
 * Config parameters (string values):
 * - `threads`: CPU threads per evaluation, default 1. llama.cpp's own default takes every core, which on a
 *   small machine shared with the server's event loop and other models runs many times slower.
 * - `parallel`: requests generated at once (context sequences sharing each evaluation batch), default 4.
 * - `context_size`: tokens each request may hold, prompt and generated text together, default 2048 or the
 *   size the model was trained with if smaller.
 * - `batch_size`: tokens evaluated in one llama.cpp batch, default 512.
 * - `embedding`: "true" makes the model an embedding model (see embedding-instance.ts): it answers each
 *   text with a vector in its output `embedding` (TYPE_FP32) instead of generating; `parallel` then has no use.
 */
export const llamaCppBackend: Backend = {
  name: 'llamacpp',

  /** Starts llama.cpp (about 0.7 s: the library's import, then its binary's check) while other models load. */
  prestart(): void {
    startLlama().catch(() => undefined); // a model that needs it reports the failure
  },

  async createInstance(spec: InstanceSpec): Promise<BackendInstance> {
    const file = await findModelFile(spec);
    const settings = readSettings(spec.config, spec.name);
    if (settings.embedding) checkEmbeddingConfig(spec.config, spec.name);
    const unroute = routeLlamaLog(spec.logger);
    try {
      const engine = await startLlama();
      const model = await engine.loadModel({ modelPath: file, gpuLayers: 0 }).catch((e: Error) => {
        throw invalidArg(`failed to load model '${spec.name}': llama.cpp error: ${withoutServerPaths(e.message, spec.modelDir)}`);
      });
      try {
        if (settings.embedding) {
          const contextSize = Math.min(settings.contextSize, model.trainContextSize);
          const context = await model.createEmbeddingContext({ contextSize, batchSize: settings.batchSize, threads: settings.threads });
          return new EmbeddingInstance(model, context, contextSize, unroute);
        }
        const context = await model.createContext({
          sequences: settings.parallel,
          contextSize: Math.min(settings.contextSize, model.trainContextSize),
          batchSize: settings.batchSize,
          threads: settings.threads,
        });
        return new LlamaInstance(model, context, spec.name, spec.logger, spec.config.model_transaction_policy?.decoupled ?? false, unroute);
      } catch (e) {
        await model.dispose();
        throw e;
      }
    } catch (e) {
      unroute();
      throw e;
    }
  },
};

interface Settings {
  readonly threads: number;
  readonly parallel: number;
  readonly contextSize: number;
  readonly batchSize: number;
  readonly embedding: boolean;
}

function readSettings(config: ModelConfig, name: string): Settings {
  const int = (key: string, def: number, min: number): number => {
    const v = config.parameters[key]?.string_value;
    if (v === undefined || v === '') return def;
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw invalidArg(`parameter '${key}' of model '${name}' must be an integer of at least ${min}, got '${v}'`);
    return n;
  };
  const embedding = config.parameters['embedding']?.string_value ?? 'false';
  if (embedding !== 'true' && embedding !== 'false') throw invalidArg(`parameter 'embedding' of model '${name}' must be "true" or "false", got '${embedding}'`);
  return {
    threads: int('threads', 1, 1), parallel: int('parallel', 4, 1), contextSize: int('context_size', 2048, 16), batchSize: int('batch_size', 512, 1),
    embedding: embedding === 'true',
  };
}

/** The model file: the configured name, else model.gguf; never outside the version folder. */
function findModelFile(spec: InstanceSpec): Promise<string> {
  return resolveModelFileOnly(versionFolder(spec), spec.config.default_model_filename || 'model.gguf', 'default_model_filename');
}
