/**
 * KServe v2 over gRPC, on node:http2 with the messages of proto/ encoded by protobufjs: requests are encoded and
 * framed once; what differs per request (id, sequence parameters) is a second encoded fragment appended to the
 * first, which protobuf's merge rule makes one message. Unary calls are one HTTP/2 stream each, spread over a few
 * sessions (grpc-client.ts); --streaming keeps one ModelStreamInfer stream per request slot (grpc-stream.ts).
 */
import type http2 from 'node:http2';
import type { ModelInfo } from './model-info.js';
import { modelInfoFrom } from './model-info.js';
import type { TlsOptions } from './options.js';
import { sumStats, type Completion, type Prepared, type RequestSpec, type SequenceStep, type ServerStats, type Transport } from './transport.js';
import { frame, statusError } from './grpc-framing.js';
import { GrpcClient, type MessageType } from './grpc-client.js';
import { InferStream } from './grpc-stream.js';

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

/** The fragment merged into a prepared request: its id and, for a sequence, the sequence parameters. */
function suffix(InferRequest: MessageType, id: string, seq: SequenceStep | undefined): Uint8Array {
  const parameters: Record<string, object> = {};
  if (seq) {
    parameters.sequence_id = { int64_param: seq.id };
    parameters.sequence_start = { bool_param: seq.start };
    parameters.sequence_end = { bool_param: seq.end };
  }
  return InferRequest.encode(InferRequest.fromObject({ id, parameters })).finish();
}

/** A ModelInferRequest for one request of the run, inputs in raw_input_contents or in shared memory. */
function inferRequestObject(o: GrpcTransportOptions, spec: RequestSpec, emptyFinal: boolean): object {
  const inputs = spec.inputs.map((t, i) => {
    const shm = spec.shm?.inputs[i];
    const parameters = shm
      ? { shared_memory_region: { string_param: shm.region }, shared_memory_offset: { int64_param: shm.offset }, shared_memory_byte_size: { int64_param: shm.size } }
      : {};
    return { name: t.name, datatype: t.datatype, shape: t.shape, parameters };
  });
  const outputs = spec.shm
    ? spec.shm.outputs.map((x) => ({ name: x.name, parameters: { shared_memory_region: { string_param: x.region }, shared_memory_byte_size: { int64_param: x.size } } }))
    : spec.outputs.map((name) => ({ name }));
  const parameters: Record<string, object> = {};
  if (emptyFinal) parameters.triton_enable_empty_final_response = { bool_param: true };
  const raw_input_contents = spec.shm ? [] : spec.inputs.map((t) => t.bytes);
  return { model_name: o.model, model_version: o.version, inputs, outputs, parameters, raw_input_contents };
}

/** One ModelInfer call on a stream of its own; the completion hears of the response and of any error. */
function sendUnary(client: GrpcClient, headers: http2.OutgoingHttpHeaders, body: Buffer, c: Completion): void {
  const st = client.session().request(headers);
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
}

export function createGrpcTransport(o: GrpcTransportOptions): Transport {
  const client = new GrpcClient(o);
  const InferRequest = client.type('ModelInferRequest');
  const StreamResponse = client.type('ModelStreamInferResponse');
  const inferHeaders = client.headersFor('ModelInfer');
  const streamHeaders = client.headersFor('ModelStreamInfer');
  const named = { name: o.model, version: o.version };
  let decoupled = false;
  const isDecoupled = (): boolean => decoupled;
  const suffixOf = (id: string, seq: SequenceStep | undefined): Uint8Array => suffix(InferRequest, id, seq);
  const streams: InferStream[] = [];
  let nextStream = 0;

  return {
    kind: 'grpc',
    async modelInfo(): Promise<ModelInfo> {
      let meta;
      try {
        meta = await client.unary('ModelMetadata', 'ModelMetadataRequest', 'ModelMetadataResponse', named);
      } catch (e) {
        throw new Error(`model '${o.model}': ${(e as Error).message}`);
      }
      const config = await client.unary('ModelConfig', 'ModelConfigRequest', 'ModelConfigResponse', named).then(
        (r) => r.config as Record<string, unknown>,
        () => undefined,
      );
      const info = modelInfoFrom(meta, config, o.version);
      decoupled = info.decoupled;
      return info;
    },
    async stats(): Promise<ServerStats | undefined> {
      try {
        const r = await client.unary('ModelStatistics', 'ModelStatisticsRequest', 'ModelStatisticsResponse', named);
        return sumStats((r.model_stats as Record<string, unknown>[]) ?? [], o.model, o.version);
      } catch {
        return undefined;
      }
    },
    async registerShm(name, key, byteSize): Promise<void> {
      await client.unary('SystemSharedMemoryRegister', 'SystemSharedMemoryRegisterRequest', 'SystemSharedMemoryRegisterResponse', { name, key, offset: 0, byte_size: byteSize });
    },
    async unregisterShm(name): Promise<void> {
      await client.unary('SystemSharedMemoryUnregister', 'SystemSharedMemoryUnregisterRequest', 'SystemSharedMemoryUnregisterResponse', { name }).catch(() => undefined);
    },
    prepare(spec: RequestSpec, streaming: boolean): Prepared {
      const message = Buffer.from(InferRequest.encode(InferRequest.fromObject(inferRequestObject(o, spec, streaming && decoupled))).finish());
      return { message, framed: frame(message), streaming } satisfies GrpcPrepared;
    },
    send(p: Prepared, seq: SequenceStep | undefined, c: Completion): void {
      const r = p as GrpcPrepared;
      if (r.streaming) {
        if (streams.length < o.concurrency) streams.push(new InferStream(client.session().request(streamHeaders), StreamResponse, isDecoupled, suffixOf));
        streams[nextStream++ % streams.length]!.send(r.message, seq, c);
        return;
      }
      sendUnary(client, inferHeaders, seq === undefined ? r.framed : frame(Buffer.concat([r.message, suffix(InferRequest, '', seq)])), c);
    },
    async close(): Promise<void> {
      for (const s of streams) s.close();
      await client.close();
    },
  };
}
