import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import http2 from 'node:http2';
import { once } from 'node:events';
import { CompressionError, encodeBlock, FixedBlock, HeaderDecoder, HeaderEncoder } from '../../../../src/frontends/grpc/http2/hpack.js';
import { huffmanDecode } from '../../../../src/frontends/grpc/http2/huffman.js';

// HPACK decoding against RFC 7541's own examples (Appendix C), against what nghttp2 (node:http2's client)
// encodes, and against blocks no encoder should send.

function decodeAll(d: HeaderDecoder, hex: string, max = Infinity): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  d.decode(Buffer.from(hex.replace(/\s/g, ''), 'hex'), max, (n, v) => out.push([n, v]));
  return out;
}

/**
 * The header blocks node:http2's client (nghttp2) sends for the requests `send` makes, in order: a bare socket
 * server keeps the bytes, and never answers.
 */
async function nghttp2Blocks(send: (session: http2.ClientHttp2Session) => void): Promise<Buffer[]> {
  const received: Buffer[] = [];
  const server = net.createServer((s) => s.on('data', (c: Buffer) => received.push(c)));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as net.AddressInfo).port;
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => {});
  send(session);
  await new Promise((r) => setTimeout(r, 300));
  session.destroy();
  server.close();
  const bytes = Buffer.concat(received).subarray(24);
  const blocks: Buffer[] = [];
  for (let at = 0; at + 9 <= bytes.length;) {
    const length = bytes.readUIntBE(at, 3);
    if (bytes[at + 3] === 0x1) blocks.push(bytes.subarray(at + 9, at + 9 + length));
    at += 9 + length;
  }
  return blocks;
}

// The three requests of RFC 7541's examples C.3 and C.4, decoded.
const FIRST: Array<[string, string]> = [[':method', 'GET'], [':scheme', 'http'], [':path', '/'], [':authority', 'www.example.com']];
const THIRD: Array<[string, string]> = [[':method', 'GET'], [':scheme', 'https'], [':path', '/index.html'], [':authority', 'www.example.com'], ['custom-key', 'custom-value']];

test('RFC 7541 C.3: requests without Huffman coding, sharing the dynamic table', () => {
  const d = new HeaderDecoder();
  assert.deepEqual(decodeAll(d, '828684410f7777772e6578616d706c652e636f6d'), FIRST);
  assert.deepEqual(decodeAll(d, '828684be58086e6f2d6361636865'), [...FIRST, ['cache-control', 'no-cache']]);
  assert.deepEqual(decodeAll(d, '828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565'), THIRD);
});

test('RFC 7541 C.4: the same requests with Huffman coding', () => {
  const d = new HeaderDecoder();
  assert.deepEqual(decodeAll(d, '828684418cf1e3c2e5f23a6ba0ab90f4ff'), FIRST);
  assert.deepEqual(decodeAll(d, '828684be5886a8eb10649cbf'), [...FIRST, ['cache-control', 'no-cache']]);
  assert.deepEqual(decodeAll(d, '828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf'), THIRD);
});

test('the dynamic table evicts its oldest entries at its size, and a size update shrinks it', () => {
  const d = new HeaderDecoder();
  // Size update to 100 octets, then two literals with indexing of 32+1+40 = 73 octets each: the second evicts the first.
  const literal = (name: string, value: string) => Buffer.concat([Buffer.from([0x40, name.length]), Buffer.from(name), Buffer.from([value.length]), Buffer.from(value)]);
  const update = Buffer.from([0x3f, 100 - 31]);
  const a = literal('a', 'x'.repeat(40));
  const b = literal('b', 'y'.repeat(40));
  d.decode(Buffer.concat([update, a, b]), Infinity, () => {});
  assert.deepEqual(decodeAll(d, 'be'), [['b', 'y'.repeat(40)]], 'index 62 is the newest entry');
  assert.throws(() => decodeAll(d, 'bf'), CompressionError, 'the evicted entry is gone');
  // A size update of 0 empties the table.
  d.decode(Buffer.from([0x20]), Infinity, () => {});
  assert.throws(() => decodeAll(d, 'be'), CompressionError);
});

test('fields past the header list limit are counted but not delivered, and the table stays in step', () => {
  const d = new HeaderDecoder();
  const fields: string[] = [];
  const size = d.decode(Buffer.from('828684410f7777772e6578616d706c652e636f6d', 'hex'), 100, (n) => fields.push(n));
  assert.equal(size, 4 * 32 + ':method'.length + 3 + ':scheme'.length + 4 + ':path'.length + 1 + ':authority'.length + 15);
  assert.deepEqual(fields, [':method', ':scheme']);
  assert.deepEqual(decodeAll(d, 'be'), [[':authority', 'www.example.com']]);
});

test('blocks no encoder should send are COMPRESSION_ERRORs', () => {
  const bad: Record<string, string> = {
    'index 0': '80',
    'an index past the table': 'ff40',
    'a size update above the announced maximum': '3fe21f',
    'a size update after a field': '8220',
    'a truncated integer': 'ff',
    'an integer past 2^28': 'ffffffffffff7f',
    'a string past the block': '4005616263',
    'a Huffman string padded with zeros': '408100' + '00',
    'a Huffman string with more than 7 bits of padding': '4082ffff00',
  };
  for (const [what, hex] of Object.entries(bad)) {
    assert.throws(() => decodeAll(new HeaderDecoder(), hex), CompressionError, what);
  }
  // EOS itself in a string (30 one-bits) is an error, not a symbol.
  assert.equal(huffmanDecode(Buffer.from([0xff, 0xff, 0xff, 0xff]), 0, 4), null);
});

