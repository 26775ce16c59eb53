import { readSslFiles, type GrpcOptions, type RestrictedGroup } from '../frontends/grpc/options.js';
import type { ServeOptions } from './flags.js';

/** The gRPC frontend's options from `nereid serve` flags (the --grpc-* flags kept in `extra` included). */
export function grpcOptions(opts: ServeOptions): GrpcOptions {
  const last = (flag: string): string | undefined => opts.extra[flag]?.at(-1);
  const int = (flag: string): number | undefined => {
    const v = last(flag);
    return v === undefined ? undefined : Number(v);
  };
  const o: GrpcOptions = { port: opts.grpc.port, address: opts.grpc.address };
  o.keepaliveTimeMs = int('grpc-keepalive-time');
  o.keepaliveTimeoutMs = int('grpc-keepalive-timeout');
  o.keepalivePermitWithoutCalls = last('grpc-keepalive-permit-without-calls') === 'true';
  o.http2MaxPingsWithoutData = int('grpc-http2-max-pings-without-data');
  o.http2MinRecvPingIntervalWithoutDataMs = int('grpc-http2-min-recv-ping-interval-without-data');
  o.http2MaxPingStrikes = int('grpc-http2-max-ping-strikes');
  o.maxConnectionAgeMs = int('grpc-max-connection-age');
  o.maxConnectionAgeGraceMs = int('grpc-max-connection-age-grace');
  o.responseCompressionLevel = last('grpc-infer-response-compression-level') as GrpcOptions['responseCompressionLevel'];
  o.headerForwardPattern = last('grpc-header-forward-pattern');
  o.restricted = (opts.extra['grpc-restricted-protocol'] ?? []).map(restrictedGroup);
  o.maxDecompressedSize = int('grpc-max-decompressed-size');
  if (last('grpc-use-ssl') === 'true') {
    o.ssl = readSslFiles(last('grpc-server-cert') ?? '', last('grpc-server-key') ?? '', last('grpc-root-cert') ?? '', last('grpc-use-ssl-mutual') === 'true');
  }
  return o;
}

/**
 * Warnings for --grpc-* flags given on the command line that the gRPC frontend and Node.js cannot honour, so
 * that a setting carried over from a tritonserver command line is never dropped without a word. The server
 * sends its keepalive pings whether or not calls are in flight and data flows, and answers every client ping
 * (Node's HTTP/2 layer acknowledges them); it has no ping-strike policy. Triton's allocation, response and
 * thread pools have no counterpart in a Node.js server, and Node.js 20 cannot share a listening port.
 */
export function grpcFlagWarnings(opts: ServeOptions): string[] {
  const given = (flag: string): string | undefined => opts.extra[flag]?.at(-1);
  const out: string[] = [];
  const ignored = (flag: string, why: string): void => {
    out.push(`--${flag}=${given(flag)!} has no effect: ${why}`);
  };
  if (given('reuse-grpc-port') === 'true') {
    ignored('reuse-grpc-port', 'Node.js 20 cannot share a listening port between processes, so the gRPC port is bound by this server alone');
  }
  if (given('grpc-keepalive-permit-without-calls') === 'false') {
    ignored('grpc-keepalive-permit-without-calls', 'the gRPC server sends keepalive pings and accepts client pings whether or not calls are in flight');
  }
  const pings = given('grpc-http2-max-pings-without-data');
  if (pings !== undefined && pings !== '0') {
    ignored('grpc-http2-max-pings-without-data', 'the gRPC server does not limit the keepalive pings it sends while no data flows');
  }
  const strikes = given('grpc-http2-max-ping-strikes');
  if (strikes !== undefined && strikes !== '0') {
    ignored('grpc-http2-max-ping-strikes', 'the gRPC server answers every client ping and never closes a connection for pinging too often');
  }
  if (given('grpc-http2-min-recv-ping-interval-without-data') !== undefined) {
    ignored('grpc-http2-min-recv-ping-interval-without-data', 'the gRPC server answers every client ping and never closes a connection for pinging too often');
  }
  for (const flag of ['grpc-infer-allocation-pool-size', 'grpc-max-response-pool-size', 'grpc-infer-thread-count']) {
    if (given(flag) !== undefined) ignored(flag, 'the gRPC server runs on the Node.js event loop and keeps no thread or object pools to size');
  }
  return out;
}

/** `<category>[,<category>...]:<key>=<value>`, already checked by the flag parser. */
export function restrictedGroup(v: string): RestrictedGroup {
  const colon = v.indexOf(':');
  const eq = v.indexOf('=', colon + 1);
  return { categories: v.slice(0, colon).split(','), key: v.slice(colon + 1, eq), value: v.slice(eq + 1) };
}
