import { type NereidError, invalidArg } from '../errors.js';
import { modelConfigFromJson } from '../config/index.js';
import type { ModelConfig } from '../config/types.js';

/**
 * The refusal of a load whose `config` parameter is not a model config. Triton converts the override while it
 * polls the repository, so the client gets its failed-poll words (and 500); Triton only logs why, under
 * "Invalid config override", which Nereid gives the client too. A client's mistake, so INVALID_ARG here.
 */
export function configOverrideError(model: string, why: string): NereidError {
  return invalidArg(`failed to load '${model}', failed to poll from model repository: Invalid config override: ${why}`);
}

/**
 * A load's `config` parameter (JSON text, or JSON already parsed) as a model config, refused in the words above.
 * Here rather than in each frontend so that frontends reach config/ only through the server.
 */
export function configOverride(model: string, json: unknown): ModelConfig {
  try {
    return modelConfigFromJson(json);
  } catch (e) {
    throw configOverrideError(model, (e as Error).message);
  }
}
