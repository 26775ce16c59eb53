import { test } from 'node:test';
import { request as httpRequest } from 'node:http';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { startGrpcFrontend } from '../../src/frontends/grpc/server.js';
import { startHttpFrontend } from '../../src/frontends/http/server.js';
import { FIXTURES } from '../helpers/paths.js';
import { postJson } from '../helpers/http.js';
import { connect, failure, int32Bytes, startGrpcTestServer, unary, type Client } from '../helpers/grpc.js';

// Header forwarding as Triton's qa/L0_parameters pins it (parameters_test.py, test.sh): a forwarded header named
// like a reserved parameter is refused with "reserved for Triton usage" (test_headers_reserved_rejected); a
// `(?-i)` pattern matches case-sensitively (test_grpc_header_forward_pattern_case_sensitive); a value with
// quotes and a backslash arrives as sent, over gRPC as over HTTP (test_headers, my_header_3). Over HTTP, Triton
// matches and forwards each header under its name as sent (http_server.cc ForEachHeader). Triton's value also
// ends in a space, which Node loses before any code of Nereid runs: its HTTP/1.1 parser trims a value's trailing
// whitespace (in req.rawHeaders too), and RFC 9113 §8.2.1 forbids such a value in an HTTP/2 field (gRPC
// clients built on nghttp2 drop the field); the checks below send the value without the space.

const RESERVED = ['sequence_id', 'sequence_start', 'sequence_end', 'priority', 'timeout', 'headers', 'binary_data_output',
  'triton_enable_empty_final_response', 'triton_final_response', 'triton_injected_via_header'];
const PATTERN = `my_header.*|${RESERVED.join('|')}`;
const QUOTED = 'This is a "quoted" string with a backslash\\ ';

const grpcRequest = { model_name: 'inspect', inputs: [{ name: 'IN', datatype: 'INT32', shape: [2] }], raw_input_contents: [int32Bytes([1, 2])] };
const httpBody = { inputs: [{ name: 'IN', shape: [2], datatype: 'INT32', data: [1, 2] }] };
const grpcParams = (res: any): Record<string, unknown> => JSON.parse(Buffer.from(res.raw_output_contents[1]).subarray(4).toString()).parameters;
const httpParams = (body: any): Record<string, unknown> => JSON.parse(body.outputs.find((o: any) => o.name === 'INFO').data[0]).parameters;

function metadata(entries: Record<string, string>): grpc.Metadata {
  const m = new grpc.Metadata();
  for (const [k, v] of Object.entries(entries)) m.set(k, v);
  return m;
}

function streamOne(client: Client, m: grpc.Metadata): Promise<any> {
  return new Promise((resolve, reject) => {
    const call = client.ModelStreamInfer(m);
    call.on('data', (r: any) => {
      resolve(r);
      call.end();
    });
    call.on('error', reject);
    call.write(grpcRequest);
  });
}

test('a forwarded header named like a reserved parameter is refused over HTTP and gRPC; other values arrive as sent', async () => {
  const s = await startGrpcTestServer({ modelRepositories: [join(FIXTURES, 'js')], modelControlMode: 'explicit', loadModels: ['inspect'] }, { headerForwardPattern: PATTERN });
  const http = await startHttpFrontend(s.server, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20, headerForwardPattern: PATTERN }, s.logger);
  const url = `http://127.0.0.1:${http.port}/v2/models/inspect/infer`;
  try {
    for (const key of RESERVED) {
      const r = await postJson(url, httpBody, { [key]: 'dummy-value' });
      assert.equal(r.status, 400, key);
      assert.match(r.json().error, /reserved for Triton usage/, key);

      const e = await failure(unary(s.client, 'ModelInfer', grpcRequest, { metadata: metadata({ [key]: 'dummy-value' }) }));
      assert.equal(e.code, grpc.status.INVALID_ARGUMENT, key);
      assert.match(e.details, /reserved for Triton usage/, key);

      const streamed = await streamOne(s.client, metadata({ [key]: 'dummy-value' }));
      assert.match(streamed.error_message, /reserved for Triton usage/, key);
    }
    // Values with quotes and a backslash reach the model the same over HTTP and gRPC (unary and stream).
    const headers = { header_1: 'value_1', my_header_1: 'my_value_1', my_header_3: QUOTED };
    const ok = await postJson(url, httpBody, headers);
    assert.equal(ok.status, 200, JSON.stringify(ok.json()));
    const expected = httpParams(ok.json());
    assert.deepEqual(expected, { my_header_1: 'my_value_1', my_header_3: QUOTED.trimEnd() });
    const sent = { ...headers, my_header_3: QUOTED.trimEnd() };
    assert.deepEqual(grpcParams(await unary(s.client, 'ModelInfer', grpcRequest, { metadata: metadata(sent) })), expected);
    assert.deepEqual(grpcParams((await streamOne(s.client, metadata(sent))).infer_response), expected);
  } finally {
    await http.close();
    await s.close();
  }
});

test('RE2 inline flags: (?-i) makes the pattern case-sensitive, as Triton reads it; without it any case matches', async () => {
  const s = await startGrpcTestServer({ modelRepositories: [join(FIXTURES, 'js')], modelControlMode: 'explicit', loadModels: ['inspect'] }, { headerForwardPattern: 'MY_HEADER.*' });
  const sensitive = await startGrpcFrontend(s.server, { port: 0, address: '127.0.0.1', headerForwardPattern: '(?-i)MY_HEADER.*' }, s.logger);
  const client = connect(sensitive.port);
  try {
    const m = metadata({ header_1: 'value_1', my_header_1: 'my_value_1' });
    assert.deepEqual(grpcParams(await unary(s.client, 'ModelInfer', grpcRequest, { metadata: m })), { my_header_1: 'my_value_1' });
    assert.deepEqual(grpcParams(await unary(client, 'ModelInfer', grpcRequest, { metadata: m })), {});
  } finally {
    client.close();
    await sensitive.close();
    await s.close();
  }
});

/** An infer request over node:http, whose header names keep the case given here (fetch would lowercase them). */
function postWithHeaders(port: number, headers: Record<string, string>): Promise<{ status: number; body: any }> {
  const body = JSON.stringify(httpBody);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: '/v2/models/inspect/infer', headers: { 'Content-Type': 'application/json', ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('HTTP: a header is matched and forwarded under its name as sent; (?-i) makes the match case-sensitive', async () => {
  const s = await startGrpcTestServer({ modelRepositories: [join(FIXTURES, 'js')], modelControlMode: 'explicit', loadModels: ['inspect'] });
  const insensitive = await startHttpFrontend(s.server, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20, headerForwardPattern: 'MY_HEADER.*' }, s.logger);
  const sensitive = await startHttpFrontend(s.server, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20, headerForwardPattern: '(?-i)MY_HEADER.*' }, s.logger);
  try {
    const headers = { header_1: 'value_1', my_header_1: 'my_value_1', My_Header_2: 'my_value_2', MY_HEADER_3: 'my_value_3' };
    const a = await postWithHeaders(insensitive.port, headers);
    assert.equal(a.status, 200, JSON.stringify(a.body));
    assert.deepEqual(httpParams(a.body), { my_header_1: 'my_value_1', My_Header_2: 'my_value_2', MY_HEADER_3: 'my_value_3' });
    const b = await postWithHeaders(sensitive.port, headers);
    assert.equal(b.status, 200, JSON.stringify(b.body));
    assert.deepEqual(httpParams(b.body), { MY_HEADER_3: 'my_value_3' });
  } finally {
    await sensitive.close();
    await insensitive.close();
    await s.close();
  }
});
