import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  ACK, CONTINUATION, DATA, END_HEADERS, END_STREAM, GOAWAY, HEADERS, PADDED, PING, PRIORITY, PRIORITY_FLAG, PUSH_PROMISE,
  RST_STREAM, SETTINGS, WINDOW_UPDATE, frame,
} from '../../../../src/frontends/grpc/http2/frames.js';
import { CompressionError, HeaderDecoder, encodeBlock } from '../../../../src/frontends/grpc/http2/hpack.js';
import { EXAMPLES } from '../../../helpers/paths.js';
import { startGrpcTestServer, unary } from '../../../helpers/grpc.js';
import { FrameClient, type Received } from '../../../helpers/h2-frames.js';
import { chance, fuzzCases, fuzzSeed, int, pick, seeded, type Rng } from '../../../helpers/fuzz.js';
import { FIELDS, randomBlock } from '../../../helpers/hpack-blocks.js';

// A bounded, seeded fuzz of the hand-written HTTP/2 layer: the HPACK decoder in process, and the frame reader
// through a real server. What must hold for any input: the decoder either decodes a block or refuses it with a
// CompressionError (never another exception), its dynamic table never outgrows its announced size, and it takes
// time in proportion to the block; the server answers every connection (the PING sent after the frames, or
// GOAWAY and the close), with error codes RFC 9113 defines, and goes on serving others. The conformance suite
// checks which code each case gets. NEREID_FUZZ_SEED and NEREID_FUZZ_CASES explore further by hand.

const LIVE = '/inference.GRPCInferenceService/ServerLive';

function mutate(rng: Rng, b: Buffer): Buffer {
  const out = Buffer.from(b);
  if (out.length === 0) return out;
  for (let k = 1 + int(rng, 3); k > 0; k--) out[int(rng, out.length)] = int(rng, 256);
  return chance(rng, 0.3) ? out.subarray(0, int(rng, out.length + 1)) : out;
}

/** The decoder's table size, read for the test only: the bound on what a client can make it hold. */
const tableOf = (d: HeaderDecoder): { size: number; maxSize: number } => d as unknown as { size: number; maxSize: number };

test('HPACK decoder: any block decodes or is a CompressionError, and the dynamic table stays within its announced size', () => {
  const seed = fuzzSeed(36_7541);
  const rng = seeded(seed);
  const counts = { decoded: 0, refused: 0, fields: 0 };
  let decoder = new HeaderDecoder();
  for (let i = 0; i < fuzzCases(20_000); i++) {
    const base = chance(rng, 0.5) ? randomBlock(rng) : encodeBlock(Array.from({ length: 1 + int(rng, 6) }, () => pick(rng, FIELDS)));
    const block = chance(rng, 0.4) ? mutate(rng, base) : base;
    try {
      decoder.decode(block, chance(rng, 0.9) ? 16_384 : int(rng, 200), (name, value) => {
        assert.equal(typeof name, 'string');
        assert.equal(typeof value, 'string');
        counts.fields++;
      });
      counts.decoded++;
    } catch (e) {
      if (!(e instanceof CompressionError)) assert.fail(`seed ${seed}, block ${i} (${block.toString('hex')}): ${String(e)}`);
      counts.refused++;
      // A COMPRESSION_ERROR ends the connection, and its decoder with it.
      decoder = new HeaderDecoder();
    }
    const t = tableOf(decoder);
    assert.ok(t.size <= t.maxSize && t.maxSize <= 4096, `seed ${seed}, block ${i}: table of ${t.size} octets, maximum ${t.maxSize}`);
  }
  assert.ok(counts.decoded > 1000 && counts.refused > 1000, JSON.stringify(counts));
});

let server: Awaited<ReturnType<typeof startGrpcTestServer>>;
let port: number;

