import net, { type Server, type Socket } from 'node:net';
import tls from 'node:tls';
import { limitExceeded } from '../../errors.js';
import { ServerCall, type CallSettings } from './call.js';
import { Status, type CallStatus } from './codes.js';
import { ACCEPT_ENCODING, isSupportedEncoding } from './compression.js';
import { Http2Connection, type ConnectionSettings } from './http2/connection.js';
import { encodeBlock } from './http2/hpack.js';
import type { Http2Stream } from './http2/stream.js';
import type { GrpcOptions } from './options.js';
import { DEFAULT_TLS_LIMITS, guardTlsServer, tlsServerOptions } from '../tls-listener.js';

/**
 * gRPC over HTTP/2 (grpc/doc/PROTOCOL-HTTP2.md) on the HTTP/2 layer in http2/: each POST to /<service>/<method>
 * with content type application/grpc is a call of the method registered at that path. The transport reads the
 * request's headers (deadline, message encoding) and leaves the messages and the status to the method; it
 * holds the connections, their keepalive pings and maximum age.
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

export async function listen(routes: ReadonlyMap<string, Method>, limits: TransportLimits, o: GrpcOptions,
  warn: (message: string) => void): Promise<Transport> {
  const settings: ConnectionSettings = {
    maxConcurrentStreams: limits.maxConcurrentStreams,
    maxHeaderListBytes: limits.maxHeaderListBytes,
    streamWindow: STREAM_WINDOW,
    connectionWindow: CONNECTION_WINDOW,
  };
  const connections = new Set<Http2Connection>();
  const accept = (socket: Socket): void => {
    const connection = new Http2Connection(socket, settings, (stream) => dispatch(stream, routes, limits));
    connections.add(connection);
    const stop = watchConnection(connection, o);
    connection.onClose = () => {
      connections.delete(connection);
      stop();
    };
  };
  const secure = o.ssl === undefined ? undefined : tls.createServer({ ...tlsServerOptions(o.ssl), ALPNProtocols: ['h2'] }, accept);
  const server: Server = secure ?? net.createServer(accept);
  // A client that fails the TLS handshake ends only its own connection; rotated files are loaded.
  const stopWatching = secure === undefined ? undefined : guardTlsServer(secure, o.ssl!, DEFAULT_TLS_LIMITS, warn);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, hostPart(o.address), () => {
      server.off('error', reject);
      server.on('error', ignore);
      resolve();
    });
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address !== null ? address.port : o.port,
    close: (graceMs) => {
      stopWatching?.();
      return closeServer(server, connections, graceMs);
    },
  };
}

/** Answers to requests that are not gRPC: an HTTP status, as the spec asks of a server. */
const NOT_POST = encodeBlock([[':status', '405']]);
const NOT_GRPC = encodeBlock([[':status', '415']]);

function dispatch(stream: Http2Stream, routes: ReadonlyMap<string, Method>, limits: TransportLimits): void {
  const headers = stream.headers;
  if (stream.headerListSize > limits.maxHeaderListBytes) {
    // Its fields past the limit were dropped, so the call is answered without reading them.
    new ServerCall(stream, limits, 'identity').fail(limitExceeded('RESOURCE_EXHAUSTED', 'grpc-header-list-size',
      `Header list size ${stream.headerListSize} exceeds the limit of ${limits.maxHeaderListBytes} bytes`));
    return;
  }
  const contentType = headers['content-type'];
  if (headers[':method'] !== 'POST' || contentType === undefined || !contentType.startsWith('application/grpc')) {
    stream.respond(headers[':method'] !== 'POST' ? NOT_POST : NOT_GRPC, true);
    return;
  }
  const encoding = headers['grpc-encoding'];
  const call = new ServerCall(stream, limits, encoding ?? 'identity');
  const path = headers[':path'] ?? '';
  const method = routes.get(path);
  if (method === undefined) {
    call.end({ code: Status.UNIMPLEMENTED, details: `The server does not implement the method ${path}` });
    return;
  }
  if (encoding !== undefined && !isSupportedEncoding(encoding)) {
    call.end({ code: Status.UNIMPLEMENTED, details: `Unsupported grpc-encoding "${encoding}"; accepted: ${ACCEPT_ENCODING}` });
    return;
  }
  const timeout = headers['grpc-timeout'];
  if (timeout !== undefined) {
    const ms = timeoutMs(timeout);
    if (ms === undefined) {
      call.end({ code: Status.INTERNAL, details: `Invalid grpc-timeout value "${timeout}"` });
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
 * the grace period for calls in flight. Returns what stops the timers.
 */
function watchConnection(connection: Http2Connection, o: GrpcOptions): () => void {
  const timers: NodeJS.Timeout[] = [];
  const keepaliveMs = o.keepaliveTimeMs ?? 7_200_000;
  const keepaliveTimeoutMs = o.keepaliveTimeoutMs ?? 20_000;
  if (keepaliveMs > 0 && keepaliveMs < 2 ** 31) {
    timers.push(setInterval(() => {
      const dead = setTimeout(() => connection.destroy(), keepaliveTimeoutMs).unref();
      connection.ping((err) => {
        clearTimeout(dead);
        if (err) connection.destroy();
      });
    }, keepaliveMs).unref());
  }
  const ageMs = o.maxConnectionAgeMs;
  if (ageMs !== undefined && ageMs > 0 && ageMs < 2 ** 31) {
    const jittered = ageMs * (0.9 + 0.2 * Math.random());
    timers.push(setTimeout(() => {
      connection.goaway();
      const graceMs = o.maxConnectionAgeGraceMs;
      if (graceMs !== undefined && graceMs > 0 && graceMs < 2 ** 31) timers.push(setTimeout(() => connection.destroy(), graceMs).unref());
    }, jittered).unref());
  }
  return () => {
    for (const t of timers) clearTimeout(t);
  };
}

/** Stops accepting, sends every connection away (calls in flight finish), and closes what is left after `graceMs`. */
async function closeServer(server: Server, connections: Set<Http2Connection>, graceMs: number): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  for (const c of connections) c.goaway();
  const force = setTimeout(() => {
    for (const c of connections) c.destroy();
  }, graceMs);
  await closed;
  clearTimeout(force);
}

/** An IPv6 literal without its brackets, as listen() takes it. */
function hostPart(address: string): string {
  return address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
}

function ignore(): void {}
