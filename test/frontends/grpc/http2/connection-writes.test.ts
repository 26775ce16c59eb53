import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { Http2Connection } from '../../../../src/frontends/grpc/http2/connection.js';
import { ACK, PING, SETTINGS as SETTINGS_FRAME, PREFACE, frame } from '../../../../src/frontends/grpc/http2/frames.js';

// When the connection's frames reach the socket: a lone write leaves at once, as a response to the only call in
// flight must not wait for the work queued behind it; writes that come together in one tick leave together;
// what answers the frames of one read leaves in one system call once they have all been handled.

const SETTINGS = { maxConcurrentStreams: 100, maxHeaderListBytes: 16384, streamWindow: 65535, connectionWindow: 65535 };

/**
 * A loopback connection: the client's socket and the server's, whose system calls are reported to `onCall`
 * with the number of buffers each writes at once.
 */
async function connectedPair(onCall: (buffers: number) => void): Promise<{ server: net.Server; client: net.Socket; socket: net.Socket }> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  const [socket] = (await once(server, 'connection')) as [net.Socket];
  const write = socket._write.bind(socket);
  const writev = socket._writev!.bind(socket);
  socket._write = (chunk, encoding, cb) => {
    onCall(1);
    write(chunk, encoding, cb);
  };
  socket._writev = (chunks, cb) => {
    onCall(chunks.length);
    writev(chunks, cb);
  };
  return { server, client, socket };
}

test('a tick\'s first write leaves at once after a tick of one write, and is held with the rest after a tick of several', async () => {
  // Each system call the socket makes: the number of buffers it writes at once.
  const calls: number[] = [];
  const { server, client, socket } = await connectedPair((n) => calls.push(n));
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

test('the answers to one read\'s frames leave together in one system call, before the read is over', { timeout: 30_000 }, async () => {
  const events: string[] = [];
  const { server, client, socket } = await connectedPair((n) => events.push(`write ${n}`));
  // Around the connection's own handler: before it, and after it within the same 'data' event.
  socket.prependListener('data', () => events.push('read'));
  const connection = new Http2Connection(socket, SETTINGS, () => {});
  socket.on('data', () => events.push('handled'));
  let acks = 0;
  let input = Buffer.alloc(0);
  const allAcked = new Promise<void>((resolve) => {
    client.on('data', (chunk: Buffer) => {
      input = Buffer.concat([input, chunk]);
      while (input.length >= 9 && input.length >= 9 + input.readUIntBE(0, 3)) {
        if (input[3] === PING && (input[4]! & ACK) !== 0 && ++acks === 3) resolve();
        input = input.subarray(9 + input.readUIntBE(0, 3));
      }
    });
  });
  try {
    await nextTurn();
    events.length = 0;
    const ping = (n: number): Buffer => frame(PING, 0, 0, Buffer.alloc(8, n));
    // The client's SETTINGS (acknowledged) and three PINGs in one write: four answers.
    client.write(Buffer.concat([PREFACE, frame(SETTINGS_FRAME, 0, 0, null), ping(1), ping(2), ping(3)]));
    await allAcked;
    // However the bytes were split into reads, each read's answers left in one call before it was over.
    const reads = events.filter((e) => e === 'read').length;
    assert.ok(reads >= 1);
    let answers = 0;
    for (let i = 0; i < events.length; i++) {
      if (events[i] !== 'read') continue;
      const next = events.indexOf('read', i + 1);
      const ofRead = events.slice(i + 1, next === -1 ? undefined : next);
      assert.equal(ofRead[ofRead.length - 1], 'handled', `a read's events end with its handling: ${events.join(', ')}`);
      const writes = ofRead.filter((e) => e.startsWith('write'));
      assert.ok(writes.length <= 1, `one system call per read at most: ${events.join(', ')}`);
      answers += writes.length === 0 ? 0 : Number(writes[0]!.split(' ')[1]);
    }
    assert.equal(answers, 4, `the SETTINGS ACK and three PING ACKs: ${events.join(', ')}`);
  } finally {
    connection.destroy();
    client.destroy();
    server.close();
  }
});
