import { test } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { spawnServer } from '../../helpers/server.js';
import { connect, unary } from '../../helpers/grpc.js';

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
    assert.ok(goaway >= 1000 && goaway < 5000, `goaway after ${goaway} ms`);
  } finally {
    p.child.kill('SIGTERM');
    assert.equal(await p.exited, 0, p.output());
  }
});
