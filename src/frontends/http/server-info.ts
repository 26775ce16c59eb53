import type { Logger } from '../../observability/logger.js';
import type { InferenceServer } from '../../server/inference-server.js';

/** A flag in effect: given, or not given and at its default (as --help words it). */
export interface ShownFlag {
  readonly name: string;
  readonly value: string;
  readonly given: boolean;
}

/**
 * GET /v2/nereid/server, Nereid's own: the server metadata's fields, then what the web console's server view
 * shows: uptime, the process's memory, the flags in effect (secrets hidden by the CLI), refusals by
 * the server's limits, and the latest warnings and errors of the log (a bounded ring; the page shows them as
 * text). Read-only, in the logging category of --http-restricted-api and the API keys' scopes.
 */
export function serverInfo(server: InferenceServer, logger: Logger, flags: readonly ShownFlag[]): Record<string, unknown> {
  const m = process.memoryUsage();
  return {
    ...server.metadata(),
    nereid_uptime_secs: Math.round(process.uptime()),
    nereid_node_version: process.version,
    nereid_memory_bytes: { rss: m.rss, heap_used: m.heapUsed, heap_total: m.heapTotal, external: m.external, array_buffers: m.arrayBuffers },
    nereid_flags: flags,
    nereid_limit_refusals: server.limitRefusalCounts(),
    nereid_recent_log: (logger.recent?.() ?? []).map((r) => ({ at: new Date(r.atMs).toISOString(), level: r.level === 'E' ? 'error' : 'warning', message: r.message })),
  };
}
