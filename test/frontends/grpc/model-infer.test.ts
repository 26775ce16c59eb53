import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { EXAMPLES, FIXTURES } from '../../helpers/paths.js';
import { tempRepository } from '../../helpers/server.js';
import { CLIENT_OPTIONS, connect, failure, int32Bytes, int32s, rawCall, requestType, responseType, startGrpcTestServer, unary, type GrpcTestServer } from '../../helpers/grpc.js';

// ModelInfer as Triton's gRPC clients send it: raw_input_contents (the default of tritonclient.grpc) and typed
// contents, BYTES, request parameters, and the errors each mistake gets.

let repo: { dir: string; remove(): Promise<void> };
let s: GrpcTestServer;
before(async () => {
  repo = await tempRepository([
    { from: join(EXAMPLES, 'simple') }, { from: join(EXAMPLES, 'simple_string') }, { from: join(EXAMPLES, 'repeat_int32') },
    { from: join(FIXTURES, 'slow', 'slow_fp32') }, { from: join(EXAMPLES, 'custom_identity_int32') },
    { from: join(FIXTURES, 'dtypes', 'identity_int64') }, { from: join(FIXTURES, 'dtypes', 'identity_bool') },
    { from: join(FIXTURES, 'dtypes', 'identity_fp16') }, { from: join(FIXTURES, 'dtypes', 'identity_uint8') },
  ]);
  s = await startGrpcTestServer({ modelRepositories: [repo.dir] });
});
after(async () => {
  await s.close();
  await repo.remove();
});

const IN0 = Array.from({ length: 16 }, (_, i) => i);
const IN1 = Array.from({ length: 16 }, () => 1);

function simpleRaw(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    model_name: 'simple',
    inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }],
    raw_input_contents: [int32Bytes(IN0), int32Bytes(IN1)],
    ...extra,
  };
}

test('raw_input_contents in, raw_output_contents out, as tritonclient.grpc sends and reads them', async () => {
  const res = await unary(s.client, 'ModelInfer', simpleRaw({ id: 'req-1', outputs: [{ name: 'OUTPUT0' }, { name: 'OUTPUT1' }] }));
  assert.equal(res.model_name, 'simple');
  assert.equal(res.model_version, '1');
  assert.equal(res.id, 'req-1');
  assert.deepEqual(res.outputs.map((o: any) => [o.name, o.datatype, o.shape]), [['OUTPUT0', 'INT32', ['1', '16']], ['OUTPUT1', 'INT32', ['1', '16']]]);
  assert.equal(res.outputs[0].contents, null);
  assert.deepEqual(int32s(res.raw_output_contents[0]), IN0.map((v) => v + 1));
  assert.deepEqual(int32s(res.raw_output_contents[1]), IN0.map((v) => v - 1));
});

test('typed contents in: outputs still come raw; every output when none are named', async () => {
  const res = await unary(s.client, 'ModelInfer', {
    model_name: 'simple', model_version: '1',
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], contents: { int_contents: IN0 } },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], contents: { int_contents: IN1 } },
    ],
  });
  assert.equal(res.raw_output_contents.length, 2);
  assert.deepEqual(int32s(res.raw_output_contents[0]), IN0.map((v) => v + 1));
});

test('typed contents of other datatypes: INT64, BOOL, UINT8', async () => {
  const i64 = await unary(s.client, 'ModelInfer', {
    model_name: 'identity_int64', inputs: [{ name: 'INPUT0', datatype: 'INT64', shape: [1, 3], contents: { int64_contents: ['-2', '9007199254740993', '5'] } }],
  });
  const b = i64.raw_output_contents[0] as Buffer;
  assert.deepEqual([b.readBigInt64LE(0), b.readBigInt64LE(8), b.readBigInt64LE(16)], [-2n, 9007199254740993n, 5n]);
  const bool = await unary(s.client, 'ModelInfer', {
    model_name: 'identity_bool', inputs: [{ name: 'INPUT0', datatype: 'BOOL', shape: [1, 3], contents: { bool_contents: [true, false, true] } }],
  });
  assert.deepEqual([...bool.raw_output_contents[0]], [1, 0, 1]);
  const u8 = await unary(s.client, 'ModelInfer', {
    model_name: 'identity_uint8', inputs: [{ name: 'INPUT0', datatype: 'UINT8', shape: [1, 2], contents: { uint_contents: [7, 255] } }],
  });
  assert.deepEqual([...u8.raw_output_contents[0]], [7, 255]);
});