before(async () => {
  server = await startGrpcTestServer({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit' });
  port = server.grpc.port;
});

after(async () => {
  await server.close();
});

const STREAMS = [1, 1, 1, 3, 3, 5, 0, 2, 0x7fffffff];
const TYPES = [DATA, DATA, HEADERS, HEADERS, CONTINUATION, PRIORITY, PRIORITY, RST_STREAM, SETTINGS, SETTINGS, PUSH_PROMISE, PING, PING, GOAWAY, WINDOW_UPDATE, WINDOW_UPDATE, 0x0a, 0xff];

function payloadFor(rng: Rng, type: number, flags: number): Buffer {
  let p: Buffer;
  switch (type) {
    case HEADERS: case CONTINUATION: case PUSH_PROMISE:
      p = chance(rng, 0.6) ? encodeBlock(FIELDS.slice(0, 6)) : randomBlock(rng);
      if (type === HEADERS && (flags & PRIORITY_FLAG) !== 0) p = Buffer.concat([Buffer.alloc(5, int(rng, 256)), p]);
      if (type === PUSH_PROMISE) p = Buffer.concat([Buffer.alloc(4), p]);
      break;
    case DATA: {
      const n = int(rng, 64);
      p = Buffer.alloc(5 + n);
      p.writeUInt32BE(chance(rng, 0.8) ? n : int(rng, 1 << 24), 1);
      break;
    }
    case SETTINGS: {
      p = Buffer.alloc(6 * int(rng, 4));
      for (let at = 0; at < p.length; at += 6) {
        p.writeUInt16BE(int(rng, 8), at);
        p.writeUInt32BE(chance(rng, 0.5) ? int(rng, 70_000) : Math.floor(rng() * 2 ** 32), at + 2);
      }
      break;
    }
    case PING: p = Buffer.alloc(8, 7); break;
    case GOAWAY: p = Buffer.alloc(8); break;
    case PRIORITY: p = Buffer.alloc(5, int(rng, 4)); break;
    default: p = Buffer.alloc(4);
      p.writeUInt32BE(chance(rng, 0.7) ? int(rng, 70_000) : Math.floor(rng() * 2 ** 32));
  }
  if ((flags & PADDED) !== 0 && (type === DATA || type === HEADERS)) p = Buffer.concat([Buffer.from([chance(rng, 0.7) ? int(rng, 4) : int(rng, 256)]), p, Buffer.alloc(3)]);
  if (chance(rng, 0.1)) p = mutate(rng, p);
  if (chance(rng, 0.03)) p = Buffer.alloc(int(rng, 20_000), int(rng, 256));
  return p;
}

/** Mostly a well-formed call with a few frames of any kind around it, so that both outcomes are reached. */
function randomFrames(rng: Rng): Buffer[] {
  const out: Buffer[] = [];
  const call = chance(rng, 0.6);
  if (call) out.push(FrameClient.requestHeaders(1, LIVE));
  for (let i = int(rng, 4); i >= 0; i--) {
    const type = pick(rng, TYPES);
    const flags = chance(rng, 0.1) ? int(rng, 256) : type === HEADERS ? END_HEADERS | (chance(rng, 0.5) ? END_STREAM : 0) : type === DATA ? (chance(rng, 0.6) ? END_STREAM : 0) : type === CONTINUATION ? END_HEADERS : 0;
    out.push(frame(type, flags, pick(rng, STREAMS), payloadFor(rng, type, flags)));
  }
  if (call && chance(rng, 0.7)) out.push(FrameClient.message(1, Buffer.alloc(0)));
  return out;
}

const PROBE = Buffer.from('fuzzprob');
const KNOWN_CODES = new Set(Array.from({ length: 14 }, (_, i) => i));

test('frame reader: any sequence of frames is answered (the PING after it, or GOAWAY and the close) with codes RFC 9113 defines', async () => {
  const seed = fuzzSeed(36_9113);
  const rng = seeded(seed);
  const outcomes = { answered: 0, goaway: 0, resets: 0 };
  const cases = fuzzCases(600);
  for (let i = 0; i < cases; i++) {
    const frames = randomFrames(rng);
    const c = await FrameClient.connect(port);
    try {
      c.send(...frames, frame(PING, 0, 0, PROBE));
      const what = `seed ${seed}, case ${i}`;
      const end = await c.waitFor((f) => f.type === GOAWAY || (f.type === PING && (f.flags & ACK) !== 0 && f.payload.equals(PROBE)), `${what}: an answer`);
      for (const f of c.frames.filter((x: Received) => x.type === RST_STREAM || x.type === GOAWAY)) {
        const code = f.payload.readUInt32BE(f.type === GOAWAY ? 4 : 0);
        assert.ok(KNOWN_CODES.has(code), `${what}: error code ${code}`);
        if (f.type === RST_STREAM) outcomes.resets++;
      }
      if (end.type === GOAWAY) {
        outcomes.goaway++;
        await c.waitClosed();
      } else outcomes.answered++;
    } finally {
      c.close();
    }
  }
  assert.ok(outcomes.answered > cases / 10 && outcomes.goaway > cases / 10, JSON.stringify(outcomes));
  assert.deepEqual(await unary(server.client, 'ServerLive', {}), { live: true });
});
