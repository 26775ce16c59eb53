import type { TlsFiles } from '../frontends/tls-listener.js';
import type { ServeOptions } from './flags.js';

/**
 * The TLS files of a port from its --<prefix>-use-ssl, -server-cert, -server-key, -root-cert and
 * -use-ssl-mutual flags (Triton's names for gRPC), each one not given taken from `fallback`'s flag of the same
 * name (the OpenAI port takes HTTP's settings). Undefined when the port serves plain text.
 */
export function tlsFiles(opts: ServeOptions, prefix: string, fallback?: string): TlsFiles | undefined {
  const last = (name: string): string | undefined =>
    opts.extra[`${prefix}-${name}`]?.at(-1) ?? (fallback === undefined ? undefined : opts.extra[`${fallback}-${name}`]?.at(-1));
  if (last('use-ssl') !== 'true') return undefined;
  const cert = last('server-cert') ?? '';
  const key = last('server-key') ?? '';
  if (cert === '' || key === '') throw new Error(`--${prefix}-use-ssl needs --${prefix}-server-cert and --${prefix}-server-key`);
  return { cert, key, rootCert: last('root-cert') ?? '', mutual: last('use-ssl-mutual') === 'true' };
}
