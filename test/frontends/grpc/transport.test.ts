import { test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { gunzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { readSslFiles } from '../../../src/frontends/grpc/options.js';
import { EXAMPLES, FIXTURES } from '../../helpers/paths.js';
import { failure, InferenceClient, int32Bytes, int32s, rawCall, requestType, responseType, startGrpcTestServer, streamResponseType, unary, type Client } from '../../helpers/grpc.js';
import { tempRepository } from '../../helpers/server.js';
import { makeCertificates, opensslSkip } from '../../helpers/certificates.js';
import { until } from '../../helpers/until.js';

// The gRPC frontend's transport flags through a real server: TLS and mutual TLS (--grpc-use-ssl*), and
// --grpc-header-forward-pattern handing call metadata to the model as request parameters, and
// --grpc-infer-response-compression-level.

const skip = opensslSkip();

test('--grpc-use-ssl serves TLS; --grpc-use-ssl-mutual also requires a client certificate', { skip }, async () => {
  const dir = await mkdtemp(join(tmpdir(), 'nereid-tls-'));
  try {
    await makeCertificates(dir);
    const file = (f: string) => readFile(join(dir, f));
    const [ca, clientKey, clientCert] = await Promise.all([file('ca.crt'), file('client.key'), file('client.crt')]);
    const tlsClient = (port: number, withCert: boolean): Client =>
      new InferenceClient(`127.0.0.1:${port}`, withCert ? grpc.credentials.createSsl(ca, clientKey, clientCert) : grpc.credentials.createSsl(ca)) as Client;

    const tls = await startGrpcTestServer({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit' }, { ssl: readSslFiles(join(dir, 'server.crt'), join(dir, 'server.key'), '', false) });
    try {
      const c = tlsClient(tls.grpc.port, false);
      assert.deepEqual(await unary(c, 'ServerLive', {}), { live: true });
      c.close();
      // The test server's own client speaks plain HTTP/2, which a TLS port does not answer.
      await failure(unary(tls.client, 'ServerLive', {}, { deadlineMs: 2000 }));
    } finally {
      await tls.close();
    }

    const mutual = await startGrpcTestServer({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit' }, { ssl: readSslFiles(join(dir, 'server.crt'), join(dir, 'server.key'), join(dir, 'ca.crt'), true) });
    try {
      const withCert = tlsClient(mutual.grpc.port, true);
      assert.deepEqual(await unary(withCert, 'ServerReady', {}), { ready: true });
      withCert.close();
      const without = tlsClient(mutual.grpc.port, false);
      assert.equal((await failure(unary(without, 'ServerLive', {}, { deadlineMs: 2000 }))).code, grpc.status.UNAVAILABLE);
      without.close();
    } finally {
      await mutual.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('--grpc-header-forward-pattern: matching metadata (any case) reaches the model as string parameters, unary and streaming', async () => {
  const s = await startGrpcTestServer({ modelRepositories: [join(FIXTURES, 'js')], modelControlMode: 'explicit', loadModels: ['inspect'] }, { headerForwardPattern: '^x-team' });
  try {
    const metadata = new grpc.Metadata();
    metadata.set('X-Team-Name', 'vision');
    metadata.set('x-other', 'dropped');
    const request = { model_name: 'inspect', inputs: [{ name: 'IN', datatype: 'INT32', shape: [2] }], raw_input_contents: [int32Bytes([1, 2])], parameters: { mine: { string_param: 'kept' } } };
    const info = (res: any) => JSON.parse(Buffer.from(res.raw_output_contents[1]).subarray(4).toString());
    const unaryInfo = info(await unary(s.client, 'ModelInfer', request, { metadata }));
    assert.deepEqual(unaryInfo.parameters, { 'x-team-name': 'vision', mine: 'kept' });

    const streamed = await new Promise<any>((resolve, reject) => {
      const call = s.client.ModelStreamInfer(metadata);
      call.on('data', (r: any) => {
        resolve(r.infer_response);
        call.end();
      });
      call.on('error', reject);
      call.write({ ...request, parameters: {} });
    });
    assert.deepEqual(info(streamed).parameters, { 'x-team-name': 'vision' });
  } finally {
    await s.close();
  }
});

test('--grpc-infer-response-compression-level: inference responses come compressed as the client accepts, other RPCs plain', async () => {
  const repo = await tempRepository([{ from: join(EXAMPLES, 'simple') }]);
  const s = await startGrpcTestServer({ modelRepositories: [repo.dir], metrics: { cpu: false } }, { responseCompressionLevel: 'high' });
  try {
    const x = Array.from({ length: 16 }, (_, i) => i);
    const request = { model_name: 'simple', inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }], raw_input_contents: [int32Bytes(x), int32Bytes(x)] };
    const message = Buffer.from(requestType.encode(requestType.fromObject(request)).finish());
    const reply = await rawCall(s.grpc.port, '/inference.GRPCInferenceService/ModelInfer', message, false, { 'grpc-accept-encoding': 'identity,gzip' });
    assert.equal(reply.status, '0', reply.message);
    assert.equal(reply.compressedFlag, 1);
    const res = responseType.decode(gunzipSync(reply.body)) as unknown as { raw_output_contents: Uint8Array[] };
    assert.deepEqual(int32s(Buffer.from(res.raw_output_contents[0]!)), x.map((v) => 2 * v));
    // A stream of one request, half-closed at once: its one answer comes compressed too, then OK.
    const streamed = await rawCall(s.grpc.port, '/inference.GRPCInferenceService/ModelStreamInfer', message, false, { 'grpc-accept-encoding': 'gzip' });
    assert.equal(streamed.status, '0', streamed.message);
    assert.equal(streamed.compressedFlag, 1);
    const inner = (streamResponseType.decode(gunzipSync(streamed.body)) as any).infer_response;
    assert.deepEqual(int32s(Buffer.from(inner.raw_output_contents[0])), x.map((v) => 2 * v));
    // A client that accepts no compression gets plain messages.
    const plain = await rawCall(s.grpc.port, '/inference.GRPCInferenceService/ModelInfer', message, false, { 'grpc-accept-encoding': 'identity' });
    assert.equal(plain.compressedFlag, 0);
    // grpc-js's client reads them, unary and streaming.
    assert.deepEqual(int32s((await unary(s.client, 'ModelInfer', request)).raw_output_contents[1]), x.map(() => 0));
    const stream = s.client.ModelStreamInfer();
    const got = new Promise<any>((resolve) => stream.once('data', resolve));
    stream.write(request);
    assert.equal((await got).error_message, '');
    stream.end();
    const live = await rawCall(s.grpc.port, '/inference.GRPCInferenceService/ServerLive', Buffer.alloc(0), false, { 'grpc-accept-encoding': 'gzip' });
    assert.equal(live.compressedFlag, 0);
  } finally {
    await s.close();
    await repo.remove();
  }
});

test('--grpc-use-ssl: a rotated certificate and key are served to new connections without a restart', { skip }, async () => {
  const dir = await mkdtemp(join(tmpdir(), 'nereid-tls-'));
  try {
    await mkdir(join(dir, 'next'));
    await makeCertificates(dir);
    await makeCertificates(join(dir, 'next'));
    await mkdir(join(dir, 'live'));
    for (const f of ['server.crt', 'server.key']) await copyFile(join(dir, f), join(dir, 'live', f));
    const s = await startGrpcTestServer({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit' }, { ssl: readSslFiles(join(dir, 'live', 'server.crt'), join(dir, 'live', 'server.key'), '', false) });
    try {
      const served = (): Promise<string> => new Promise((resolve, reject) => {
        const c = tls.connect({ host: '127.0.0.1', port: s.grpc.port, rejectUnauthorized: false, ALPNProtocols: ['h2'] }, () => {
          resolve(c.getPeerCertificate().fingerprint256);
          c.destroy();
        });
        c.on('error', reject);
      });
      const next = new X509Certificate(await readFile(join(dir, 'next', 'server.crt'))).fingerprint256;
      assert.notEqual(await served(), next);
      for (const f of ['server.key', 'server.crt']) await copyFile(join(dir, 'next', f), join(dir, 'live', f));
      await until(async () => (await served()) === next, 'the new certificate', 30_000);
      const c = new InferenceClient(`127.0.0.1:${s.grpc.port}`, grpc.credentials.createSsl(await readFile(join(dir, 'next', 'ca.crt')))) as Client;
      assert.deepEqual(await unary(c, 'ServerLive', {}), { live: true });
      c.close();
    } finally {
      await s.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
