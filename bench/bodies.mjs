// Pre-encoded inference requests for the benchmarks, and checks that a response body decodes to the right
// answer. Every body is built once, before any timing, so the load generator only writes bytes.
//
// A body is { body: Buffer, headers: object, verify(buf, headers) → null | 'what is wrong' }.

/** Splits a response into its JSON part and its binary blobs (Triton's binary tensor extension). */
export function decodeResponse(buf, headers) {
  const hl = headers['inference-header-content-length'];
  const jsonEnd = hl === undefined ? buf.length : Number(hl);
  const json = JSON.parse(buf.toString('utf8', 0, jsonEnd));
  if (!Array.isArray(json.outputs)) throw new Error('response has no outputs array');
  const blobs = new Map();
  let at = jsonEnd;
  for (const o of json.outputs) {
    const size = o.parameters?.binary_data_size;
    if (size === undefined) continue;
    blobs.set(o.name, buf.subarray(at, at + size));
    at += size;
  }
  if (at !== buf.length) throw new Error(`binary blobs cover ${at - jsonEnd} bytes, body has ${buf.length - jsonEnd}`);
  return { json, blobs };
}

/** The values of one output as numbers, whether it came as JSON data or as a binary blob. */
function outputValues(decoded, name, Ctor) {
  const o = decoded.json.outputs.find((x) => x.name === name);
  if (o === undefined) throw new Error(`output ${name} missing`);
  if (o.data !== undefined) return o.data;
  const b = decoded.blobs.get(name);
  if (b === undefined) throw new Error(`output ${name} has neither data nor binary_data_size`);
  const copy = Buffer.from(b); // aligned
  return new Ctor(copy.buffer, copy.byteOffset, copy.byteLength / Ctor.BYTES_PER_ELEMENT);
}

function binaryBody(header, blobs) {
  const json = Buffer.from(JSON.stringify(header));
  return {
    body: Buffer.concat([json, ...blobs.map((t) => Buffer.from(t.buffer, t.byteOffset, t.byteLength))]),
    headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(json.length) },
  };
}

function jsonBody(request) {
  return { body: Buffer.from(JSON.stringify(request)), headers: { 'content-type': 'application/json' } };
}

/**
 * Requests for Triton's `simple` (INPUT0, INPUT1 INT32 [1,16] → OUTPUT0 = sum, OUTPUT1 = difference), `variants`
 * different input pairs. JSON: JSON in, all outputs JSON (no `outputs` listed). Binary: both inputs as binary
 * blobs, both outputs requested with `binary_data: true`, as tritonclient's simple_http_infer_client does.
 */
export function simpleBodies(encoding, variants = 8) {
  const out = [];
  for (let v = 0; v < variants; v++) {
    const a = Int32Array.from({ length: 16 }, (_, i) => i + 100 * v);
    const b = Int32Array.from({ length: 16 }, (_, i) => (i % 3) - v);
    let req;
    if (encoding === 'json') {
      req = jsonBody({
        inputs: [
          { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: Array.from(a) },
          { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: Array.from(b) },
        ],
      });
    } else {
      req = binaryBody(
        {
          inputs: [
            { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', parameters: { binary_data_size: 64 } },
            { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', parameters: { binary_data_size: 64 } },
          ],
          outputs: [
            { name: 'OUTPUT0', parameters: { binary_data: true } },
            { name: 'OUTPUT1', parameters: { binary_data: true } },
          ],
        },
        [a, b],
      );
    }
    req.verify = (buf, headers) => {
      const d = decodeResponse(buf, headers);
      const sum = outputValues(d, 'OUTPUT0', Int32Array);
      const diff = outputValues(d, 'OUTPUT1', Int32Array);
      if (sum.length !== 16 || diff.length !== 16) return `expected 16 values, got ${sum.length} and ${diff.length}`;
      for (let i = 0; i < 16; i++) {
        if (sum[i] !== a[i] + b[i] || diff[i] !== a[i] - b[i]) return `wrong value at ${i}`;
      }
      if (encoding === 'binary' && d.blobs.size !== 2) return 'outputs did not come back binary';
      return null;
    };
    out.push(req);
  }
  return out;
}

/** Deterministic FP32 values in [-1, 1), as an embedding or a normalised image would hold. */
function randomFloats(n, seed) {
  const f = new Float32Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
    f[i] = x / 2147483648 - 1;
  }
  return f;
}

export const IDENTITY_1M_ELEMENTS = 262144; // 1 MiB of FP32

/**
 * Requests for the FP32 identity with dims [262144] (`max_batch_size: 0`): 1 MiB of random FP32 each way.
 * JSON carries the values as JavaScript prints them (what tritonclient's tolist() JSON amounts to, about 20
 * characters each); binary carries the 1 MiB as is and asks for OUTPUT0 as binary.
 */
export function identity1mBodies(encoding, variants = 2) {
  const out = [];
  for (let v = 0; v < variants; v++) {
    const x = randomFloats(IDENTITY_1M_ELEMENTS, 12345 + v);
    const shape = [IDENTITY_1M_ELEMENTS];
    const req = encoding === 'json'
      ? jsonBody({ inputs: [{ name: 'INPUT0', shape, datatype: 'FP32', data: Array.from(x) }] })
      : binaryBody(
        {
          inputs: [{ name: 'INPUT0', shape, datatype: 'FP32', parameters: { binary_data_size: x.byteLength } }],
          outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
        },
        [x],
      );
    req.verify = (buf, headers) => {
      const d = decodeResponse(buf, headers);
      const y = outputValues(d, 'OUTPUT0', Float32Array);
      if (y.length !== x.length) return `expected ${x.length} values, got ${y.length}`;
      // JSON round-trips FP32 exactly when printed with enough digits; compare as FP32.
      for (let i = 0; i < x.length; i += 997) if (Math.fround(y[i]) !== x[i]) return `wrong value at ${i}`;
      return null;
    };
    out.push(req);
  }
  return out;
}
