import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import { createServer as createPlainServer, type RequestListener, type Server, type ServerOptions } from 'node:http';
import { createServer as createSecureServer } from 'node:https';
import type { Socket } from 'node:net';
import tls from 'node:tls';

/**
 * TLS for the HTTP, OpenAI and gRPC ports (--http-use-ssl, --grpc-use-ssl and the like): the PEM files a port
 * serves, reloaded when they change so that certificates rotate without a restart, TLS 1.2 at least, and
 * bounds on what a client can hold before its handshake is done.
 */

/** The PEM files of one port; rootCert '' when client certificates are not checked against a root of its own. */
export interface TlsFiles {
  readonly cert: string;
  readonly key: string;
  readonly rootCert: string;
  /** Client certificates are required (--*-use-ssl-mutual). */
  readonly mutual: boolean;
}

/** A handshake not finished in this time ends its connection (Node's default is two minutes). */
export const HANDSHAKE_TIMEOUT_MS = 10_000;

/**
 * Connections one port keeps in their handshake at once; a new one past it ends the oldest. A client that
 * opens many connections and stops mid-handshake holds at most this many, and a client that completes its
 * handshake promptly is never the oldest for long.
 */
export const MAX_PENDING_HANDSHAKES = 256;

/** How often the PEM files' modification times are looked at (a stat each; works with renamed-in files). */
export const RELOAD_POLL_MS = 1000;

export interface TlsLimits {
  readonly handshakeTimeoutMs: number;
  readonly maxPendingHandshakes: number;
}

export const DEFAULT_TLS_LIMITS: TlsLimits = { handshakeTimeoutMs: HANDSHAKE_TIMEOUT_MS, maxPendingHandshakes: MAX_PENDING_HANDSHAKES };

/** The certificate, key and root of `files`, read now; throws when one cannot be read. */
export function secureContextOptions(files: TlsFiles): tls.SecureContextOptions {
  const ca = files.rootCert === '' ? {} : { ca: readFileSync(files.rootCert) };
  return { cert: readFileSync(files.cert), key: readFileSync(files.key), ...ca, minVersion: 'TLSv1.2' };
}

/** Options for a TLS server of `files` (https.createServer's or tls.createServer's). */
export function tlsServerOptions(files: TlsFiles, limits: TlsLimits = DEFAULT_TLS_LIMITS): tls.TlsOptions {
  return {
    ...secureContextOptions(files),
    requestCert: files.mutual,
    rejectUnauthorized: files.mutual,
    handshakeTimeout: limits.handshakeTimeoutMs,
  };
}

/**
 * Guards a TLS server: a failed or timed-out handshake ends its connection (Node leaves it open once a
 * 'tlsClientError' listener exists), at most `limits.maxPendingHandshakes` connections wait in their handshake,
 * and the PEM files are reloaded for new connections when they change. A reload that fails (a file missing, or
 * a certificate written before its key) keeps the previous ones and is reported through `warn`; the next
 * change tries again. Returns what stops the watching.
 */
export function guardTlsServer(server: tls.Server, files: TlsFiles, limits: TlsLimits, warn: (message: string) => void): () => void {
  server.on('tlsClientError', (_err, socket) => socket.destroy());
  boundHandshakes(server, limits.maxPendingHandshakes);
  return reloadOnChange(server, files, warn);
}

/**
 * An HTTP/1.1 server, over TLS when `files` are given (guarded as guardTlsServer says). `stop` ends the
 * watching of the files; it is a no-op for a plain server.
 */
export function createHttpServer(options: ServerOptions, files: TlsFiles | undefined, listener: RequestListener,
  warn: (message: string) => void, limits: TlsLimits = DEFAULT_TLS_LIMITS): { server: Server; stop: () => void } {
  if (files === undefined) return { server: createPlainServer(options, listener), stop: noop };
  const server = createSecureServer({ ...options, ...tlsServerOptions(files, limits), ALPNProtocols: ['http/1.1'] }, listener);
  return { server, stop: guardTlsServer(server, files, limits, warn) };
}

function noop(): void {
  // Nothing to stop.
}

function boundHandshakes(server: tls.Server, max: number): void {
  // Insertion-ordered: the first is the oldest. Registered after the TLS server's own 'connection' listener.
  const pending = new Set<Socket>();
  server.on('connection', (raw: Socket) => {
    if (pending.size >= max) {
      const oldest = pending.values().next().value as Socket;
      pending.delete(oldest);
      oldest.destroy();
    }
    pending.add(raw);
    raw.once('close', () => pending.delete(raw));
  });
  server.on('secureConnection', (socket: tls.TLSSocket) => {
    // The TLS socket keeps the connection it wraps as _parent.
    const raw = (socket as unknown as { _parent?: Socket })._parent;
    if (raw !== undefined) pending.delete(raw);
  });
}

function reloadOnChange(server: tls.Server, files: TlsFiles, warn: (message: string) => void): () => void {
  const paths = [...new Set([files.cert, files.key, files.rootCert].filter((p) => p !== ''))];
  const reload = (): void => {
    try {
      server.setSecureContext(secureContextOptions(files));
    } catch (e) {
      warn(`TLS certificate or key not reloaded, the previous ones stay in use: ${(e as Error).message}`);
    }
  };
  const onChange = (now: { mtimeMs: number }, before: { mtimeMs: number }): void => {
    if (now.mtimeMs !== before.mtimeMs && now.mtimeMs !== 0) reload();
  };
  for (const p of paths) watchFile(p, { persistent: false, interval: RELOAD_POLL_MS }, onChange);
  return () => {
    for (const p of paths) unwatchFile(p, onChange);
  };
}
