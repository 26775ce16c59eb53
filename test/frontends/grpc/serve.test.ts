import { test } from 'node:test';
import assert from 'node:assert/strict';
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
