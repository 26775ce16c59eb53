import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

/**
 * The .proto files in proto/ loaded once, at start, into protobufjs types, and the services' methods with
 * their paths and (de)serializers, those types' own encode and decode. Decoded requests are protobufjs messages used
 * as they are (no conversion to plain objects, which would walk every request twice); bytes fields are views of
 * the received message. Responses are plain objects of the message's shape, encoded directly.
 */

/** The repository's proto/ folder, from this file's place in dist/src/frontends/grpc/. */
export const PROTO_DIR = new URL('../../../../proto/', import.meta.url);

/** One RPC of a service: its HTTP/2 path, whether each side streams, and its messages' codecs. */
export interface MethodDefinition {
  readonly path: string;
  readonly requestStream: boolean;
  readonly responseStream: boolean;
  /** Throws for bytes that are not the request message. */
  requestDeserialize(b: Buffer): unknown;
  /** The response message with gRPC's 5-byte prefix, ready to send. */
  responseFrame(o: object): Buffer;
}

export type ServiceDefinition = Readonly<Record<string, MethodDefinition>>;

export interface Protos {
  readonly root: protobuf.Root;
  readonly inference: ServiceDefinition;
  readonly health: ServiceDefinition;
  type(name: string): protobuf.Type;
}

let loaded: Protos | undefined;

export function loadProtos(): Protos {
  if (loaded) return loaded;
  const root = new protobuf.Root();
  root.loadSync(['grpc_service.proto', 'health.proto'].map((f) => fileURLToPath(new URL(f, PROTO_DIR))), { keepCase: true });
  root.resolveAll();
  const type = (name: string): protobuf.Type => root.lookupType(name);
  loaded = {
    root,
    inference: serviceDefinition(root.lookupService('inference.GRPCInferenceService'), 'inference.GRPCInferenceService'),
    health: serviceDefinition(root.lookupService('grpc.health.v1.Health'), 'grpc.health.v1.Health'),
    type,
  };
  return loaded;
}

function serviceDefinition(service: protobuf.Service, fullName: string): ServiceDefinition {
  const def: Record<string, MethodDefinition> = {};
  for (const m of service.methodsArray) {
    m.resolve();
    const req = m.resolvedRequestType!;
    const res = m.resolvedResponseType!;
    def[m.name] = {
      path: `/${fullName}/${m.name}`,
      requestStream: m.requestStream === true,
      responseStream: m.responseStream === true,
      requestDeserialize: (b: Buffer) => req.decode(new StrictReader(b)),
      responseFrame: (o: object) => encodeFramed(res, o),
    };
  }
  return def;
}

/**
 * protobufjs's Node reader clips a string whose length runs past the end of the message instead of failing,
 * so a truncated or corrupt request would decode into something. Refuse it, as protobuf's C++ parser does.
 */
class StrictReader extends protobuf.BufferReader {
  override string(): string {
    const length = this.uint32();
    const start = this.pos;
    const end = start + length;
    if (end > this.len) throw new RangeError(`index out of range: ${start} + ${length} > ${this.len}`);
    this.pos = end;
    return (this.buf as Buffer).toString('utf8', start, end);
  }
}

/**
 * The message encoded after five placeholder bytes (a zero varint and a fixed32), which then become gRPC's
 * prefix: uncompressed, and the length big-endian. One buffer, no copy.
 */
export function encodeFramed(t: protobuf.Type, o: object): Buffer {
  const u = t.encode(o, protobuf.Writer.create().uint32(0).fixed32(0)).finish();
  const b = Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
  b.writeUInt32BE(b.byteLength - 5, 1);
  return b;
}
