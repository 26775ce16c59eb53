import { ApiKeys } from '../frontends/api-keys.js';
import { registerFamily, ScrapeFamily } from '../observability/metrics/families.js';
import type { InferenceServer } from '../server/inference-server.js';
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

/** `nereid_key_request_count{key_id,outcome}` on the server's metrics (when metrics are on): read at scrape time. */
export function exportKeyMetrics(keys: ApiKeys | undefined, server: InferenceServer): void {
  const registry = server.metricsRegistry;
  if (keys === undefined || registry === undefined) return;
  const family = new ScrapeFamily('nereid_key_request_count', 'Number of requests of each API key id, by outcome', 'counter', () => keys.counts());
  registerFamily(registry, family);
}
