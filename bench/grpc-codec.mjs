#!/usr/bin/env node
// The message codecs of a gRPC ModelInfer on `simple`, in process, µs per call (median of rounds): decoding
// the request (the bounds scan of request-bounds.ts, then protobufjs) and encoding the response, with
// protobufjs from a response object plus a copy behind the 5-byte prefix (as before) or straight into the
// framed buffer (infer-response.ts). Needs the build (dist/).
//
//   node bench/grpc-codec.mjs [--rounds N] [--iterations N]

import { parseArgs } from 'node:util';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { grpcBodies } from './grpc-load.mjs';
import { ROOT, median } from './servers.mjs';

const { values: a } = parseArgs({ options: { rounds: { type: 'string', default: '7' }, iterations: { type: 'string', default: '20000' } } });
const dist = (p) => import(pathToFileURL(join(ROOT, 'dist', 'src', 'frontends', 'grpc', p)).href);
const { loadProtos, encodeFramed } = await dist('proto.js');
const { checkInferRequestBounds } = await dist('request-bounds.js');
const { encodeInferResponse, inferResponseFrame } = await dist('infer-response.js');

const protos = loadProtos();
const decode = protos.inference.ModelInfer.requestDeserialize;
const body = grpcBodies()[0].body;
const resolved = { bounds: { inputs: 2, requiredInputs: 2, outputs: 2, rank: 2, inputElements: 128 } };
const fakeServer = { resolveModel: () => resolved };
const out = (name) => ({ name, datatype: 'INT32', shape: [1, 16], data: new Uint8Array(64) });
const res = { model: 'simple', version: 1, id: '', outputs: [out('OUTPUT0'), out('OUTPUT1')] };
const frame = (b) => {
  const f = Buffer.allocUnsafe(b.length + 5);
  f[0] = 0;
  f.writeUInt32BE(b.length, 1);
  b.copy(f, 5);
  return f;
};
const responseType = protos.type('inference.ModelInferResponse');

const cases = {
  'request: bounds scan': () => checkInferRequestBounds(body, fakeServer),
  'request: protobufjs decode': () => decode(body),
  'response: protobufjs encode + framing copy': () => frame(Buffer.from(responseType.encode(encodeInferResponse(res)).finish())),
  'response: protobufjs into the framed buffer': () => encodeFramed(responseType, encodeInferResponse(res)),
  'response: specialised encoder, framed': () => inferResponseFrame(res),
};
const n = Number(a.iterations);
for (const [name, f] of Object.entries(cases)) {
  for (let i = 0; i < n; i++) f();
  const rounds = [];
  for (let r = 0; r < Number(a.rounds); r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) f();
    rounds.push(Number(process.hrtime.bigint() - t0) / 1000 / n);
  }
  console.log(`${name.padEnd(46)} ${median(rounds).toFixed(2).padStart(6)} µs`);
}
