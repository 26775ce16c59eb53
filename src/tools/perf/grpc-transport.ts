/**
 * KServe v2 over gRPC, on node:http2 with the messages of proto/ encoded by protobufjs: requests are encoded and
 * framed once; what differs per request (id, sequence parameters) is a second encoded fragment appended to the
 * first, which protobuf's merge rule makes one message. Unary calls are one HTTP/2 stream each, spread over a few
 * sessions; --streaming keeps one ModelStreamInfer stream per request slot.
 */
import http2 from 'node:http2';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { modelInfoFrom, type ModelInfo } from './model-info.js';
import type { TlsOptions } from './options.js';
import { sumStats, type Completion, type Prepared, type RequestSpec, type SequenceStep, type ServerStats, type Transport } from './transport.js';

const SERVICE = '/inference.GRPCInferenceService/';
const PROTO_DIR = new URL('../../../../proto/', import.meta.url);

interface GrpcPrepared {
  /** The encoded ModelInferRequest without its 5-byte prefix. */
  readonly message: Buffer;
  readonly framed: Buffer;
  readonly streaming: boolean;
}

export interface GrpcTransportOptions {
  readonly url: string;
  readonly model: string;
  readonly version: string;
  readonly concurrency: number;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly tls: TlsOptions | undefined;
}

