import type { ServiceDefinition } from '@grpc/grpc-js';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

/**
 * The .proto files in proto/ loaded once, at start, into protobufjs types, and grpc-js service definitions
 * whose (de)serializers are those types' own encode and decode. Decoded requests are protobufjs messages used
 * as they are (no conversion to plain objects, which would walk every request twice); bytes fields are views of
 * the received message. Responses are plain objects of the message's shape, encoded directly.
 */

/** The repository's proto/ folder, from this file's place in dist/src/frontends/grpc/. */
export const PROTO_DIR = new URL('../../../../proto/', import.meta.url);

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
  const def: Record<string, ServiceDefinition[string]> = {};
  for (const m of service.methodsArray) {
    m.resolve();
    const req = m.resolvedRequestType!;
    const res = m.resolvedResponseType!;
    def[m.name] = {
      path: `/${fullName}/${m.name}`,
      requestStream: m.requestStream === true,
      responseStream: m.responseStream === true,
      requestSerialize: (o: object) => encode(req, o),
      requestDeserialize: (b: Buffer) => req.decode(new StrictReader(b)),
      responseSerialize: (o: object) => encode(res, o),
      responseDeserialize: (b: Buffer) => res.decode(b),
      originalName: m.name,
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

/** protobufjs writes into a Buffer on Node; wrap only if it did not. */
function encode(t: protobuf.Type, o: object): Buffer {
  const u = t.encode(o).finish();
  return Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
}
