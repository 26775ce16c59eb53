import { readSslFiles } from '../frontends/grpc/server.js';
import type { GrpcOptions, RestrictedGroup } from '../frontends/grpc/options.js';
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
  if (last('grpc-use-ssl') === 'true') {
    o.ssl = readSslFiles(last('grpc-server-cert') ?? '', last('grpc-server-key') ?? '', last('grpc-root-cert') ?? '', last('grpc-use-ssl-mutual') === 'true');
  }
  return o;
}

/** `<category>[,<category>...]:<key>=<value>`, already checked by the flag parser. */
function restrictedGroup(v: string): RestrictedGroup {
  const colon = v.indexOf(':');
  const eq = v.indexOf('=', colon + 1);
  return { categories: v.slice(0, colon).split(','), key: v.slice(colon + 1, eq), value: v.slice(eq + 1) };
}
