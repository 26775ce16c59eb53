#!/usr/bin/env node
// The reference the gRPC benchmark measures Nereid against: the least code that really serves Triton's
// ModelInfer over gRPC with @grpc/grpc-js and onnxruntime-node. Only that one RPC of
// inference.GRPCInferenceService, its messages read and written with protobufjs from the project's proto/
// files; inputs from raw_input_contents, every output in raw_output_contents, on every request. There is
// deliberately no validation, no config, no statistics and no caching of anything request-derived: whatever
// Nereid spends above this is the price of being a real server, which is what the ratios show.
//
//   node bench/grpc-reference-server.mjs --model path/to/model.onnx [--port 0] [--host 127.0.0.1]
//                                        [--transport grpc-js|http2]
//
// --transport http2 serves the same RPC straight on node:http2 instead (the least gRPC framing: one message
// in, one out, status in trailers), the ceiling of a hand-written transport with protobufjs messages.
//
// Once the session exists and the port is bound it prints `grpc-reference: serving <model> on <host>:<port>`
// on stderr (with the port it got when given 0); that line is its readiness.

import http2 from 'node:http2';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import ort from 'onnxruntime-node';

const { values: args } = parseArgs({
  options: {
    model: { type: 'string' },
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
    transport: { type: 'string', default: 'grpc-js' },
  },
});
if (!args.model) {
  process.stderr.write('usage: node bench/grpc-reference-server.mjs --model PATH [--port N] [--host ADDR]\n');
  process.exit(2);
}

const root = new protobuf.Root().loadSync(join(dirname(fileURLToPath(import.meta.url)), '..', 'proto', 'grpc_service.proto'), { keepCase: true });
const Request = root.lookupType('inference.ModelInferRequest');
const Response = root.lookupType('inference.ModelInferResponse');

// Wire datatype → [onnxruntime tensor type, typed-array constructor]; raw contents of any fixed-size type.
const TYPES = {
  BOOL: ['bool', Uint8Array],
  UINT8: ['uint8', Uint8Array],
  UINT16: ['uint16', Uint16Array],
  UINT32: ['uint32', Uint32Array],
  UINT64: ['uint64', BigUint64Array],
  INT8: ['int8', Int8Array],
  INT16: ['int16', Int16Array],
  INT32: ['int32', Int32Array],
  INT64: ['int64', BigInt64Array],
  FP16: ['float16', Uint16Array],
  FP32: ['float32', Float32Array],
  FP64: ['float64', Float64Array],
};
const WIRE = {};
for (const [wire, [ortType]] of Object.entries(TYPES)) WIRE[ortType] = wire;

const session = await ort.InferenceSession.create(args.model);

function tensorFromRaw(input, bytes) {
  const [ortType, Ctor] = TYPES[input.datatype];
  const size = Ctor.BYTES_PER_ELEMENT;
  // A typed array over the received message when aligned; one copy when not.
  const owned = bytes.byteOffset % size === 0 ? bytes : Buffer.from(bytes);
  // protobufjs reads int64 dimensions as Long (long.js is installed) or as numbers.
  const dims = input.shape.map((d) => (typeof d === 'number' ? d : d.toNumber()));
  return new ort.Tensor(ortType, new Ctor(owned.buffer, owned.byteOffset, owned.byteLength / size), dims);
}

function modelInfer(call, callback) {
  const req = call.request;
  const feeds = {};
  for (let i = 0; i < req.inputs.length; i++) feeds[req.inputs[i].name] = tensorFromRaw(req.inputs[i], req.raw_input_contents[i]);
  session.run(feeds).then((results) => {
    const names = req.outputs.length > 0 ? req.outputs.map((o) => o.name) : session.outputNames;
    const outputs = [];
    const raw = [];
    for (const name of names) {
      const t = results[name];
      outputs.push({ name, datatype: WIRE[t.type], shape: t.dims });
      raw.push(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    }
    callback(null, { model_name: req.model_name, model_version: '1', id: req.id, outputs, raw_output_contents: raw });
  }, (err) => callback({ code: grpc.status.INTERNAL, details: String(err?.message ?? err) }));
}

const service = {
  ModelInfer: {
    path: '/inference.GRPCInferenceService/ModelInfer',
    requestStream: false,
    responseStream: false,
    requestSerialize: (o) => Buffer.from(Request.encode(o).finish()),
    requestDeserialize: (b) => Request.decode(b),
    responseSerialize: (o) => {
      const u = Response.encode(o).finish();
      return Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
    },
    responseDeserialize: (b) => Response.decode(b),
  },
};

/** ModelInfer on node:http2: the request's one message, the response's one message, grpc-status in trailers. */
function serveHttp2() {
  const server = http2.createServer();
  server.on('stream', (stream) => {
    const chunks = [];
    stream.on('data', (c) => chunks.push(c));
    stream.on('end', () => {
      const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
      const call = { request: Request.decode(body.subarray(5, 5 + body.readUInt32BE(1))) };
      modelInfer(call, (err, res) => {
        if (err) {
          stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(err.code), 'grpc-message': encodeURIComponent(err.details) }, { endStream: true });
          return;
        }
        const w = Response.encode(res, protobuf.Writer.create().uint32(0).fixed32(0)).finish();
        const out = Buffer.isBuffer(w) ? w : Buffer.from(w.buffer, w.byteOffset, w.byteLength);
        out.writeUInt32BE(out.length - 5, 1);
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.end(out);
      });
    });
  });
  return new Promise((resolve) => server.listen(Number(args.port), args.host, () => resolve({ server, port: server.address().port })));
}

if (args.transport === 'http2') {
  const { server, port } = await serveHttp2();
  process.stderr.write(`grpc-reference (node:http2): serving ${args.model} on ${args.host}:${port}\n`);
  const stop = () => process.exit(0);
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
} else {
  const server = new grpc.Server();
  server.addService(service, { ModelInfer: modelInfer });
  const port = await new Promise((resolve, reject) => {
    server.bindAsync(`${args.host}:${args.port}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
  });
  process.stderr.write(`grpc-reference: serving ${args.model} on ${args.host}:${port}\n`);

  const stop = () => server.tryShutdown(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
