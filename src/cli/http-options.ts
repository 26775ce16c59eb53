import type { HttpOptions } from '../frontends/http/server.js';
import { isLoopback } from '../frontends/http/console.js';
import type { OpenAiOptions } from '../frontends/openai/server.js';
import { DEFAULT_STORE_BOUNDS, MAX_ENTRY_CHARS, type TextStore } from '../frontends/openai/responses-store.js';
import { parseRedisUrl, redact } from '../scheduler/sequence-store-redis.js';
import type { ServeOptions } from './flags.js';
import { restrictedGroup } from './grpc-options.js';
import { tlsFiles } from './tls-options.js';

/** The HTTP frontend's options from `nereid serve` flags (the --http-* flags kept in `extra` included). */
export function httpOptions(opts: ServeOptions): HttpOptions {
  const o: HttpOptions = { port: opts.http.port, address: opts.http.address, maxInputSize: opts.http.maxInputSize };
  const restricted = (opts.extra['http-restricted-api'] ?? []).map(restrictedGroup);
  if (restricted.length > 0) o.restricted = restricted;
  const pattern = opts.extra['http-header-forward-pattern']?.at(-1);
  if (pattern) o.headerForwardPattern = pattern;
  const tls = tlsFiles(opts, 'http');
  if (tls !== undefined) o.tls = tls;
  const console = opts.extra['allow-console']?.at(-1);
  o.console = console === undefined ? isLoopback(opts.http.address) : console === 'true';
  return o;
}

/** The OpenAI frontend's options: HTTP's body limit, and HTTP's TLS settings where its own --openai-* are not given. */
export function openAiOptions(opts: ServeOptions): OpenAiOptions {
  const o: OpenAiOptions = { ...opts.openai, maxInputSize: opts.http.maxInputSize };
  const tls = tlsFiles(opts, 'openai', 'http');
  if (tls !== undefined) o.tls = tls;
  return o;
}

/** Warnings for --http-* flags given on the command line that Node.js cannot honour (see grpcFlagWarnings). */
export function httpFlagWarnings(opts: ServeOptions): string[] {
  const out: string[] = [];
  const reuse = opts.extra['reuse-http-port']?.at(-1);
  if (reuse === 'true') {
    out.push('--reuse-http-port=true has no effect: Node.js 20 cannot share a listening port between processes, so the HTTP port is bound by this server alone');
  }
  const threads = opts.extra['http-thread-count']?.at(-1);
  if (threads !== undefined) out.push(`--http-thread-count=${threads} has no effect: the HTTP server runs on the Node.js event loop and keeps no thread pool to size`);
  return out;
}

/** --openai-response-store: the Redis the Responses API keeps stored responses in (undefined: in memory), bounded as the memory store is. */
export async function openAiResponseStore(opts: ServeOptions): Promise<TextStore | undefined> {
  const url = opts.openai.responseStoreUrl;
  if (url === undefined || url === '') return undefined;
  const flag = '--openai-response-store';
  const { RedisTextStore } = await import('../cache/redis-text-store.js');
  return RedisTextStore.connect({
    ...parseRedisUrl(url, flag), prefix: 'nereid:resp:', setting: `${flag} ${redact(url)}`,
    maxEntries: DEFAULT_STORE_BOUNDS.maxEntries, maxEntryChars: MAX_ENTRY_CHARS, ttlMs: DEFAULT_STORE_BOUNDS.ttlMs,
  });
}
