import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import {
  ACK, END_STREAM, HEADERS, PING, PREFACE, REFUSED_STREAM, RST_STREAM, SETTINGS, SETTINGS_INITIAL_WINDOW_SIZE,
  SETTINGS_MAX_FRAME_SIZE, WINDOW_UPDATE, frame, uint32Frame,
} from '../../../../src/frontends/grpc/http2/frames.js';
import { encodeBlock } from '../../../../src/frontends/grpc/http2/hpack.js';
import { EXAMPLES } from '../../../helpers/paths.js';
import { startGrpcTestServer, unary } from '../../../helpers/grpc.js';
import { FrameClient, headerFrames, type Received } from '../../../helpers/h2-frames.js';

// Floods a hostile HTTP/2 client sends that break no rule of RFC 9113 frame by frame, so no GOAWAY answers them:
// PINGs and SETTINGS by the million, an HPACK block that references one large table entry thousands of times,
// and a window of zero that holds every response. Each must cost the server a bounded amount (what it reads
// from a client that does not read its answers, what it decodes, what it holds) while a normal client on
// another connection is served throughout. (Rapid reset, CONTINUATION floods and window overflows, which have
// their GOAWAY codes, are in connection.test.ts and conformance.test.ts.) Bounds are in bytes and counts.

const LIVE = '/inference.GRPCInferenceService/ServerLive';
const METADATA = '/inference.GRPCInferenceService/ServerMetadata';
const EMPTY = Buffer.alloc(0);

let server: Awaited<ReturnType<typeof startGrpcTestServer>>;
let port: number;

