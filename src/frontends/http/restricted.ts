import type { IncomingHttpHeaders } from 'node:http';
import type { Route } from './routes.js';

/** One --http-restricted-api group: these API categories need header `key` with value `value`. */
export interface HttpRestrictedGroup {
  readonly categories: readonly string[];
  readonly key: string;
  readonly value: string;
}

/**
 * Triton's restricted-API category of each route (Nereid's per-instance statistics count as statistics): the
 * one table --http-restricted-api and the API keys' scopes both go by.
 */
export function category(r: Route): string {
  switch (r.kind) {
    case 'live': case 'ready': return 'health';
    case 'server_metadata': return 'metadata';
    case 'all_stats': case 'all_instance_stats': return 'statistics';
    // The server's own state (its log lines and command line among it) is the logging category's.
    case 'logging': case 'nereid_server': return 'logging';
    case 'trace': case 'nereid_traces': return 'trace';
    case 'repo_index': case 'repo_index_named': case 'repo_model': return 'model-repository';
    case 'shm': return 'shared-memory';
    case 'model':
      switch (r.action) {
        case 'ready': return 'health';
        case 'metadata': return 'metadata';
        case 'config': return 'model-config';
        case 'stats': case 'nereid_instance_stats': return 'statistics';
        case 'infer': case 'generate': case 'generate_stream': return 'inference';
      }
  }
}

/** The model a route names, for scopes narrowed to models; undefined for routes that name none. */
export function routeModel(r: Route): string | undefined {
  return r.kind === 'model' || r.kind === 'repo_model' || r.kind === 'trace' ? r.model : undefined;
}

/**
 * The check of --http-restricted-api, built once at start: null when nothing is restricted; otherwise a
 * function answering, for a request to a restricted category without the group's header and value, Triton's
 * 403 message (and null for every other request).
 */
export function restriction(groups: readonly HttpRestrictedGroup[] | undefined): ((r: Route, headers: IncomingHttpHeaders) => string | null) | null {
  if (!groups || groups.length === 0) return null;
  const byCategory = new Map<string, { header: string; value: string; message: string }>();
  for (const g of groups) {
    for (const c of g.categories) {
      byCategory.set(c, { header: g.key.toLowerCase(), value: g.value, message: `This API is restricted, expecting header '${g.key}'` });
    }
  }
  return (r, headers) => {
    const g = byCategory.get(category(r));
    if (g === undefined) return null;
    return headers[g.header] === g.value ? null : g.message;
  };
}
