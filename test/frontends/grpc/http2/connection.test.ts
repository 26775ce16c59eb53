import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import http2 from 'node:http2';
import { once } from 'node:events';
import {
  DATA, ENHANCE_YOUR_CALM, FLOW_CONTROL_ERROR, FRAME_SIZE_ERROR, GOAWAY, HEADERS, PING, ACK, PROTOCOL_ERROR,
  COMPRESSION_ERROR, REFUSED_STREAM, RST_STREAM, SETTINGS_INITIAL_WINDOW_SIZE, WINDOW_UPDATE, CONTINUATION,
  frame, uint32Frame,
} from '../../../../src/frontends/grpc/http2/frames.js';
import { encodeBlock } from '../../../../src/frontends/grpc/http2/hpack.js';
import { EXAMPLES } from '../../../helpers/paths.js';
import { startGrpcTestServer, unary } from '../../../helpers/grpc.js';
import { FrameClient, headerFrames } from '../../../helpers/h2-frames.js';

// The gRPC frontend's HTTP/2 layer against a client that writes frames by hand: what a hostile or broken
// client can send (frames too large, header floods, rapid resets, malformed requests, a byte at a time) and
// what flow control and keepalive require. Every case also checks that the server goes on serving others.

const LIVE = '/inference.GRPCInferenceService/ServerLive';
const METADATA = '/inference.GRPCInferenceService/ServerMetadata';
const EMPTY = Buffer.alloc(0);

let server: Awaited<ReturnType<typeof startGrpcTestServer>>;
let port: number;