before(async () => {
  server = await startGrpcTestServer({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit' });
  port = server.grpc.port;
});

after(async () => {
  await server.close();
});

/** Calls ServerLive on the test's own gRPC client, one after another, until `attack` settles (at least once). */
async function servedDuring<T>(attack: Promise<T>): Promise<{ ok: number; failed: number; result: T }> {
  let done = false;
  const settled = attack.finally(() => (done = true));
  let ok = 0;
  let failed = 0;
  do {
    try {
      assert.deepEqual(await unary(server.client, 'ServerLive', {}), { live: true });
      ok++;
    } catch {
      failed++;
    }
  } while (!done);
  return { ok, failed, result: await settled };
}

/** Resolves once `c` has received `n` frames that `match` accepts; 60 s without them is a failure. */
async function countOf(c: FrameClient, match: (f: Received) => boolean, n: number, what: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  let seen = 0;
  let at = 0;
  for (;;) {
    for (; at < c.frames.length; at++) if (match(c.frames[at]!)) seen++;
    if (seen >= n) return;
    if (c.closed || Date.now() > deadline) throw new Error(`${seen} of ${n} ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** `n` copies of `f`, one buffer. */
function repeated(f: Buffer, n: number): Buffer {
  const out = Buffer.alloc(f.length * n);
  for (let i = 0; i < n; i++) f.copy(out, i * f.length);
  return out;
}

/**
 * Sends `flood` after the preface on a connection that never reads, 64 KiB at a time, each write once the last
 * has reached the kernel, and resolves with how many bytes had when a write waited a second in vain: what the
 * server took, and what the kernel's buffers between them hold.
 */
async function floodWithoutReading(flood: Buffer): Promise<number> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  await once(socket, 'connect');
  socket.pause();
  socket.write(Buffer.concat([PREFACE, frame(SETTINGS, 0, 0, null), frame(SETTINGS, ACK, 0, null)]));
  let taken = 0;
  try {
    while (taken < flood.length) {
      const chunk = flood.subarray(taken, taken + 65_536);
      const written = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), 1000);
        socket.write(chunk, () => {
          clearTimeout(timer);
          resolve(true);
        });
      });
      if (!written) break;
      taken += chunk.length;
    }
  } finally {
    socket.destroy();
  }
  return taken;
}

// The server stops reading a client once 4 MiB of its answers wait unread (connection.ts, OUTPUT_HIGH_WATER): of a
// 34 MB flood it takes about 8 MB with the kernel's buffers on loopback, and all of it when it does not stop.
const FLOOD_FRAMES = 2_000_000;

test('a PING flood from a client that reads: every PING is answered, with its payload, in order', async () => {
  const c = await FrameClient.connect(port);
  try {
    const n = 50_000;
    const pings = Buffer.concat(Array.from({ length: n }, (_, i) => {
      const payload = Buffer.alloc(8);
      payload.writeUInt32BE(i, 4);
      return frame(PING, 0, 0, payload);
    }));
    const { ok, failed } = await servedDuring((async () => {
      c.send(pings);
      await c.waitFor((f) => f.type === PING && f.payload.readUInt32BE(4) === n - 1, `the ACK of PING ${n - 1}`, 60_000);
    })());
    const acks = c.frames.filter((f) => f.type === PING);
    assert.equal(acks.length, n);
    assert.ok(acks.every((f, i) => (f.flags & ACK) !== 0 && f.payload.readUInt32BE(4) === i), 'each ACK carries its PING\'s payload, in order');
    assert.equal(failed, 0);
    assert.ok(ok >= 1);
    // The connection is still a working one.
    c.send(FrameClient.requestHeaders(1, LIVE), FrameClient.message(1, EMPTY));
    assert.equal((await c.trailersOf(1)).fields!['grpc-status'], '0');
  } finally {
    c.close();
  }
});

test('a PING flood from a client that does not read: the server stops reading it, and serves others', async () => {
  const flood = repeated(frame(PING, 0, 0, Buffer.alloc(8)), FLOOD_FRAMES);
  const { ok, failed, result: taken } = await servedDuring(floodWithoutReading(flood));
  assert.ok(taken < flood.length / 2, `the server took ${taken} of ${flood.length} bytes`);
  assert.equal(failed, 0);
  assert.ok(ok >= 1);
});

test('a SETTINGS flood from a client that does not read: the server stops reading it, and serves others', async () => {
  const settings = Buffer.alloc(6);
  settings.writeUInt16BE(SETTINGS_MAX_FRAME_SIZE, 0);
  settings.writeUInt32BE(16_384, 2);
  const flood = repeated(frame(SETTINGS, 0, 0, settings), FLOOD_FRAMES);
  const { ok, failed, result: taken } = await servedDuring(floodWithoutReading(flood));
  assert.ok(taken < flood.length / 2, `the server took ${taken} of ${flood.length} bytes`);
  assert.equal(failed, 0);
  assert.ok(ok >= 1);
});

test('a SETTINGS flood from a client that reads, with streams open: each is acknowledged, the streams still served', async () => {
  const c = await FrameClient.connect(port);
  try {
    // Open streams make each SETTINGS_INITIAL_WINDOW_SIZE touch every one of them.
    c.send(...Array.from({ length: 100 }, (_, i) => FrameClient.requestHeaders(2 * i + 1, LIVE)));
    const n = 20_000;
    const settings = (window: number): Buffer => {
      const p = Buffer.alloc(6);
      p.writeUInt16BE(SETTINGS_INITIAL_WINDOW_SIZE, 0);
      p.writeUInt32BE(window, 2);
      return frame(SETTINGS, 0, 0, p);
    };
    const { ok, failed } = await servedDuring((async () => {
      c.send(Buffer.concat(Array.from({ length: n }, (_, i) => settings(65_535 + (i % 2)))));
      // The client's own SETTINGS were acknowledged once before the flood.
      await countOf(c, (f) => f.type === SETTINGS && (f.flags & ACK) !== 0, n + 1, 'SETTINGS ACKs');
    })());
    assert.equal(failed, 0);
    assert.ok(ok >= 1);
    c.send(...Array.from({ length: 100 }, (_, i) => FrameClient.message(2 * i + 1, EMPTY)));
    for (let i = 0; i < 100; i++) assert.equal((await c.trailersOf(2 * i + 1)).fields!['grpc-status'], '0');
  } finally {
    c.close();
  }
});

/**
 * An HPACK bomb: a 4000-octet value entered into the dynamic table once, then referenced by one-octet indexed
 * fields. `refs` references decode to refs × 4038 octets of header list (RFC 7541 4.1's size) from a block of
 * about 4 KB + refs octets.
 */
function hpackBomb(refs: number): Buffer {
  const fields = encodeBlock([[':method', 'POST'], [':scheme', 'http'], [':path', LIVE], [':authority', 'localhost'], ['content-type', 'application/grpc'], ['te', 'trailers']]);
  const name = Buffer.from('x-bomb');
  // A literal with incremental indexing, a new name; the value's length 4000 as a 7-bit prefix integer.
  const literal = Buffer.concat([Buffer.from([0x40, name.length]), name, Buffer.from([0x7f, 0xa1, 0x1e]), Buffer.alloc(4000, 0x61)]);
  // Index 62: the newest entry of the dynamic table.
  return Buffer.concat([fields, literal, Buffer.alloc(refs, 0x80 | 62)]);
}

test('an HPACK bomb: a header list of 100 MB from a 24 KB block is counted, not built, and refused RESOURCE_EXHAUSTED', async () => {
  const c = await FrameClient.connect(port);
  try {
    const streams = 20;
    const { ok, failed } = await servedDuring((async () => {
      for (let i = 0; i < streams; i++) c.send(headerFrames(2 * i + 1, hpackBomb(20_000), false), FrameClient.message(2 * i + 1, EMPTY));
      for (let i = 0; i < streams; i++) {
        const trailers = await c.trailersOf(2 * i + 1);
        assert.equal(trailers.fields!['grpc-status'], '8');
        assert.match(trailers.fields!['grpc-message']!, /Header list size \d+ exceeds the limit of 16384 bytes/);
      }
    })());
    assert.equal(failed, 0);
    assert.ok(ok >= 1);
    // The connection's HPACK table stayed in step with the client's: the next call on it decodes.
    c.send(FrameClient.requestHeaders(2 * streams + 1, LIVE), FrameClient.message(2 * streams + 1, EMPTY));
    assert.equal((await c.trailersOf(2 * streams + 1)).fields!['grpc-status'], '0');
  } finally {
    c.close();
  }
});

test('a zero window held: responses wait, streams past the limit are refused, others are served; the window opened, all complete', async () => {
  const c = await FrameClient.connect(port, [[SETTINGS_INITIAL_WINDOW_SIZE, 0]]);
  try {
    const held = 1024;
    // Each ServerMetadata answer is a message the window of 0 holds back; their requests are whole.
    const requests: Buffer[] = [];
    for (let i = 0; i < held; i++) requests.push(FrameClient.requestHeaders(2 * i + 1, METADATA), FrameClient.message(2 * i + 1, EMPTY));
    const { ok, failed } = await servedDuring((async () => {
      c.send(...requests, FrameClient.requestHeaders(2 * held + 1, METADATA));
      const refused = await c.waitFor((f) => f.type === RST_STREAM && f.stream === 2 * held + 1, 'RST_STREAM of the stream past the limit');
      assert.equal(refused.payload.readUInt32BE(0), REFUSED_STREAM);
    })());
    assert.equal(failed, 0);
    assert.ok(ok >= 1);
    assert.equal(c.frames.filter((f) => f.type === HEADERS && (f.flags & END_STREAM) !== 0).length, 0, 'no call ended while its message was held');
    // Opening the streams' windows (and the connection's, which their answers together exceed) releases them all.
    const open = Buffer.alloc(6);
    open.writeUInt16BE(SETTINGS_INITIAL_WINDOW_SIZE, 0);
    open.writeUInt32BE(65_535, 2);
    c.send(frame(SETTINGS, 0, 0, open), uint32Frame(WINDOW_UPDATE, 0, 2 ** 30));
    for (let i = 0; i < held; i++) assert.equal((await c.trailersOf(2 * i + 1)).fields!['grpc-status'], '0');
  } finally {
    c.close();
  }
});
