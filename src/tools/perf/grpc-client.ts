/**
 * The perf client's connection to GRPCInferenceService: the messages of proto/ loaded with protobufjs, a few
 * node:http2 sessions that calls are spread over, and unary calls for everything but inference.
 */
import http2 from 'node:http2';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import type { TlsOptions } from './options.js';
import { Deframer, frame, statusError } from './grpc-framing.js';

const SERVICE = '/inference.GRPCInferenceService/';
const PROTO_DIR = new URL('../../../../proto/', import.meta.url);
const TO_OBJECT = { longs: Number, enums: String, bytes: String, defaults: false, arrays: true };

/** A message type of proto/grpc_service.proto as protobufjs loads it: the perf client imports protobufjs here only. */
export type MessageType = protobuf.Type;

export interface GrpcClientOptions {
  readonly url: string;
  readonly concurrency: number;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly tls: TlsOptions | undefined;
}

export class GrpcClient {
  private readonly root = new protobuf.Root();
  private readonly authority: string;
  private readonly tlsOptions: http2.SecureClientSessionOptions;
  private readonly sessions: http2.ClientHttp2Session[] = [];
  private readonly sessionCount: number;
  private readonly extraHeaders: Record<string, string>;
  private next = 0;

  constructor(o: GrpcClientOptions) {
    this.root.loadSync(fileURLToPath(new URL('grpc_service.proto', PROTO_DIR)), { keepCase: true });
    this.root.resolveAll();
    this.authority = `${o.tls ? 'https' : 'http'}://${o.url}`;
    this.tlsOptions = o.tls
      ? { ca: o.tls.ca ? readFileSync(o.tls.ca) : undefined, cert: o.tls.cert ? readFileSync(o.tls.cert) : undefined, key: o.tls.key ? readFileSync(o.tls.key) : undefined }
      : {};
    // About 64 streams a session stays below the usual limit of 100 concurrent streams.
    this.sessionCount = Math.max(1, Math.ceil(o.concurrency / 64));
    this.extraHeaders = Object.fromEntries(o.headers);
  }

  /** A message type of the package `inference`. */
  type(name: string): MessageType {
    return this.root.lookupType(`inference.${name}`);
  }

  /** The next session in turn, connected again when it has closed. */
  session(): http2.ClientHttp2Session {
    const i = this.next++ % this.sessionCount;
    let s = this.sessions[i];
    if (!s || s.closed || s.destroyed) {
      s = http2.connect(this.authority, this.tlsOptions);
      s.on('error', () => undefined);
      this.sessions[i] = s;
    }
    return s;
  }

  headersFor(method: string): http2.OutgoingHttpHeaders {
    return { ...this.extraHeaders, ':method': 'POST', ':path': SERVICE + method, 'content-type': 'application/grpc', te: 'trailers' };
  }

  unary(method: string, requestType: string, responseType: string, body: object): Promise<Record<string, unknown>> {
    const reqT = this.type(requestType);
    const resT = this.type(responseType);
    return new Promise((resolve, reject) => {
      const st = this.session().request(this.headersFor(method));
      const chunks: Buffer[] = [];
      let err: string | null = null;
      st.on('response', (h) => (err = statusError(h)));
      st.on('data', (c: Buffer) => chunks.push(c));
      st.on('trailers', (h) => (err = err ?? statusError(h)));
      st.on('error', (e) => reject(e));
      st.on('close', () => {
        if (err !== null) return reject(new Error(err));
        let msg: Buffer | undefined;
        new Deframer().push(Buffer.concat(chunks), (m) => (msg = m));
        if (!msg) return reject(new Error(`${method}: no response message`));
        resolve(resT.toObject(resT.decode(msg), TO_OBJECT) as Record<string, unknown>);
      });
      st.end(frame(reqT.encode(reqT.fromObject(body)).finish()));
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.sessions.map((s) => new Promise<void>((r) => (s.closed ? r() : s.close(() => r())))));
  }
}