test('FP16 travels raw; typed contents for it are refused', async () => {
  const half = Buffer.from([0x00, 0x3c, 0x00, 0xc0]); // 1.0, -2.0
  const res = await unary(s.client, 'ModelInfer', { model_name: 'identity_fp16', inputs: [{ name: 'INPUT0', datatype: 'FP16', shape: [1, 2] }], raw_input_contents: [half] });
  assert.deepEqual(res.raw_output_contents[0], half);
  const err = await failure(unary(s.client, 'ModelInfer', { model_name: 'identity_fp16', inputs: [{ name: 'INPUT0', datatype: 'FP16', shape: [1, 1], contents: { fp32_contents: [1] } }] }));
  assert.equal(err.code, grpc.status.INVALID_ARGUMENT);
  assert.equal(err.details, "unexpected explicit tensor data for input tensor 'INPUT0' for model 'identity_fp16' of type 'FP32', expected datatype 'FP16'");
});

function serialized(strings: string[]): Buffer {
  return Buffer.concat(strings.flatMap((x) => {
    const b = Buffer.from(x);
    const len = Buffer.alloc(4);
    len.writeUInt32LE(b.byteLength);
    return [len, b];
  }));
}

function deserialized(b: Buffer): string[] {
  const out: string[] = [];
  for (let at = 0; at < b.byteLength;) {
    const n = b.readUInt32LE(at);
    out.push(b.subarray(at + 4, at + 4 + n).toString());
    at += 4 + n;
  }
  return out;
}

test('BYTES: raw with length prefixes and typed bytes_contents; outputs raw with prefixes', async () => {
  const a = IN0.map(String);
  const one = IN1.map(String);
  const raw = await unary(s.client, 'ModelInfer', {
    model_name: 'simple_string',
    inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [1, 16] }, { name: 'INPUT1', datatype: 'BYTES', shape: [1, 16] }],
    raw_input_contents: [serialized(a), serialized(one)],
  });
  assert.deepEqual(deserialized(raw.raw_output_contents[0]), IN0.map((v) => String(v + 1)));
  const typed = await unary(s.client, 'ModelInfer', {
    model_name: 'simple_string',
    inputs: [
      { name: 'INPUT0', datatype: 'BYTES', shape: [1, 16], contents: { bytes_contents: a.map((x) => Buffer.from(x)) } },
      { name: 'INPUT1', datatype: 'BYTES', shape: [1, 16], contents: { bytes_contents: one.map((x) => Buffer.from(x)) } },
    ],
  });
  assert.deepEqual(deserialized(typed.raw_output_contents[1]), IN0.map((v) => String(v - 1)));
});