before(async () => {
  server = await startGrpcTestServer({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit', metrics: {} });
  port = server.grpc.port;
});

after(async () => {
  await server.close();
});

function goawayCode(f: { payload: Buffer }): number {
  return f.payload.readUInt32BE(4);
}

async function stillServing(): Promise<void> {
  assert.deepEqual(await unary(server.client, 'ServerLive', {}), { live: true });
}

test('a call: SETTINGS first, then the response headers, the message and OK trailers; PING is answered', async () => {
  const c = await FrameClient.connect(port);
  try {
    c.send(FrameClient.requestHeaders(1, LIVE), FrameClient.message(1, EMPTY), frame(PING, 0, 0, Buffer.from('12345678')));
    const trailers = await c.trailersOf(1);
    assert.equal(trailers.fields!['grpc-status'], '0');
    assert.equal(c.frames[0]!.type, 0x4, 'the server speaks first with its SETTINGS');
    const head = c.frames.find((f) => f.type === HEADERS && f.stream === 1)!;
    assert.equal(head.fields![':status'], '200');
    assert.equal(head.fields!['content-type'], 'application/grpc');
    const data = c.frames.find((f) => f.type === DATA && f.stream === 1)!;
    assert.deepEqual([...data.payload], [0, 0, 0, 0, 2, 0x08, 0x01], 'ServerLiveResponse { live: true }');
    const pong = await c.waitFor((f) => f.type === PING && (f.flags & ACK) !== 0, 'PING ACK');
    assert.equal(pong.payload.toString(), '12345678');
  } finally {
    c.close();
  }
});

test('a request sent one byte at a time is served', async () => {
  const c = await FrameClient.connect(port, [], false);
  try {
    const { PREFACE, SETTINGS } = await import('../../../../src/frontends/grpc/http2/frames.js');
    const all = Buffer.concat([PREFACE, frame(SETTINGS, 0, 0, null), FrameClient.requestHeaders(1, LIVE), FrameClient.message(1, EMPTY)]);
    for (const b of all) {
      c.socket.write(Buffer.from([b]));
      await new Promise((r) => setImmediate(r));
    }
    assert.equal((await c.trailersOf(1)).fields!['grpc-status'], '0');
  } finally {
    c.close();
  }
});

test('a client that is not HTTP/2 is disconnected', async () => {
  const socket = net.connect(port, '127.0.0.1');
  await once(socket, 'connect');
  socket.resume();
  socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  await once(socket, 'close');
  await stillServing();
});

const connectionErrors: Array<{ name: string; frames: () => Buffer[]; code: number }> = [
  { name: 'a frame larger than SETTINGS_MAX_FRAME_SIZE', frames: () => [frame(DATA, 0, 1, Buffer.alloc(16_385))], code: FRAME_SIZE_ERROR },
  { name: 'HEADERS on stream 0', frames: () => [FrameClient.requestHeaders(0, LIVE)], code: PROTOCOL_ERROR },
  { name: 'a stream with an even identifier', frames: () => [FrameClient.requestHeaders(2, LIVE)], code: PROTOCOL_ERROR },
  { name: 'DATA on a stream never opened', frames: () => [FrameClient.message(5, EMPTY)], code: PROTOCOL_ERROR },
  { name: 'PUSH_PROMISE from a client', frames: () => [frame(0x5, 0x4, 1, Buffer.alloc(4))], code: PROTOCOL_ERROR },
  { name: 'a WINDOW_UPDATE of 0 on the connection', frames: () => [uint32Frame(WINDOW_UPDATE, 0, 0)], code: PROTOCOL_ERROR },
  { name: 'a connection window past 2^31-1', frames: () => [uint32Frame(WINDOW_UPDATE, 0, 2 ** 31 - 1)], code: FLOW_CONTROL_ERROR },
  { name: 'an HPACK index past the table', frames: () => [headerFrames(1, Buffer.from([0xff, 0x40]), true)], code: COMPRESSION_ERROR },
  { name: 'a header block interrupted by another frame', frames: () => [frame(HEADERS, 0, 1, encodeBlock([[':method', 'POST']])), frame(PING, 0, 0, Buffer.alloc(8))], code: PROTOCOL_ERROR },
  {
    name: 'a header block flooding CONTINUATION frames',
    frames: () => [frame(HEADERS, 0, 1, encodeBlock([[':method', 'POST']])), ...Array.from({ length: 40 }, () => frame(CONTINUATION, 0, 1, Buffer.alloc(1000, 0x40)))],
    code: ENHANCE_YOUR_CALM,
  },
];

for (const e of connectionErrors) {
  test(`${e.name}: GOAWAY with code ${e.code}, the connection closes, others are served`, async () => {
    const c = await FrameClient.connect(port);
    try {
      c.send(...e.frames());
      const goaway = await c.waitFor((f) => f.type === GOAWAY, 'GOAWAY');
      assert.equal(goawayCode(goaway), e.code);
      await c.waitClosed();
      await stillServing();
    } finally {
      c.close();
    }
  });
}

test('a malformed request resets its stream only; the next stream on the connection is served', async () => {
  const c = await FrameClient.connect(port);
  try {
    const upper = headerFrames(1, encodeBlock([[':method', 'POST'], [':scheme', 'http'], [':path', LIVE], ['Content-Type', 'application/grpc']]), false);
    const noPath = headerFrames(3, encodeBlock([[':method', 'POST'], [':scheme', 'http'], ['content-type', 'application/grpc']]), false);
    const connectionField = FrameClient.requestHeaders(5, LIVE, [['connection', 'keep-alive']]);
    c.send(upper, noPath, connectionField, FrameClient.requestHeaders(7, LIVE), FrameClient.message(7, EMPTY));
    assert.equal((await c.trailersOf(7)).fields!['grpc-status'], '0');
    for (const id of [1, 3, 5]) {
      const rst = await c.waitFor((f) => f.type === RST_STREAM && f.stream === id, `RST_STREAM of ${id}`);
      assert.equal(rst.payload.readUInt32BE(0), PROTOCOL_ERROR);
    }
  } finally {
    c.close();
  }
});

test('a header list past SETTINGS_MAX_HEADER_LIST_SIZE is answered RESOURCE_EXHAUSTED', async () => {
  const c = await FrameClient.connect(port);
  try {
    c.send(FrameClient.requestHeaders(1, LIVE, [['x-big', 'v'.repeat(20_000)]]), FrameClient.message(1, EMPTY));
    const trailers = await c.trailersOf(1);
    assert.equal(trailers.fields!['grpc-status'], '8');
    assert.match(trailers.fields!['grpc-message']!, /Header list size \d+ exceeds the limit of 16384 bytes/);
    assert.match(await server.server.metricsText(), /^nereid_limit_refusal_count\{limit="grpc-header-list-size"\} 1$/m);
    // The connection's HPACK state stayed in step: the next call on it decodes.
    c.send(FrameClient.requestHeaders(3, LIVE), FrameClient.message(3, EMPTY));
    assert.equal((await c.trailersOf(3)).fields!['grpc-status'], '0');
  } finally {
    c.close();
  }
});

test('streams past SETTINGS_MAX_CONCURRENT_STREAMS are refused until one ends', async () => {
  const c = await FrameClient.connect(port);
  try {
    // Unary calls whose request never ends stay open on the server.
    const open = Array.from({ length: 1024 }, (_, i) => FrameClient.requestHeaders(2 * i + 1, LIVE));
    c.send(...open, FrameClient.requestHeaders(2049, LIVE));
    const refused = await c.waitFor((f) => f.type === RST_STREAM && f.stream === 2049, 'RST_STREAM of the 1025th stream');
    assert.equal(refused.payload.readUInt32BE(0), REFUSED_STREAM);
    assert.equal(c.frames.filter((f) => f.type === RST_STREAM).length, 1, 'only the stream past the limit is refused');
    c.send(FrameClient.message(1, EMPTY));
    await c.trailersOf(1);
    c.send(FrameClient.requestHeaders(2051, LIVE), FrameClient.message(2051, EMPTY));
    assert.equal((await c.trailersOf(2051)).fields!['grpc-status'], '0');
  } finally {
    c.close();
  }
});

test('rapid reset: a client opening and resetting streams faster than the server finishes them is sent away', async () => {
  const c = await FrameClient.connect(port);
  try {
    const frames: Buffer[] = [];
    for (let i = 0; i < 1100; i++) frames.push(FrameClient.requestHeaders(2 * i + 1, LIVE), FrameClient.reset(2 * i + 1));
    c.send(...frames);
    const goaway = await c.waitFor((f) => f.type === GOAWAY, 'GOAWAY');
    assert.equal(goawayCode(goaway), ENHANCE_YOUR_CALM);
    await c.waitClosed();
    await stillServing();
  } finally {
    c.close();
  }
});

test('flow control: a response larger than the client\'s window waits for its WINDOW_UPDATE, then the trailers follow', async () => {
  const c = await FrameClient.connect(port, [[SETTINGS_INITIAL_WINDOW_SIZE, 16]]);
  try {
    c.send(FrameClient.requestHeaders(1, METADATA), FrameClient.message(1, EMPTY));
    await c.waitFor((f) => f.type === DATA && f.stream === 1, 'the first DATA');
    await new Promise((r) => setTimeout(r, 100));
    const sent = c.frames.filter((f) => f.type === DATA && f.stream === 1).reduce((n, f) => n + f.payload.length, 0);
    assert.equal(sent, 16, 'no more than the window');
    assert.ok(!c.frames.some((f) => f.type === HEADERS && f.stream === 1 && (f.flags & 0x1) !== 0), 'no trailers before the DATA');
    c.send(uint32Frame(WINDOW_UPDATE, 1, 100_000));
    assert.equal((await c.trailersOf(1)).fields!['grpc-status'], '0');
    const body = Buffer.concat(c.frames.filter((f) => f.type === DATA && f.stream === 1).map((f) => f.payload));
    assert.equal(body.readUInt32BE(1), body.length - 5, 'the whole message arrived');
    assert.match(body.toString('latin1'), /triton/);
  } finally {
    c.close();
  }
});

test('a request larger than both receive windows arrives whole: the server credits them as it reads', async () => {
  const c = await FrameClient.connect(port);
  try {
    // A 10 MiB message, past the 1 MiB stream window and the 8 MiB connection window.
    const size = 10 << 20;
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(size, 1);
    const frames = [FrameClient.requestHeaders(1, LIVE), frame(DATA, 0, 1, prefix)];
    const chunk = Buffer.alloc(16_384, 0x0a);
    for (let sent = 0; sent < size; sent += chunk.length) frames.push(frame(DATA, sent + chunk.length >= size ? 0x1 : 0, 1, chunk));
    c.send(...frames);
    const trailers = await c.trailersOf(1);
    // Bytes of 0x0a are not a ServerLiveRequest: the message was read to its end and then refused.
    assert.notEqual(trailers.fields!['grpc-status'], '0');
    assert.ok(c.frames.some((f) => f.type === WINDOW_UPDATE && f.stream === 0), 'the connection window was credited');
    assert.ok(c.frames.some((f) => f.type === WINDOW_UPDATE && f.stream === 1), 'the stream window was credited');
    assert.ok(!c.frames.some((f) => f.type === GOAWAY || f.type === RST_STREAM));
  } finally {
    c.close();
  }
});

test('keepalive: a client that leaves PINGs unanswered is disconnected; max connection age sends GOAWAY', async () => {
  const s = await startGrpcTestServer({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit' }, { keepaliveTimeMs: 100, keepaliveTimeoutMs: 200, maxConnectionAgeMs: 60_000 });
  try {
    const silent = await FrameClient.connect(s.grpc.port);
    await silent.waitFor((f) => f.type === PING && (f.flags & ACK) === 0, 'a keepalive PING');
    await silent.waitClosed();
  } finally {
    await s.close();
  }
  const aged = await startGrpcTestServer({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit' }, { maxConnectionAgeMs: 1000, maxConnectionAgeGraceMs: 60_000 });
  try {
    const c = await FrameClient.connect(aged.grpc.port);
    // A call in flight when the GOAWAY comes still completes.
    c.send(FrameClient.requestHeaders(1, LIVE));
    const goaway = await c.waitFor((f) => f.type === GOAWAY, 'GOAWAY at the maximum age');
    assert.equal(goawayCode(goaway), 0);
    assert.equal(goaway.payload.readUInt32BE(0), 1, 'the last stream served is the one open');
    // A stream the client opens after the GOAWAY is refused, and its DATA already on the way is dropped.
    c.send(FrameClient.requestHeaders(3, LIVE), FrameClient.message(3, EMPTY));
    const refused = await c.waitFor((f) => f.type === RST_STREAM && f.stream === 3, 'RST_STREAM of the stream opened after GOAWAY');
    assert.equal(refused.payload.readUInt32BE(0), REFUSED_STREAM);
    c.send(FrameClient.message(1, EMPTY));
    assert.equal((await c.trailersOf(1)).fields!['grpc-status'], '0');
    await c.waitClosed();
  } finally {
    await aged.close();
  }
});

test('a client that lowers SETTINGS_HEADER_TABLE_SIZE gets a table size update first, as its HPACK decoder requires', async () => {
  // nghttp2 (node:http2's client) refuses a header block without the update once it has lowered the size.
  const call = (session: http2.ClientHttp2Session, path: string) => new Promise<string>((resolve) => {
    const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers' });
    let status: string | undefined;
    req.on('response', (h) => (status = h['grpc-status'] as string | undefined));
    req.on('trailers', (t) => (status = t['grpc-status'] as string));
    req.on('data', () => {});
    // A client that cannot decode a header block may just stall: give up rather than hang the test.
    const stalled = setTimeout(() => {
      resolve('no answer within 10 s');
      req.close();
    }, 10_000);
    req.on('close', () => {
      clearTimeout(stalled);
      resolve(status ?? `no status (stream closed with code ${req.rstCode})`);
    });
    req.on('error', () => {});
    req.end(Buffer.alloc(5));
  });
  // 4096 (the default): the responses' fields are indexed; 100: they evict each other; 0: never indexed.
  for (const headerTableSize of [0, 100, 4096]) {
    const session = http2.connect(`http://127.0.0.1:${port}`, { settings: { headerTableSize } });
    session.on('error', () => {});
    try {
      // Headers, message and trailers in one write; again on the same connection; then a trailers-only answer.
      assert.equal(await call(session, LIVE), '0');
      assert.equal(await call(session, LIVE), '0');
      assert.equal(await call(session, '/inference.GRPCInferenceService/NoSuchMethod'), '12');
      assert.equal(await call(session, METADATA), '0');
    } finally {
      session.close();
    }
  }
  await stillServing();
});

test('a header block repeated on the next stream is served as itself; a byte different, or the HPACK table changed under it, is read anew', async () => {
  const c = await FrameClient.connect(port);
  // A literal field (name and value given) added to the HPACK table, and the index 62 that then refers to it.
  const literal = (name: string, value: string): Buffer => Buffer.concat([Buffer.from([0x40, name.length]), Buffer.from(name), Buffer.from([value.length]), Buffer.from(value)]);
  const pseudo = encodeBlock([[':method', 'POST'], [':scheme', 'http'], [':path', LIVE], ['content-type', 'application/grpc']]);
  const INDEXED_62 = Buffer.from([0xbe]);
  try {
    // The same block on streams 1 and 3; on 5 one of the same length, but with te: trailerz, which is malformed.
    c.send(FrameClient.requestHeaders(1, LIVE), FrameClient.message(1, EMPTY), FrameClient.requestHeaders(3, LIVE), FrameClient.message(3, EMPTY));
    c.send(headerFrames(5, encodeBlock([[':method', 'POST'], [':scheme', 'http'], [':path', LIVE], [':authority', 'localhost'], ['content-type', 'application/grpc'], ['te', 'trailerz']]), false));
    for (const id of [1, 3]) assert.equal((await c.trailersOf(id)).fields!['grpc-status'], '0');
    assert.equal((await c.waitFor((f) => f.type === RST_STREAM && f.stream === 5, 'RST_STREAM of 5')).payload.readUInt32BE(0), PROTOCOL_ERROR);
    // te: trailers goes into the table (stream 7); blocks that only index it (9, 11) leave the table as it was.
    c.send(headerFrames(7, Buffer.concat([pseudo, literal('te', 'trailers')]), false), FrameClient.message(7, EMPTY));
    c.send(headerFrames(9, Buffer.concat([pseudo, INDEXED_62]), false), FrameClient.message(9, EMPTY));
    c.send(headerFrames(11, Buffer.concat([pseudo, INDEXED_62]), false), FrameClient.message(11, EMPTY));
    for (const id of [7, 9, 11]) assert.equal((await c.trailersOf(id)).fields!['grpc-status'], '0');
    // Stream 13 adds te: gzip (malformed: a server takes only te: trailers), which index 62 now names; the
    // block of stream 15 is the bytes of 9 and 11 again, and now malformed too.
    c.send(headerFrames(13, Buffer.concat([pseudo, literal('te', 'gzip')]), false));
    c.send(headerFrames(15, Buffer.concat([pseudo, INDEXED_62]), false), FrameClient.message(15, EMPTY));
    for (const id of [13, 15]) assert.equal((await c.waitFor((f) => f.type === RST_STREAM && f.stream === id, `RST_STREAM of ${id}`)).payload.readUInt32BE(0), PROTOCOL_ERROR);
    c.send(FrameClient.requestHeaders(17, LIVE), FrameClient.message(17, EMPTY));
    assert.equal((await c.trailersOf(17)).fields!['grpc-status'], '0');
  } finally {
    c.close();
  }
  await stillServing();
});
