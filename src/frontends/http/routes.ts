/**
 * Triton's HTTP paths. Model names may hold any character but '/', percent-encoded by clients; versions are
 * digits only, as Triton's router matches them (anything else is a 404).
 */
export type Route =
  | { kind: 'live' | 'ready' | 'server_metadata' | 'all_stats' | 'all_instance_stats' | 'logging' | 'repo_index' | 'nereid_server' | 'nereid_traces' }
  | { kind: 'model'; model: string; version: number | undefined; action: ModelAction }
  | { kind: 'repo_model'; model: string; action: 'load' | 'unload'; repository: string }
  | { kind: 'repo_index_named'; repository: string }
  | { kind: 'trace'; model: string | undefined }
  | { kind: 'shm'; cuda: boolean; region: string | undefined; action: 'status' | 'register' | 'unregister' };

/** Triton's actions, and Nereid's `nereid_instance_stats` (per-instance statistics, which Triton does not report). */
export type ModelAction = 'metadata' | 'ready' | 'infer' | 'config' | 'stats' | 'nereid_instance_stats' | 'generate' | 'generate_stream';

const MODEL = /^\/v2\/models\/([^/]+)(?:\/versions\/([0-9]+))?(?:\/(ready|infer|config|stats|nereid_instance_stats|generate|generate_stream))?$/;
const REPO_MODEL = /^\/v2\/repository(?:\/([^/]+))?\/models\/([^/]+)\/(load|unload)$/;
const REPO_INDEX = /^\/v2\/repository\/([^/]+)\/index$/;
const TRACE = /^\/v2\/models\/([^/]+)\/trace\/setting$/;
const SHM = /^\/v2\/(system|cuda)sharedmemory(?:\/region\/([^/]+))?\/(status|register|unregister)$/;

export function route(path: string): Route | undefined {
  switch (path) {
    case '/v2/health/live': return { kind: 'live' };
    case '/v2/health/ready': return { kind: 'ready' };
    case '/v2': case '/v2/': return { kind: 'server_metadata' };
    case '/v2/models/stats': return { kind: 'all_stats' };
    case '/v2/models/nereid_instance_stats': return { kind: 'all_instance_stats' };
    case '/v2/logging': return { kind: 'logging' };
    case '/v2/repository/index': return { kind: 'repo_index' };
    case '/v2/trace/setting': return { kind: 'trace', model: undefined };
    // Nereid's own: what the web console's server view shows (see server-info.ts).
    case '/v2/nereid/server': return { kind: 'nereid_server' };
    case '/v2/nereid/traces': return { kind: 'nereid_traces' };
    default: break;
  }
  let m = MODEL.exec(path);
  if (m) {
    const version = m[2] === undefined ? undefined : Number(m[2]);
    return { kind: 'model', model: decode(m[1]!), version, action: (m[3] as ModelAction | undefined) ?? 'metadata' };
  }
  m = REPO_MODEL.exec(path);
  if (m) return { kind: 'repo_model', repository: m[1] === undefined ? '' : decode(m[1]), model: decode(m[2]!), action: m[3] as 'load' | 'unload' };
  m = REPO_INDEX.exec(path);
  if (m) return { kind: 'repo_index_named', repository: decode(m[1]!) };
  m = TRACE.exec(path);
  if (m) return { kind: 'trace', model: decode(m[1]!) };
  m = SHM.exec(path);
  if (m) return { kind: 'shm', cuda: m[1] === 'cuda', region: m[2] === undefined ? undefined : decode(m[2]), action: m[3] as 'status' };
  return undefined;
}

/** `http://authority` or `https://authority` at the start of an absolute-form target, in any case. */
/**
 * route() for paths seen before: clients send the same few paths over and over (one model's infer), and a
 * lookup costs less than the match, the percent-decoding and the new Route each time. Only paths that route
 * are kept, each at most MAX_CACHED_PATH characters and at most `max` of them (the whole cache is dropped when
 * full), so a client sending endless distinct paths costs memory for `max` short entries and no more. The
 * Routes it returns are shared: never to be changed.
 */
/** Longer paths (a model name can be as long as a request line allows) are routed afresh each time. */
const MAX_CACHED_PATH = 256;

export class RouteCache {
  private readonly known = new Map<string, Route>();

  constructor(private readonly max = 1024) {}

  route(path: string): Route | undefined {
    const hit = this.known.get(path);
    if (hit !== undefined) return hit;
    const r = route(path);
    if (r === undefined || path.length > MAX_CACHED_PATH) return r;
    if (this.known.size >= this.max) this.known.clear();
    this.known.set(path, Object.freeze(r));
    return r;
  }
}

/** Percent-decoding; a malformed escape keeps the raw text (which then names no model). */
function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
