import { ApiKeys } from '../frontends/api-keys.js';
import type { Logger } from '../observability/logger.js';
import type { ServeOptions } from './flags.js';

/** --api-keys-file and --api-keys-protect-health as the keys the frontends share; undefined when not given. */
export function apiKeys(opts: ServeOptions, logger: Logger): ApiKeys | undefined {
  const file = opts.extra['api-keys-file']?.at(-1);
  if (file === undefined || file === '') return undefined;
  const keys = new ApiKeys(file, opts.extra['api-keys-protect-health']?.at(-1) === 'true', logger);
  logger.info(`API keys required: ${keys.size} keys read from ${file}`);
  return keys;
}