function frame(message: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

/** Splits received bytes into gRPC messages, keeping a partial one for the next chunk. */
class Deframer {
  private pending: Buffer = Buffer.alloc(0);
  push(chunk: Buffer, each: (m: Buffer) => void): void {
    let buf = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    while (buf.length >= 5) {
      const n = buf.readUInt32BE(1);
      if (buf.length < 5 + n) break;
      each(buf.subarray(5, 5 + n));
      buf = buf.subarray(5 + n);
    }
    this.pending = buf;
  }
}

function statusError(h: http2.IncomingHttpHeaders): string | null {
  const status = h['grpc-status'];
  if (status === undefined || status === '0') return null;
  const msg = h['grpc-message'];
  return decodeURIComponent(String(msg ?? `gRPC status ${String(status)}`));
}

export function createGrpcTransport(o: GrpcTransportOptions): Transport {
  const root = new protobuf.Root();
  root.loadSync(fileURLToPath(new URL('grpc_service.proto', PROTO_DIR)), { keepCase: true });
  root.resolveAll();
  const T = (n: string): protobuf.Type => root.lookupType(`inference.${n}`);
  const InferRequest = T('ModelInferRequest');
  const StreamResponse = T('ModelStreamInferResponse');
  const toObject = { longs: Number, enums: String, bytes: String, defaults: false, arrays: true };
  const authority = `${o.tls ? 'https' : 'http'}://${o.url}`;
  const tlsOptions = o.tls
    ? { ca: o.tls.ca ? readFileSync(o.tls.ca) : undefined, cert: o.tls.cert ? readFileSync(o.tls.cert) : undefined, key: o.tls.key ? readFileSync(o.tls.key) : undefined }
    : {};
  const sessions: http2.ClientHttp2Session[] = [];
  // About 64 streams a session stays below the usual limit of 100 concurrent streams.
  const sessionCount = Math.max(1, Math.ceil(o.concurrency / 64));
  let next = 0;
  const connect = (): http2.ClientHttp2Session => {
    const s = http2.connect(authority, tlsOptions);
    s.on('error', () => undefined);
    return s;
  };
  const session = (): http2.ClientHttp2Session => {
    const i = next++ % sessionCount;
    let s = sessions[i];
    if (!s || s.closed || s.destroyed) sessions[i] = s = connect();
    return s;
  };
  const extra = Object.fromEntries(o.headers);
  const headersFor = (method: string): http2.OutgoingHttpHeaders => ({
    ...extra,
    ':method': 'POST',
    ':path': SERVICE + method,
    'content-type': 'application/grpc',
    te: 'trailers',
  });
  const inferHeaders = headersFor('ModelInfer');
  const streamHeaders = headersFor('ModelStreamInfer');

  function unary(method: string, requestType: string, responseType: string, body: object): Promise<Record<string, unknown>> {
    const reqT = T(requestType);
    const resT = T(responseType);
    return new Promise((resolve, reject) => {
      const st = session().request(headersFor(method));
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
        resolve(resT.toObject(resT.decode(msg), toObject) as Record<string, unknown>);
      });
      st.end(frame(reqT.encode(reqT.fromObject(body)).finish()));
    });
  }

  /** One ModelStreamInfer stream; requests on it are matched to responses by id. */
  class Stream {
    private readonly st: http2.ClientHttp2Stream;
    private readonly waiting = new Map<string, Completion>();
    private readonly deframer = new Deframer();
    private seq = 0;
    constructor() {
      this.st = session().request(streamHeaders);
      this.st.on('data', (c: Buffer) => this.deframer.push(c, (m) => this.onMessage(m)));
      const fail = (why: string): void => {
        for (const c of this.waiting.values()) c.done(why);
        this.waiting.clear();
      };
      this.st.on('trailers', (h) => fail(statusError(h) ?? 'stream ended'));
      this.st.on('error', (e) => fail(e.message));
      this.st.on('close', () => fail('stream closed'));
    }
    send(p: GrpcPrepared, seq: SequenceStep | undefined, c: Completion): void {
      const id = `${++this.seq}`;
      this.waiting.set(id, c);
      this.st.write(frame(Buffer.concat([p.message, suffix(id, seq)])));
    }
    private onMessage(m: Buffer): void {
      const r = StreamResponse.decode(m) as unknown as { error_message?: string; infer_response?: { id?: string; parameters?: Record<string, { bool_param?: boolean }> } };
      const id = r.infer_response?.id ?? '';
      const c = this.waiting.get(id) ?? (this.waiting.size === 1 ? this.waiting.values().next().value : undefined);
      if (!c) return;
      const key = this.waiting.has(id) ? id : this.waiting.keys().next().value!;
      if (r.error_message) {
        this.waiting.delete(key);
        c.done(r.error_message);
        return;
      }
      const finalParam = r.infer_response?.parameters?.triton_final_response;
      const isFinal = finalParam === undefined ? !decoupled : finalParam.bool_param === true;
      const empty = finalParam !== undefined && isFinal && ((r.infer_response as { outputs?: unknown[] }).outputs?.length ?? 0) === 0;
      if (!empty) c.response();
      if (isFinal) {
        this.waiting.delete(key);
        c.done(null);
      }
    }
    close(): void {
      this.st.end();
    }
  }

  function suffix(id: string, seq: SequenceStep | undefined): Uint8Array {
    const parameters: Record<string, object> = {};
    if (seq) {
      parameters.sequence_id = { int64_param: seq.id };
      parameters.sequence_start = { bool_param: seq.start };
      parameters.sequence_end = { bool_param: seq.end };
    }
    return InferRequest.encode(InferRequest.fromObject({ id, parameters })).finish();
  }

  let decoupled = false;
  const streams: Stream[] = [];
  let nextStream = 0;
  const version = o.version;

  return {
    kind: 'grpc',
    async modelInfo(): Promise<ModelInfo> {
      let meta;
      try {
        meta = await unary('ModelMetadata', 'ModelMetadataRequest', 'ModelMetadataResponse', { name: o.model, version });
      } catch (e) {
        throw new Error(`model '${o.model}': ${(e as Error).message}`);
      }
      let config: Record<string, unknown> | undefined;
      try {
        const r = await unary('ModelConfig', 'ModelConfigRequest', 'ModelConfigResponse', { name: o.model, version });
        config = r.config as Record<string, unknown>;
      } catch {
        config = undefined;
      }
      const info = modelInfoFrom(meta, config, version);
      decoupled = info.decoupled;
      return info;
    },
    async stats(): Promise<ServerStats | undefined> {
      try {
        const r = await unary('ModelStatistics', 'ModelStatisticsRequest', 'ModelStatisticsResponse', { name: o.model, version });
        return sumStats((r.model_stats as Record<string, unknown>[]) ?? [], o.model, version);
      } catch {
        return undefined;
      }
    },
    async registerShm(name, key, byteSize): Promise<void> {
      await unary('SystemSharedMemoryRegister', 'SystemSharedMemoryRegisterRequest', 'SystemSharedMemoryRegisterResponse', { name, key, offset: 0, byte_size: byteSize });
    },
    async unregisterShm(name): Promise<void> {
      await unary('SystemSharedMemoryUnregister', 'SystemSharedMemoryUnregisterRequest', 'SystemSharedMemoryUnregisterResponse', { name }).catch(() => undefined);
    },
    prepare(spec: RequestSpec, streaming: boolean): Prepared {
      const param = (v: object): object => v;
      const inputs = spec.inputs.map((t, i) => {
        const shm = spec.shm?.inputs[i];
        const parameters = shm
          ? { shared_memory_region: param({ string_param: shm.region }), shared_memory_offset: param({ int64_param: shm.offset }), shared_memory_byte_size: param({ int64_param: shm.size }) }
          : {};
        return { name: t.name, datatype: t.datatype, shape: t.shape, parameters };
      });
      const outputs = spec.shm
        ? spec.shm.outputs.map((x) => ({ name: x.name, parameters: { shared_memory_region: { string_param: x.region }, shared_memory_byte_size: { int64_param: x.size } } }))
        : spec.outputs.map((name) => ({ name }));
      const parameters: Record<string, object> = {};
      if (streaming && decoupled) parameters.triton_enable_empty_final_response = { bool_param: true };
      const msg = InferRequest.fromObject({
        model_name: o.model,
        model_version: version,
        inputs,
        outputs,
        parameters,
        raw_input_contents: spec.shm ? [] : spec.inputs.map((t) => t.bytes),
      });
      const message = Buffer.from(InferRequest.encode(msg).finish());
      return { message, framed: frame(message), streaming } satisfies GrpcPrepared;
    },
    send(p: Prepared, seq: SequenceStep | undefined, c: Completion): void {
      const r = p as GrpcPrepared;
      if (r.streaming) {
        if (streams.length < o.concurrency) streams.push(new Stream());
        streams[nextStream++ % streams.length]!.send(r, seq, c);
        return;
      }
      const body = seq === undefined ? r.framed : frame(Buffer.concat([r.message, suffix('', seq)]));
      const st = session().request(inferHeaders);
      let err: string | null = null;
      let got = false;
      st.on('response', (h) => (err = statusError(h)));
      st.on('data', () => (got = true));
      st.on('trailers', (h) => (err = err ?? statusError(h)));
      st.on('error', (e) => (err = err ?? e.message));
      st.on('close', () => {
        if (err === null && !got) err = 'no response message';
        if (err === null) c.response();
        c.done(err);
      });
      st.end(body);
    },
    async close(): Promise<void> {
      for (const s of streams) s.close();
      await Promise.all(sessions.map((s) => new Promise<void>((r) => (s.closed ? r() : s.close(() => r())))));
    },
  };
}