test('BYTES that do not fill the shape: Triton\'s element-count messages, raw and typed', async () => {
  const a = IN0.map(String);
  const cases: [Record<string, unknown>, string][] = [
    [{ raw_input_contents: [serialized(a.slice(0, 15)), serialized(a)] }, "expected 16 string elements for inference input 'INPUT0' for model 'simple_string', got 15"],
    // The last element's length runs past the end: it is not a complete element.
    [{ raw_input_contents: [serialized(a).subarray(0, -1), serialized(a)] }, "expected 16 string elements for inference input 'INPUT0' for model 'simple_string', got 15"],
    [{ raw_input_contents: [serialized([...a, 'x']), serialized(a)] }, "unexpected number of string elements 17 for inference input 'INPUT0' for model 'simple_string', expecting 16"],
    [{ typed: 15 }, "expected 16 string elements for inference input 'INPUT0' for model 'simple_string', got 15"],
    [{ typed: 17 }, "unexpected number of string elements 17 for inference input 'INPUT0' for model 'simple_string', expecting 16"],
  ];
  for (const [c, message] of cases) {
    const n = c['typed'] as number | undefined;
    const inputs = [
      { name: 'INPUT0', datatype: 'BYTES', shape: [1, 16], ...(n ? { contents: { bytes_contents: Array.from({ length: n }, (_, i) => Buffer.from(String(i))) } } : {}) },
      { name: 'INPUT1', datatype: 'BYTES', shape: [1, 16], ...(n ? { contents: { bytes_contents: a.map((x) => Buffer.from(x)) } } : {}) },
    ];
    const err = await failure(unary(s.client, 'ModelInfer', { model_name: 'simple_string', inputs, raw_input_contents: n ? [] : c['raw_input_contents'] }));
    assert.deepEqual([err.code, err.details], [grpc.status.INVALID_ARGUMENT, message]);
  }
});

