import { readFileSync } from 'node:fs';
import type { ChannelOptions } from '@grpc/grpc-js';

/** The gRPC frontend's settings: tritonserver's --grpc-* flags, already parsed. */
export interface GrpcOptions {
  port: number;
  address: string;
  keepaliveTimeMs?: number;
  keepaliveTimeoutMs?: number;
  keepalivePermitWithoutCalls?: boolean;
  http2MaxPingsWithoutData?: number;
  http2MinRecvPingIntervalWithoutDataMs?: number;
  http2MaxPingStrikes?: number;
  /** 0 = unset. */
  maxConnectionAgeMs?: number;
  maxConnectionAgeGraceMs?: number;
  /** --grpc-infer-response-compression-level. */
  responseCompressionLevel?: 'none' | 'low' | 'medium' | 'high';
  /** PEM contents (not paths) when serving TLS. */
  ssl?: { cert: Buffer; key: Buffer; rootCert: Buffer | null; mutual: boolean };
  /** --grpc-header-forward-pattern: metadata keys matching it (any case) become request parameters. */
  headerForwardPattern?: string;
  /** --grpc-restricted-protocol groups. */
  restricted?: readonly RestrictedGroup[];
  /** --grpc-max-decompressed-size: the most bytes a compressed request message may inflate to. */
  maxDecompressedSize?: number;
}

export interface RestrictedGroup {
  readonly categories: readonly string[];
  readonly key: string;
  readonly value: string;
}

/** Triton's message size limit in both directions (grpc-js would cap received messages at 4 MiB). */
export const MAX_MESSAGE_SIZE = 2147483647;

/**
 * The default of --grpc-max-decompressed-size, the same as --http-max-input-size's: a compressed message
 * costs the server what it inflates to, not what the client sent.
 */
export const DEFAULT_MAX_DECOMPRESSED_SIZE = 67108864;

/**
 * grpc-js server options from the flags. grpc-js enforces the keepalive time and timeout and the connection
 * ages; the ping policy settings keep grpc core's names, which grpc-js's server does not act on (the command
 * line warns when they are given: cli/grpc-options.ts).
 */
export function channelOptions(o: GrpcOptions): ChannelOptions {
  const c: ChannelOptions = {
    // Nereid serves no channelz service, so grpc-js's channelz bookkeeping (a Date, Date.now() per message and
    // four closures per call) would be work nobody reads.
    'grpc.enable_channelz': 0,
    'grpc.max_receive_message_length': MAX_MESSAGE_SIZE,
    'grpc.max_send_message_length': MAX_MESSAGE_SIZE,
    'grpc.keepalive_time_ms': o.keepaliveTimeMs ?? 7_200_000,
    'grpc.keepalive_timeout_ms': o.keepaliveTimeoutMs ?? 20_000,
    'grpc.keepalive_permit_without_calls': o.keepalivePermitWithoutCalls ? 1 : 0,
    'grpc.http2.max_pings_without_data': o.http2MaxPingsWithoutData ?? 2,
    'grpc.http2.min_ping_interval_without_data_ms': o.http2MinRecvPingIntervalWithoutDataMs ?? 300_000,
    'grpc.http2.max_ping_strikes': o.http2MaxPingStrikes ?? 2,
  };
  if (o.maxConnectionAgeMs) c['grpc.max_connection_age_ms'] = o.maxConnectionAgeMs;
  if (o.maxConnectionAgeGraceMs) c['grpc.max_connection_age_grace_ms'] = o.maxConnectionAgeGraceMs;
  return c;
}

/** PEM files for --grpc-use-ssl, read once at start. */
export function readSslFiles(cert: string, key: string, rootCert: string, mutual: boolean): NonNullable<GrpcOptions['ssl']> {
  return { cert: readFileSync(cert), key: readFileSync(key), rootCert: rootCert === '' ? null : readFileSync(rootCert), mutual };
}
