import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import protobuf from 'protobufjs';
import { FIXTURES } from './paths.js';

/** A span as the receiver decoded it: ids in hex, attributes and events plain. */
export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly traceState: string;
  readonly name: string;
  readonly kind: number;
  readonly startNs: bigint;
  readonly endNs: bigint;
  readonly attributes: Record<string, unknown>;
  readonly events: { name: string; ns: bigint }[];
  readonly resource: Record<string, unknown>;
}

const root = new protobuf.Root().loadSync(join(FIXTURES, 'otlp', 'trace.proto'), { keepCase: true });
const ExportRequest = root.lookupType('otlp.ExportTraceServiceRequest');
const ExportResponse = root.lookupType('otlp.ExportTraceServiceRequest');

const hex = (b: Uint8Array | undefined): string => (b ? Buffer.from(b).toString('hex') : '');
const ns = (v: unknown): bigint => BigInt(String(v ?? 0));

function value(v: any): unknown {
  if (!v) return undefined;
  if (v.string_value !== undefined) return v.string_value;
  if (v.int_value !== undefined) return Number(v.int_value);
  if (v.bool_value !== undefined) return v.bool_value;
  if (v.double_value !== undefined) return v.double_value;
  return undefined;
}

function attributes(list: any[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of list ?? []) out[kv.key] = value(kv.value);
  return out;
}

/**
 * An OTLP/HTTP trace receiver on loopback: POST /v1/traces with a protobuf ExportTraceServiceRequest body,
 * decoded with message definitions written from the OTLP specification; every span kept in arrival order.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  readonly contentTypes: string[] = [];
  private constructor(private readonly server: Server, readonly url: string) {}

  static async start(): Promise<OtlpReceiver> {
    let receiver: OtlpReceiver | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        receiver!.contentTypes.push(String(req.headers['content-type']));
        const msg = ExportRequest.toObject(ExportRequest.decode(Buffer.concat(chunks)), { longs: String, bytes: Uint8Array as any }) as any;
        for (const rs of msg.resource_spans ?? []) {
          const resource = attributes(rs.resource?.attributes);
          for (const ss of rs.scope_spans ?? []) {
            for (const s of ss.spans ?? []) {
              receiver!.spans.push({
                traceId: hex(s.trace_id), spanId: hex(s.span_id), parentSpanId: hex(s.parent_span_id), traceState: s.trace_state ?? '',
                name: s.name, kind: s.kind ?? 0, startNs: ns(s.start_time_unix_nano), endNs: ns(s.end_time_unix_nano),
                attributes: attributes(s.attributes), events: (s.events ?? []).map((e: any) => ({ name: e.name, ns: ns(e.time_unix_nano) })), resource,
              });
            }
          }
        }
        res.writeHead(200, { 'content-type': 'application/x-protobuf' });
        res.end(Buffer.from(ExportResponse.encode(ExportResponse.create({})).finish()));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const { port } = server.address() as { port: number };
    receiver = new OtlpReceiver(server, `http://127.0.0.1:${port}/v1/traces`);
    return receiver;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