test('errors: unknown model, wrong shape, wrong datatype, both contents kinds, missing or extra raw data, bad version', async () => {
  const cases: [Record<string, unknown>, grpc.status, RegExp][] = [
    // Triton answers a name the repository does not have with INVALID_ARG.
    [simpleRaw({ model_name: 'nope' }), grpc.status.INVALID_ARGUMENT, /Request for unknown model: 'nope' is not found/],
    // The shape is checked before the data, as in Triton's core: a wrong shape is reported as such.
    [{ ...simpleRaw(), inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 8] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }] }, grpc.status.INVALID_ARGUMENT, /^unexpected shape for input 'INPUT0' for model 'simple'\. Expected \[-1,16\], got \[1,8\]$/],
    [{ ...simpleRaw(), inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [2, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [2, 16] }] }, grpc.status.INVALID_ARGUMENT, /^input byte size mismatch for input 'INPUT0' for model 'simple'\. Expected 128, got 64$/],
    [{ ...simpleRaw(), inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }] }, grpc.status.INVALID_ARGUMENT, /INPUT0/],
    [{ ...simpleRaw(), inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16], contents: { int_contents: IN0 } }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }] }, grpc.status.INVALID_ARGUMENT, /^contents field must not be specified when using raw_input_contents for 'INPUT0' for model 'simple'$/],
    [{ ...simpleRaw(), raw_input_contents: [int32Bytes(IN0)] }, grpc.status.INVALID_ARGUMENT, /^unable to find data for input tensor 'INPUT1' for model 'simple' in request\.$/],
    [{ ...simpleRaw(), raw_input_contents: [int32Bytes(IN0), int32Bytes(IN1), int32Bytes(IN1)] }, grpc.status.INVALID_ARGUMENT, /raw_input_contents/],
    [{ ...simpleRaw(), inputs: [{ name: 'INPUT0', datatype: 'INT33', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }] }, grpc.status.INVALID_ARGUMENT, /inference input 'INPUT0' data-type is 'INVALID', but model 'simple' expects 'INT32'/],
    [{ ...simpleRaw(), inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16], contents: { int_contents: [1, 2] } }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], contents: { int_contents: IN1 } }], raw_input_contents: [] }, grpc.status.INVALID_ARGUMENT, /^input byte size mismatch for input 'INPUT0' for model 'simple'\. Expected 64, got 8$/],
    // Typed contents in the field of another datatype, in two fields at once, or in none.
    [{ ...simpleRaw(), inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16], contents: { fp32_contents: IN0 } }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], contents: { int_contents: IN1 } }], raw_input_contents: [] },
      grpc.status.INVALID_ARGUMENT, /^unexpected explicit tensor data for input tensor 'INPUT0' for model 'simple' of type 'FP32', expected datatype 'INT32'$/],
    [{ ...simpleRaw(), inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16], contents: { int_contents: IN0, int64_contents: IN0 } }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], contents: { int_contents: IN1 } }], raw_input_contents: [] },
      grpc.status.INVALID_ARGUMENT, /^unexpected explicit tensor data for input tensor 'INPUT0' for model 'simple', binary data was already supplied\.$/],
    [{ ...simpleRaw(), inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16], contents: {} }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], contents: { int_contents: IN1 } }], raw_input_contents: [] },
      grpc.status.INVALID_ARGUMENT, /^input byte size mismatch for input 'INPUT0' for model 'simple'\. Expected 64, got 0$/],
    [simpleRaw({ model_version: 'x1' }), grpc.status.INVALID_ARGUMENT, /^failed to get model version from specified version string 'x1' \(details: stol\), version should be an integral value > 0$/],
    [simpleRaw({ model_version: '99999999999999999999' }), grpc.status.INVALID_ARGUMENT, /^failed to get model version from specified version string '99999999999999999999' \(details: stol\)/],
    [simpleRaw({ model_version: '-1' }), grpc.status.INVALID_ARGUMENT, /^invalid model version specified '-1' , version should be an integral value > 0$/],
    [simpleRaw({ model_version: '7' }), grpc.status.NOT_FOUND, /^Request for unknown model: 'simple' version 7 is not found$/],
    // stol reads the leading digits and ignores the rest, so Triton takes ' 7x' for version 7 as well.
    [simpleRaw({ model_version: ' 7x' }), grpc.status.NOT_FOUND, /^Request for unknown model: 'simple' version 7 is not found$/],
    [simpleRaw({ parameters: { triton_x: { bool_param: true } } }), grpc.status.INVALID_ARGUMENT, /reserved/],
    [simpleRaw({ parameters: { sequence_start: { int64_param: '1' } } }), grpc.status.INVALID_ARGUMENT, /sequence_start/],
    [simpleRaw({ parameters: { priority: { string_param: 'high' } } }), grpc.status.INVALID_ARGUMENT, /priority/],
    [simpleRaw({ parameters: { custom: { uint64_param: '1' } } }), grpc.status.INVALID_ARGUMENT, /custom/],
    [{ model_name: 'repeat_int32', inputs: [{ name: 'IN', datatype: 'INT32', shape: [1], contents: { int_contents: [1] } }, { name: 'DELAY', datatype: 'UINT32', shape: [1], contents: { uint_contents: [0] } }, { name: 'WAIT', datatype: 'UINT32', shape: [1], contents: { uint_contents: [0] } }] },
      grpc.status.UNIMPLEMENTED, /ModelInfer RPC doesn't support models with decoupled transaction policy/],
    // Triton refuses a decoupled model right after the version, before it looks at the inputs.
    [{ model_name: 'repeat_int32', inputs: [{ name: 'NOPE', datatype: 'INT32', shape: [1], contents: { int_contents: [1] } }] },
      grpc.status.UNIMPLEMENTED, /^ModelInfer RPC doesn't support models with decoupled transaction policy$/],
  ];
  for (const [req, code, message] of cases) {
    const err = await failure(unary(s.client, 'ModelInfer', req));
    assert.equal(err.code, code, `${err.details} for ${JSON.stringify(req, (k, v) => (k === 'raw_input_contents' ? undefined : v))}`);
    assert.match(err.details, message);
  }
  // The server keeps serving.
  assert.equal((await unary(s.client, 'ModelInfer', simpleRaw())).raw_output_contents.length, 2);
});

test('request parameters: sequence ids as int64 or string, priority as uint64, timeout, binary_data_output ignored, custom', async () => {
  const res = await unary(s.client, 'ModelInfer', simpleRaw({
    parameters: { priority: { uint64_param: '1' }, timeout: { int64_param: '100000000' }, binary_data_output: { bool_param: true }, my_flag: { double_param: 0.5 } },
  }));
  assert.equal(res.raw_output_contents.length, 2);
});