test('encodeBlock writes fields the decoder reads back, static entries as one octet', () => {
  const fields: Array<[string, string]> = [[':status', '200'], ['content-type', 'application/grpc'], ['grpc-status', '13'], ['grpc-message', 'a%20b']];
  const block = encodeBlock(fields);
  assert.equal(block[0], 0x88, ':status 200 is static index 8');
  assert.deepEqual(decodeAll(new HeaderDecoder(), block.toString('hex')), fields);
});

const HEAD = new FixedBlock([[':status', '200'], ['content-type', 'application/grpc'], ['grpc-accept-encoding', 'identity,deflate,gzip']]);
const OK = new FixedBlock([['grpc-status', '0']]);

/** Encodes `blocks` in turn and decodes each as a client would: the fields must come back every time. */
function roundTrips(enc: HeaderEncoder, dec: HeaderDecoder, blocks: FixedBlock[]): Buffer[] {
  return blocks.map((b) => {
    const bytes = enc.encode(b);
    assert.deepEqual(decodeAll(dec, bytes.toString('hex')), b.fields);
    return bytes;
  });
}

test('HeaderEncoder: a fixed block\'s fields enter the dynamic table once, then are one octet each', () => {
  const enc = new HeaderEncoder();
  const dec = new HeaderDecoder();
  const sizes = roundTrips(enc, dec, [HEAD, OK, HEAD, OK, HEAD, OK]).map((b) => b.length);
  assert.ok(sizes[0]! > 40 && sizes[1]! > 10, `first blocks are literals: ${sizes}`);
  assert.deepEqual(sizes.slice(2), [3, 1, 3, 1]);
  // A block that never indexes (an error status) leaves the table as it was.
  assert.deepEqual(decodeAll(dec, enc.plain(encodeBlock([['grpc-status', '13']])).toString('hex')), [['grpc-status', '13']]);
  assert.deepEqual(roundTrips(enc, dec, [OK, HEAD]).map((b) => b.length), [1, 3]);
});

test('HeaderEncoder: a client\'s smaller table is announced first and kept to, down to a table of none', () => {
  for (const size of [0, 60, 100]) {
    const enc = new HeaderEncoder();
    enc.peerTableSize(size);
    const dec = new HeaderDecoder(size);
    const blocks = roundTrips(enc, dec, [HEAD, OK, HEAD, OK, OK, HEAD]);
    assert.equal(blocks[0]![0]! >> 5, 1, `size ${size}: the first block starts with a dynamic table size update`);
    assert.ok(blocks.slice(1).every((b) => b[0]! >> 5 !== 1), `size ${size}: and only the first`);
    // A block that never indexes carries the update when it comes first.
    const late = new HeaderEncoder();
    late.peerTableSize(size);
    assert.equal(late.plain(encodeBlock([['grpc-status', '13']]))[0]! >> 5, 1);
  }
  // A larger table is an offer: the encoder keeps its own, and announces nothing.
  const enc = new HeaderEncoder();
  enc.peerTableSize(65536);
  assert.equal(roundTrips(enc, new HeaderDecoder(), [HEAD])[0]![0], 0x88);
});

test('every octet nghttp2 may put in a header value decodes as it was sent, Huffman-coded or not', async () => {
  const visible = Array.from({ length: 0x7f - 0x20 }, (_, i) => String.fromCharCode(0x20 + i)).join('');
  const values = { 'x-visible': visible.trim(), 'x-letters': 'abcdefghijklmnopqrstuvwxyz0123456789', 'x-repeat': 'aaaaaaaaaaaaaaaaaaaaaaaa' };
  const blocks = await nghttp2Blocks((session) => session.request({ ':method': 'POST', ':path': '/x', ...values }).on('error', () => {}));
  const fields = new Map<string, string>();
  let huffmanSeen = false;
  for (const block of blocks) {
    huffmanSeen = block.some((b, i) => i > 0 && (b & 0x80) !== 0);
    new HeaderDecoder().decode(block, Infinity, (n, v) => fields.set(n, v));
  }
  assert.ok(huffmanSeen, 'nghttp2 Huffman-coded some strings');
  for (const [k, v] of Object.entries(values)) assert.equal(fields.get(k), v, k);
});

test('Huffman literals sent again on every request (nghttp2 never indexes :path) decode right from the decoder\'s cache', async () => {
  // Paths of one length that differ in one character, more of them than the cache holds, each sent twice,
  // and one too long to be kept: every block goes through the connection's one decoder, in order.
  const paths = Array.from({ length: 12 }, (_, i) => `/inference.GRPCInferenceService/Model${String.fromCharCode(0x61 + i)}`);
  const long = `/${'x'.repeat(300)}`;
  const sent = [...paths, ...paths.slice().reverse(), long, long, paths[0]!];
  const blocks = await nghttp2Blocks((session) => {
    for (const path of sent) session.request({ ':method': 'POST', ':path': path }).on('error', () => {});
  });
  const decoder = new HeaderDecoder();
  const got: string[] = [];
  let huffmanPaths = 0;
  for (const block of blocks) {
    decoder.decode(block, Infinity, (n, v) => {
      if (n === ':path') got.push(v);
    });
    // A literal :path without indexing (name index 4), its value Huffman-coded.
    const i = block.indexOf(0x04);
    if (i >= 0 && (block[i + 1]! & 0x80) !== 0) huffmanPaths++;
  }
  assert.deepEqual(got, sent);
  assert.ok(huffmanPaths >= paths.length * 2, `nghttp2 sent ${huffmanPaths} Huffman-coded :path literals`);
});
