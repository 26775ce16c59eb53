#!/usr/bin/env node
// The reference the HTTP benchmarks measure Nereid against: the least code that really serves a KServe v2
// inference over HTTP with onnxruntime-node. It parses the request (JSON, or JSON plus Triton's binary tensor
// extension), runs the session, and serializes every output, on every request. There is deliberately no
// validation, no config, no statistics, no routing beyond two paths and no caching of anything request-derived:
// whatever Nereid spends above this is the price of being a real server, which is what the ratios show.
//
//   node bench/reference-server.mjs --model path/to/model.onnx --port 8000 [--host 127.0.0.1]
//
// POST /v2/models/<any>/infer   JSON in/out, or binary tensors (Inference-Header-Content-Length, binary_data_size
//                               on inputs, binary outputs when asked by `binary_data` or `binary_data_output`)
// GET  /v2/health/ready         200 once the session exists, 400 before

import http from 'node:http';
import { parseArgs } from 'node:util';
import ort from 'onnxruntime-node';

const { values: args } = parseArgs({
  options: {
    model: { type: 'string' },
    port: { type: 'string', default: '8000' },
    host: { type: 'string', default: '127.0.0.1' },
  },
});
if (!args.model) {
  process.stderr.write('usage: node bench/reference-server.mjs --model PATH --port N [--host ADDR]\n');
  process.exit(2);
}

// Wire datatype → [onnxruntime tensor type, typed-array constructor] (BYTES has no typed array).
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
  BYTES: ['string', null],
};
const WIRE = {};
for (const [wire, [ortType]] of Object.entries(TYPES)) WIRE[ortType] = wire;

let session = null;

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function tensorFromJson(input) {
  const [ortType, Ctor] = TYPES[input.datatype];
  let data = input.data;
  if (data.length > 0 && Array.isArray(data[0])) data = data.flat(Infinity);
  if (Ctor === null) return new ort.Tensor('string', data, input.shape);
  if (ortType === 'bool') return new ort.Tensor('bool', Uint8Array.from(data, (v) => (v ? 1 : 0)), input.shape);
  if (Ctor === BigInt64Array || Ctor === BigUint64Array) return new ort.Tensor(ortType, Ctor.from(data, BigInt), input.shape);
  return new ort.Tensor(ortType, Ctor.from(data), input.shape);
}

function tensorFromBinary(input, bytes) {
  const [ortType, Ctor] = TYPES[input.datatype];
  if (Ctor === null) {
    const strings = [];
    for (let at = 0; at < bytes.length; ) {
      const n = bytes.readUInt32LE(at);
      strings.push(bytes.toString('utf8', at + 4, at + 4 + n));
      at += 4 + n;
    }
    return new ort.Tensor('string', strings, input.shape);
  }
  const size = Ctor.BYTES_PER_ELEMENT;
  // A typed array over the request buffer when aligned; one copy when not.
  const owned = bytes.byteOffset % size === 0 ? bytes : Buffer.from(bytes);
  return new ort.Tensor(ortType, new Ctor(owned.buffer, owned.byteOffset, owned.byteLength / size), input.shape);
}

function outputBytes(tensor) {
  if (tensor.type === 'string') {
    const parts = [];
    for (const s of tensor.data) {
      const b = Buffer.from(s, 'utf8');
      const len = Buffer.allocUnsafe(4);
      len.writeUInt32LE(b.length, 0);
      parts.push(len, b);
    }
    return Buffer.concat(parts);
  }
  const d = tensor.data;
  return Buffer.from(d.buffer, d.byteOffset, d.byteLength);
}

function jsonData(tensor) {
  const d = tensor.data;
  if (tensor.type === 'bool') return Array.from(d, (v) => v !== 0);
  if (d instanceof BigInt64Array || d instanceof BigUint64Array) return Array.from(d, Number);
  return Array.from(d);
}

async function infer(req, res, modelName) {
  const body = await readBody(req);
  const headerLength = req.headers['inference-header-content-length'];
  const jsonEnd = headerLength === undefined ? body.length : Number(headerLength);
  const request = JSON.parse(body.toString('utf8', 0, jsonEnd));

  const feeds = {};
  let at = jsonEnd;
  for (const input of request.inputs) {
    const size = input.parameters?.binary_data_size;
    if (size === undefined) {
      feeds[input.name] = tensorFromJson(input);
    } else {
      feeds[input.name] = tensorFromBinary(input, body.subarray(at, at + size));
      at += size;
    }
  }

  const results = await session.run(feeds);

  const binaryDefault = request.parameters?.binary_data_output === true;
  const wanted = request.outputs ?? session.outputNames.map((name) => ({ name }));
  const outputs = [];
  const blobs = [];
  let blobBytes = 0;
  for (const o of wanted) {
    const t = results[o.name];
    const entry = { name: o.name, datatype: WIRE[t.type], shape: t.dims };
    if (o.parameters?.binary_data ?? binaryDefault) {
      const b = outputBytes(t);
      entry.parameters = { binary_data_size: b.length };
      blobs.push(b);
      blobBytes += b.length;
    } else {
      entry.data = jsonData(t);
    }
    outputs.push(entry);
  }
  const response = { model_name: modelName, model_version: '1', outputs };
  if (request.id) response.id = request.id;
  const json = Buffer.from(JSON.stringify(response));

  if (blobs.length === 0) {
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': json.length });
    res.end(json);
    return;
  }
  res.writeHead(200, {
    'Content-Type': 'application/octet-stream',
    'Inference-Header-Content-Length': json.length,
    'Content-Length': json.length + blobBytes,
  });
  res.cork();
  res.write(json);
  for (const b of blobs) res.write(b);
  res.uncork();
  res.end();
}

// KServe v2 model metadata from the session, so that clients that read a model's inputs first (load generators)
// can talk to this server too; symbolic dimensions are -1.
function metadata(res, modelName) {
  const tensors = (list) =>
    list.map((m) => ({ name: m.name, datatype: WIRE[m.type] ?? m.type, shape: (m.shape ?? []).map((d) => (typeof d === 'number' && d >= 0 ? d : -1)) }));
  const body = JSON.stringify({
    name: decodeURIComponent(modelName),
    versions: ['1'],
    platform: 'onnxruntime_onnx',
    inputs: tensors(session.inputMetadata),
    outputs: tensors(session.outputMetadata),
  });
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

function fail(res, err) {
  const body = JSON.stringify({ error: String(err?.message ?? err) });
  if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

const server = http.createServer((req, res) => {
  const url = req.url;
  if (req.method === 'POST' && url.startsWith('/v2/models/') && url.endsWith('/infer')) {
    const modelName = url.slice(11, url.indexOf('/', 11));
    infer(req, res, modelName).catch((err) => fail(res, err));
    return;
  }
  if (req.method === 'GET' && url.startsWith('/v2/models/') && url.indexOf('/', 11) < 0) {
    metadata(res, url.slice(11));
    return;
  }
  if (req.method === 'GET' && url === '/v2/health/ready') {
    res.writeHead(session === null ? 400 : 200, { 'Content-Length': 0 });
    res.end();
    return;
  }
  res.writeHead(404, { 'Content-Type': 'application/json' });
  res.end('{"error":"Not Found"}');
});
server.keepAliveTimeout = 65_000;

server.listen(Number(args.port), args.host);
session = await ort.InferenceSession.create(args.model);
process.stderr.write(`reference: serving ${args.model} on ${args.host}:${server.address().port}\n`);

const stop = () => server.close(() => process.exit(0)).closeAllConnections();
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
