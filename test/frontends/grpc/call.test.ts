import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import { ServerCall, type CallSettings } from '../../../src/frontends/grpc/call.js';
import { frame as grpcFrame } from '../../../src/frontends/grpc/framing.js';
import { Status } from '../../../src/frontends/grpc/codes.js';
import { Http2Connection } from '../../../src/frontends/grpc/http2/connection.js';
import { DATA, END_STREAM, frame } from '../../../src/frontends/grpc/http2/frames.js';
import { FrameClient } from '../../helpers/h2-frames.js';

// A call's request messages as its handler reads them: in order, each marked last when the client's END_STREAM
// came in the same DATA frame right after it, and then the half-close.

const SETTINGS = { maxConcurrentStreams: 100, maxHeaderListBytes: 16384, streamWindow: 65535, connectionWindow: 65535 };
const CALL_SETTINGS: CallSettings = { maxMessageBytes: 1 << 20, maxDecompressedBytes: 1 << 20, errorStatus: () => ({ code: Status.INTERNAL, details: 'internal' }) };

/** A gRPC message (length-prefixed) holding `text`. */
const prefixed = (text: string): Buffer => grpcFrame(Buffer.from(text));

test('a message is marked last only when the client half-closed in the frame that ended it', { timeout: 30_000 }, async () => {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const seen = new Map<number, string[]>();
  let halfClosed = 0;
  let everyStreamDone: () => void;
  const done = new Promise<void>((resolve) => (everyStreamDone = resolve));
  let connection: Http2Connection | undefined;
  server.on('connection', (socket: net.Socket) => {
    connection = new Http2Connection(socket, SETTINGS, (stream) => {
      const events: string[] = [];
      seen.set(stream.id, events);
      const call = new ServerCall(stream, CALL_SETTINGS, 'identity');
      call.read(
        (message, last) => events.push(`${message.toString()}${last ? ' last' : ''}`),
        () => {
          events.push('half-close');
          if (++halfClosed === 5) everyStreamDone();
        },
      );
    });
  });
  const client = await FrameClient.connect((server.address() as net.AddressInfo).port);
  const path = '/inference.GRPCInferenceService/ModelStreamInfer';
  try {
    client.send(
      // Two frames, the second with END_STREAM.
      FrameClient.requestHeaders(1, path), frame(DATA, 0, 1, prefixed('a')), frame(DATA, END_STREAM, 1, prefixed('b')),
      // Two messages in one frame with END_STREAM: only the second is last.
      FrameClient.requestHeaders(3, path), frame(DATA, END_STREAM, 3, Buffer.concat([prefixed('c'), prefixed('d')])),
      // END_STREAM on an empty DATA frame of its own: no message is marked.
      FrameClient.requestHeaders(5, path), frame(DATA, 0, 5, prefixed('e')), frame(DATA, END_STREAM, 5, null),
      // A message that spans two frames, the second ending the stream.
      FrameClient.requestHeaders(7, path), frame(DATA, 0, 7, prefixed('fgh').subarray(0, 6)), frame(DATA, END_STREAM, 7, prefixed('fgh').subarray(6)),
      // END_STREAM on the HEADERS frame: no message at all.
      FrameClient.requestHeaders(9, path, [], true),
    );
    await done;
    assert.deepEqual(Object.fromEntries(seen), {
      1: ['a', 'b last', 'half-close'],
      3: ['c', 'd last', 'half-close'],
      5: ['e', 'half-close'],
      7: ['fgh last', 'half-close'],
      9: ['half-close'],
    });
  } finally {
    connection?.destroy();
    client.close();
    server.close();
  }
});