test('malformed protobuf is refused with a status, and the server keeps serving', async () => {
  // Field 1 (model_name) claims a length far past the end of the message.
  const reply = await rawCall(s.grpc.port, '/inference.GRPCInferenceService/ModelInfer', Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x0f, 0x01]), false);
  assert.equal(reply.status, String(grpc.status.INTERNAL), reply.message);
  assert.match(reply.message, /deserializ/i);
  assert.equal((await unary(s.client, 'ModelInfer', simpleRaw())).raw_output_contents.length, 2);
});

test('a gzip-compressed request is accepted; the response comes back uncompressed', async () => {
  // Framed by hand so the test sees the wire: compressed flag 1 and grpc-encoding: gzip on the request.
  const message = requestType.encode(requestType.fromObject(simpleRaw())).finish();
  const reply = await rawCall(s.grpc.port, '/inference.GRPCInferenceService/ModelInfer', gzipSync(message), true);
  assert.equal(reply.status, '0', reply.message);
  assert.equal(reply.compressedFlag, 0);
  const res = responseType.decode(reply.body) as any;
  assert.deepEqual(int32s(Buffer.from(res.raw_output_contents[0])), IN0.map((v) => v + 1));
  // grpc-js's own client compresses the same way when asked to.
  const gz = connect(s.grpc.port, { ...CLIENT_OPTIONS, 'grpc.default_compression_algorithm': 2 });
  const viaClient = await unary(gz, 'ModelInfer', simpleRaw());
  gz.close();
  assert.deepEqual(int32s(viaClient.raw_output_contents[1]), IN0.map((v) => v - 1));
});

test('messages above grpc-js\'s 4 MiB default go both ways (8 MiB in, 8 MiB out)', async () => {
  const n = 2 * 1024 * 1024;
  const values = new Int32Array(n).map((_, i) => i);
  const res = await unary(s.client, 'ModelInfer', {
    model_name: 'custom_identity_int32', inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, n] }], raw_input_contents: [Buffer.from(values.buffer)],
  });
  const out = res.raw_output_contents[0] as Buffer;
  assert.equal(out.byteLength, n * 4);
  assert.equal(out.readInt32LE((n - 1) * 4), n - 1);
});

test('a cancelled or expired call drops its queued work', async () => {
  const body = (i: number) => ({ model_name: 'slow_fp32', id: String(i), inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 16] }], raw_input_contents: [Buffer.alloc(64)] });
  const before = structuredClone(s.server.statistics('slow_fp32').model_stats[0]) as any;
  const first = unary(s.client, 'ModelInfer', body(0));
  const expired = Array.from({ length: 4 }, (_, i) => failure(unary(s.client, 'ModelInfer', body(i + 1), { deadlineMs: 20 })));
  const cancelled = new Promise<grpc.ServiceError>((resolve) => {
    const call = s.client.ModelInfer(body(9), (e: grpc.ServiceError | null) => resolve(e!));
    setTimeout(() => call.cancel(), 20);
  });
  for (const e of await Promise.all(expired)) assert.equal(e.code, grpc.status.DEADLINE_EXCEEDED);
  assert.equal((await cancelled).code, grpc.status.CANCELLED);
  await first;
  // Give a cancelled request that slipped into the instance time to finish, then count executions.
  await new Promise((r) => setTimeout(r, 300));
  const stats = s.server.statistics('slow_fp32').model_stats[0] as any;
  assert.ok(stats.execution_count - before.execution_count <= 2, `executions: ${stats.execution_count - before.execution_count}`);
  assert.ok(stats.inference_stats.fail.count - before.inference_stats.fail.count >= 4, JSON.stringify([before.inference_stats, stats.inference_stats]));
});
