import http2, { type Http2Server, type Http2Session, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import { ServerCall, type CallSettings } from './call.js';
import { Status, type CallStatus } from './codes.js';
import { ACCEPT_ENCODING, isSupportedEncoding } from './compression.js';
import type { GrpcOptions } from './options.js';

/**
 * gRPC over HTTP/2 (grpc/doc/PROTOCOL-HTTP2.md) on node:http2: each POST to /<service>/<method> with content
 * type application/grpc is a call of the method registered at that path. The transport reads the request's
 * headers (deadline, message encoding) and leaves the messages and the status to the method; it holds the
 * connections' settings, keepalive pings and maximum age.
 */

/** A unary method gets its one request message; a streaming method reads its own messages from the call. */
export type Method =
  | { readonly kind: 'unary'; handle(call: ServerCall, message: Buffer): void }
  | { readonly kind: 'stream'; handle(call: ServerCall): void };

export interface TransportLimits extends CallSettings {
  /** Streams a connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS). */
  readonly maxConcurrentStreams: number;
  /** The largest header block a request may send (SETTINGS_MAX_HEADER_LIST_SIZE): metadata is bounded. */
  readonly maxHeaderListBytes: number;
}

export interface Transport {
  readonly port: number;
  /** Stops accepting connections, lets open calls finish for `graceMs`, then closes what is left. */
  close(graceMs: number): Promise<void>;
}

/**
 * HTTP/2 flow-control windows: the protocol's default of 64 KiB per stream and connection makes a message of
 * a few hundred KiB wait for window updates; a larger window lets a request arrive in one go.
 */
const STREAM_WINDOW = 1 << 20;
const CONNECTION_WINDOW = 8 << 20;

export async function listen(routes: ReadonlyMap<string, Method>, limits: TransportLimits, o: GrpcOptions): Promise<Transport> {
  const settings = {
    maxConcurrentStreams: limits.maxConcurrentStreams,
    maxHeaderListSize: limits.maxHeaderListBytes,
    initialWindowSize: STREAM_WINDOW,
    enablePush: false,
  };
  // Node's cap on a session's buffered memory would refuse new streams while large messages are in flight;
  // the limits above bound what a client can make the server hold instead.
  const common = { settings, maxSessionMemory: 1 << 16, maxSendHeaderBlockLength: 1 << 20 };
  const server: Http2Server = o.ssl
    ? http2.createSecureServer({
      ...common, cert: o.ssl.cert, key: o.ssl.key, ...(o.ssl.rootCert ? { ca: o.ssl.rootCert } : {}),
      requestCert: o.ssl.mutual, rejectUnauthorized: o.ssl.mutual,
    })
    : http2.createServer(common);
  const sessions = new Set<Http2Session>();
  server.on('session', (session) => watchSession(session, sessions, o));
  server.on('stream', (stream, headers) => dispatch(stream, headers, routes, limits));
  // A broken connection or a client that is not HTTP/2 ends only its own session.
  server.on('sessionError', ignore);
  server.on('tlsClientError', ignore);
  server.on('error', ignore);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, hostPart(o.address), () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address !== null ? address.port : o.port,
    close: (graceMs) => closeServer(server, sessions, graceMs),
  };
}

function dispatch(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, routes: ReadonlyMap<string, Method>, limits: TransportLimits): void {
  stream.on('error', ignore);
  const contentType = headers['content-type'];
  if (headers[':method'] !== 'POST' || typeof contentType !== 'string' || !contentType.startsWith('application/grpc')) {
    // Not a gRPC request: an HTTP answer, as the spec asks of a server (415 for a wrong content type).
    stream.respond({ ':status': headers[':method'] !== 'POST' ? 405 : 415 }, { endStream: true });
    return;
  }
  const encoding = headers['grpc-encoding'];
  const call = new ServerCall(stream, headers, limits, typeof encoding === 'string' ? encoding : 'identity');
  const path = headers[':path'] ?? '';
  const method = routes.get(path);
  if (method === undefined) {
    call.end({ code: Status.UNIMPLEMENTED, details: `The server does not implement the method ${path}` });
    return;
  }
  if (typeof encoding === 'string' && !isSupportedEncoding(encoding)) {
    call.end({ code: Status.UNIMPLEMENTED, details: `Unsupported grpc-encoding "${encoding}"; accepted: ${ACCEPT_ENCODING}` });
    return;
  }
  const timeout = headers['grpc-timeout'];
  if (timeout !== undefined) {
    const ms = timeoutMs(String(timeout));
    if (ms === undefined) {
      call.end({ code: Status.INTERNAL, details: `Invalid grpc-timeout value "${String(timeout)}"` });
      return;
    }
    // A deadline past what a timer can hold (about 24 days) is no deadline.
    if (ms < 2 ** 31) call.setDeadline(ms);
  }
  if (method.kind === 'stream') method.handle(call);
  else readUnary(call, method);
}

