import { test } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { gzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { spawnServer } from '../../helpers/server.js';
import { connect, rawCall, requestType, unary } from '../../helpers/grpc.js';
import { until } from '../../helpers/until.js';

const encode = (o: Record<string, unknown>): Buffer => Buffer.from(requestType.encode(requestType.fromObject(o)).finish());

// `nereid serve` starts the gRPC frontend beside HTTP and stops it on SIGTERM after the server has drained.

test('nereid serve listens for gRPC on --grpc-port and closes on SIGTERM', async () => {
  const p = await spawnServer(['--model-repository=examples/model_repository', '--model-control-mode=explicit', '--allow-grpc=true', '--grpc-port=0', '--grpc-address=127.0.0.1', '--grpc-keepalive-time=60000']);
  let port = 0;
  for (let i = 0; i < 50 && port === 0; i++) {
    const m = /Started GRPCInferenceService at [^:]+:(\d+)/.exec(p.output());
    if (m) port = Number(m[1]);
    else await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(port > 0, p.output());
  const client = connect(port);
  assert.deepEqual(await unary(client, 'ServerLive', {}), { live: true });
  client.close();
  p.child.kill('SIGTERM');
  assert.equal(await p.exited, 0, p.output());
});

test('keepalive and connection-age flags reach the server; flags it cannot honour are warned about, not dropped', async () => {
  const p = await spawnServer([
    '--model-repository=examples/model_repository', '--model-control-mode=explicit', '--allow-grpc=true', '--grpc-port=0', '--grpc-address=127.0.0.1',
    '--grpc-keepalive-time=100', '--grpc-keepalive-timeout=5000', '--grpc-max-connection-age=1500', '--grpc-max-connection-age-grace=100',
    '--grpc-keepalive-permit-without-calls=false', '--grpc-http2-max-pings-without-data=2', '--grpc-http2-min-recv-ping-interval-without-data=300000',
    '--grpc-http2-max-ping-strikes=2', '--grpc-infer-allocation-pool-size=8', '--reuse-grpc-port=true',
  ]);
  try {
    let port = 0;
    for (let i = 0; i < 50 && port === 0; i++) {
      const m = /Started GRPCInferenceService at [^:]+:(\d+)/.exec(p.output());
      if (m) port = Number(m[1]);
      else await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(port > 0, p.output());
    for (const flag of ['reuse-grpc-port=true', 'grpc-keepalive-permit-without-calls=false', 'grpc-http2-max-pings-without-data=2',
      'grpc-http2-min-recv-ping-interval-without-data=300000', 'grpc-http2-max-ping-strikes=2', 'grpc-infer-allocation-pool-size=8']) {
      assert.match(p.output(), new RegExp(`^W.*--${flag} has no effect: `, 'm'), flag);
    }
    // The flags given with effect produce no warning.
    assert.doesNotMatch(p.output(), /--grpc-keepalive-time=|--grpc-max-connection-age/);
    // A bare HTTP/2 connection sees the server's keepalive pings every 100 ms, then its GOAWAY at the maximum age.
    const session = http2.connect(`http://127.0.0.1:${port}`);
    let pings = 0;
    session.on('ping', () => pings++);
    const started = Date.now();
    const goaway = await new Promise<number>((resolve) => session.once('goaway', () => resolve(Date.now() - started)));
    session.destroy();
    assert.ok(pings >= 3, `pings: ${pings}`);
    // The age is jittered by up to 10 % either way, so the lower bound is 0.9 × 1500 ms; the GOAWAY coming at all is
    // the upper side.
    assert.ok(goaway >= 1350, `goaway after ${goaway} ms, before the maximum age`);
  } finally {
    p.child.kill('SIGTERM');
    assert.equal(await p.exited, 0, p.output());
  }
});

test('--grpc-max-decompressed-size: a compressed message that inflates past it is refused, and the refusal is logged by its limit', async () => {
  const p = await spawnServer(['--model-repository=examples/model_repository', '--model-control-mode=explicit', '--load-model=simple',
    '--allow-grpc=true', '--grpc-port=0', '--grpc-address=127.0.0.1', '--grpc-max-decompressed-size=65536']);
  try {
    let port = 0;
    for (let i = 0; i < 50 && port === 0; i++) {
      const m = /Started GRPCInferenceService at [^:]+:(\d+)/.exec(p.output());
      if (m) port = Number(m[1]);
      else await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(port > 0, p.output());
    const small = { model_name: 'simple', inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }] };
    const within = await rawCall(port, '/inference.GRPCInferenceService/ModelInfer', gzipSync(encode({ ...small, raw_input_contents: [Buffer.alloc(64), Buffer.alloc(64)] })), true);
    assert.equal(within.status, '0', within.message);
    const past = await rawCall(port, '/inference.GRPCInferenceService/ModelInfer', gzipSync(encode({ ...small, raw_input_contents: [Buffer.alloc(65536), Buffer.alloc(64)] })), true);
    assert.equal(past.status, String(grpc.status.RESOURCE_EXHAUSTED));
    assert.equal(past.message, 'request message decompresses to more than the maximum of 65536 bytes (--grpc-max-decompressed-size)');
    // The server's log reaches the pipe after the answer may have: wait for it.
    await until(() => /^W.*limit 'grpc-max-decompressed-size' refused a request/m.test(p.output()), 'the refusal in the log');
  } finally {
    p.child.kill('SIGTERM');
    assert.equal(await p.exited, 0, p.output());
  }
});
