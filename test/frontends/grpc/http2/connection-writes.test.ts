import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { Http2Connection } from '../../../../src/frontends/grpc/http2/connection.js';

// When the connection's frames reach the socket: a lone write leaves at once, as a response to the only call in
// flight must not wait for the work queued behind it; writes that come together in one tick leave together.

const SETTINGS = { maxConcurrentStreams: 100, maxHeaderListBytes: 16384, streamWindow: 65535, connectionWindow: 65535 };

test('a tick\'s first write leaves at once after a tick of one write, and is held with the rest after a tick of several', async () => {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  const [socket] = (await once(server, 'connection')) as [net.Socket];
  // Each system call the socket makes: the number of buffers it writes at once.
  const calls: number[] = [];
  const write = socket._write.bind(socket);
  const writev = socket._writev!.bind(socket);
  socket._write = (chunk, encoding, cb) => {
    calls.push(1);
    write(chunk, encoding, cb);
  };
  socket._writev = (chunks, cb) => {
    calls.push(chunks.length);
    writev(chunks, cb);
  };
  const connection = new Http2Connection(socket, SETTINGS, () => {});
  const ping = (): void => connection.ping(() => {});
  try {
    assert.deepEqual(calls, [1], 'the SETTINGS frame left before the constructor returned');
    await nextTurn();

    ping();
    ping();
    ping();
    assert.deepEqual(calls, [1, 1], 'the first of three left at once');
    await nextTurn();
    assert.deepEqual(calls, [1, 1, 2], 'the other two together, when the tick ended');

    ping();
    assert.deepEqual(calls, [1, 1, 2], 'after a tick of several writes, the next tick\'s first is held');
    ping();
    await nextTurn();
    assert.deepEqual(calls, [1, 1, 2, 2], 'and leaves with what follows it');

    ping();
    await nextTurn();
    assert.deepEqual(calls, [1, 1, 2, 2, 1]);
    ping();
    assert.deepEqual(calls, [1, 1, 2, 2, 1, 1], 'a tick of one write again: the next one leaves at once');
  } finally {
    connection.destroy();
    client.destroy();
    server.close();
  }
});