/** A unary call's one message, delivered once the client has half-closed. */
function readUnary(call: ServerCall, method: Extract<Method, { kind: 'unary' }>): void {
  let message: Buffer | null = null;
  let count = 0;
  call.read(
    (m) => {
      if (++count === 1) message = m;
    },
    () => {
      if (count === 1) method.handle(call, message!);
      else call.end(count === 0 ? NO_MESSAGE : SECOND_MESSAGE);
    },
  );
}

const NO_MESSAGE: CallStatus = { code: Status.UNIMPLEMENTED, details: 'Received no request message for a unary method' };
const SECOND_MESSAGE: CallStatus = { code: Status.UNIMPLEMENTED, details: 'Received a second request message for a unary method' };

const TIMEOUT_UNITS: Readonly<Record<string, number>> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

/** grpc-timeout: at most 8 digits and a unit (hours to nanoseconds), in milliseconds; undefined when malformed. */
export function timeoutMs(v: string): number | undefined {
  const m = /^(\d{1,8})([HMSmun])$/.exec(v);
  return m === null ? undefined : Math.ceil(Number(m[1]) * TIMEOUT_UNITS[m[2]!]!);
}

/**
 * A connection's keepalive and age (--grpc-keepalive-time/-timeout, --grpc-max-connection-age/-grace): a PING
 * every keepalive time, the connection dropped when one goes unanswered for the keepalive timeout; at the
 * maximum age (jittered by up to 10 % either way, so that clients do not reconnect together) a GOAWAY, then
 * the grace period for calls in flight.
 */
function watchSession(session: Http2Session, sessions: Set<Http2Session>, o: GrpcOptions): void {
  sessions.add(session);
  session.on('error', ignore);
  session.setLocalWindowSize(CONNECTION_WINDOW);
  const timers: NodeJS.Timeout[] = [];
  session.once('close', () => {
    sessions.delete(session);
    for (const t of timers) clearTimeout(t);
  });
  const keepaliveMs = o.keepaliveTimeMs ?? 7_200_000;
  const keepaliveTimeoutMs = o.keepaliveTimeoutMs ?? 20_000;
  if (keepaliveMs > 0 && keepaliveMs < 2 ** 31) {
    timers.push(setInterval(() => {
      const dead = setTimeout(() => session.destroy(), keepaliveTimeoutMs);
      dead.unref();
      const sent = session.ping((err) => {
        clearTimeout(dead);
        if (err) session.destroy();
      });
      if (!sent) clearTimeout(dead);
    }, keepaliveMs).unref());
  }
  const ageMs = o.maxConnectionAgeMs;
  if (ageMs !== undefined && ageMs > 0 && ageMs < 2 ** 31) {
    const jittered = ageMs * (0.9 + 0.2 * Math.random());
    timers.push(setTimeout(() => {
      goaway(session);
      const graceMs = o.maxConnectionAgeGraceMs;
      if (graceMs !== undefined && graceMs > 0 && graceMs < 2 ** 31) timers.push(setTimeout(() => session.destroy(), graceMs).unref());
    }, jittered).unref());
  }
}

/** GOAWAY naming the last stream as processed, so calls in flight finish; then no new streams. */
function goaway(session: Http2Session): void {
  if (session.closed || session.destroyed) return;
  session.goaway(http2.constants.NGHTTP2_NO_ERROR, 2 ** 31 - 1);
  session.close();
}

async function closeServer(server: Http2Server, sessions: Set<Http2Session>, graceMs: number): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  for (const s of sessions) goaway(s);
  const force = setTimeout(() => {
    for (const s of sessions) s.destroy();
  }, graceMs);
  await closed;
  clearTimeout(force);
}

/** An IPv6 literal without its brackets, as listen() takes it. */
function hostPart(address: string): string {
  return address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
}

function ignore(): void {}
