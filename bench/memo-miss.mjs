#!/usr/bin/env node
// What the memo of repeated request bytes (src/frontends/bytes-memo.ts) costs a request it never helps: one
// whose bytes are its own every time (a request id per request). In process, ns per decode (median of rounds),
// for the three places requests are remembered by their bytes: the JSON header of an HTTP binary infer, the
// HTTP/1.1 request head of the direct path, and the fields before the tensors of a gRPC ModelInfer. Each is
// measured plain (no memo), with the memo on requests that all differ (miss), and on one repeated request
// (hit), and given as a ratio to plain measured in the same run. A miss should cost about what plain does.
// Needs the build (dist/).
//
//   node bench/memo-miss.mjs [--rounds N] [--iterations N]

import { parseArgs } from 'node:util';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT, median } from './servers.mjs';

const { values: a } = parseArgs({ options: { rounds: { type: 'string', default: '9' }, iterations: { type: 'string', default: '20000' } } });
const ROUNDS = Number(a.rounds);
const N = Number(a.iterations);
const dist = (p) => import(pathToFileURL(join(ROOT, 'dist', 'src', 'frontends', p)).href);
const { JsonParser, decodeInferText } = await dist('http/json-parse.js');
const { KnownHead, parseRequestHead } = await dist('http/direct/request-head.js');
const { loadProtos } = await dist('grpc/proto.js');
const { boundedInferDeserializer, checkInferRequestBounds } = await dist('grpc/request-bounds.js');

// Enough distinct requests that none repeats within the memo's reach; ids of one length, as a client's are.
const DISTINCT = 4096;
const ids = Array.from({ length: DISTINCT }, (_, i) => `req-${String(i).padStart(8, '0')}`);

// --- HTTP binary infer: the JSON header, as Triton's clients send it.
const BOUNDS = { model: 'simple', decoupled: false, inputs: 2, requiredInputs: 2, outputs: 2, rank: 2, inputElements: 128 };
const LIMIT = 64 << 20;
const jsonHeader = (id) => Buffer.from(JSON.stringify({
  ...(id === undefined ? {} : { id }),
  inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, shape: [1, 16], datatype: 'INT32', parameters: { binary_data_size: 64 } })),
  outputs: ['OUTPUT0', 'OUTPUT1'].map((name) => ({ name, parameters: { binary_data: true } })),
}));
const headers = ids.map((id) => Buffer.concat([jsonHeader(id), Buffer.alloc(128, 1)]));
const headerLength = headers[0].byteLength - 128;
const limits = { bounds: BOUNDS, maxInputSize: LIMIT, packBytes: false, pooled: true };

// --- HTTP/1.1 direct path: the request head, with an id header of its own per request.
const heads = ids.map((id) => Buffer.from(
  `POST /v2/models/simple/infer HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nContent-Type: application/octet-stream\r\n` +
  `Inference-Header-Content-Length: ${headerLength}\r\nX-Request-Id: ${id}\r\nContent-Length: 400\r\n\r\n${'x'.repeat(400)}`));
const socket = {};

// --- gRPC ModelInfer: the fields before the tensors, with an id of its own per request.
const protos = loadProtos();
const RequestType = protos.type('inference.ModelInferRequest');
const decode = protos.inference.ModelInfer.requestDeserialize;
const raw = [Buffer.alloc(64, 1), Buffer.alloc(64, 2)];
const messages = ids.map((id) => Buffer.from(RequestType.encode(RequestType.fromObject({
  model_name: 'simple', id,
  inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }],
  outputs: [{ name: 'OUTPUT0' }, { name: 'OUTPUT1' }],
  raw_input_contents: raw,
})).finish()));
const resolved = { name: 'simple', bounds: { inputs: 2, requiredInputs: 2, outputs: 2, rank: 2, inputElements: 128 } };
const fakeServer = { resolveModel: () => resolved };

/** Each case: [plain, with the memo]; called with the i-th distinct request. */
const cases = {
  'HTTP JSON header': () => {
    const parser = new JsonParser();
    return [
      (b) => decodeInferText(b.toString('utf8', 0, headerLength), limits),
      (b) => parser.parse(b, headerLength, BOUNDS, LIMIT),
    ];
  },
  'HTTP/1.1 head': () => {
    const known = new KnownHead();
    return [
      (b) => parseRequestHead(b, socket),
      (b) => {
        const k = known.match(b);
        if (k !== null) return k;
        const h = parseRequestHead(b, socket);
        known.remember(b, h);
        return h;
      },
    ];
  },
  'gRPC ModelInfer fields': () => {
    const memoized = boundedInferDeserializer(decode, fakeServer);
    return [
      (b) => {
        checkInferRequestBounds(b, fakeServer);
        return decode(b);
      },
      memoized,
    ];
  },
};
const inputs = { 'HTTP JSON header': headers, 'HTTP/1.1 head': heads, 'gRPC ModelInfer fields': messages };

let sink = 0;
function nsPer(fn, bufs) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) sink ^= fn(bufs[i % bufs.length]) === undefined ? 1 : 0;
  return Number(process.hrtime.bigint() - t0) / N;
}

console.log(`memo cost per decode, ns (median of ${ROUNDS} rounds of ${N}); ratio to plain in the same run`);
for (const [name, make] of Object.entries(cases)) {
  const distinct = inputs[name];
  const same = [distinct[0]];
  const plain = [], miss = [], hit = [];
  for (let r = 0; r < ROUNDS; r++) {
    // A fresh memo per round and per pattern: a miss round never starts from entries a hit round left.
    const [p] = make();
    plain.push(nsPer(p, distinct));
    miss.push(nsPer(make()[1], distinct));
    hit.push(nsPer(make()[1], same));
  }
  const [p, m, h] = [median(plain), median(miss), median(hit)];
  console.log(`${name.padEnd(24)} plain ${p.toFixed(0).padStart(6)}  miss ${m.toFixed(0).padStart(6)} (${(m / p).toFixed(2)}x)  hit ${h.toFixed(0).padStart(6)} (${(h / p).toFixed(2)}x)`);
}
if (sink === -1) console.log(sink);
