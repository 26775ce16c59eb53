import { invalidArg } from '../errors.js';
import type { ModelConfig } from '../config/types.js';

/**
 * An integer config parameter read as Triton's example backends read theirs (C++ `std::stoi`): leading blanks
 * and a sign allowed, digits up to the first other character. Text with no leading digits, which `stoi` would
 * throw on, and negative values (which those backends would turn into endless waits) are refused at load.
 * Undefined when the parameter is absent.
 */
export function intParameter(config: ModelConfig, key: string): number | undefined {
  const text = config.parameters[key]?.string_value;
  if (text === undefined) return undefined;
  const m = /^\s*([+-]?\d+)/.exec(text);
  const n = m ? Number(m[1]) : NaN;
  if (!Number.isSafeInteger(n) || n < 0) {
    throw invalidArg(`parameter '${key}' of model '${config.name}' must be a non-negative integer, got '${text}'`);
  }
  return n;
}
