import { test } from 'node:test';
import assert from 'node:assert/strict';
import { frame, MessageReader } from '../../../src/frontends/grpc/framing.js';
import { percentEncode } from '../../../src/frontends/grpc/call.js';
import { timeoutMs } from '../../../src/frontends/grpc/transport.js';

// gRPC's framing and header values as PROTOCOL-HTTP2.md writes them.

function read(chunks: Buffer[], max = 1 << 20): { messages: [string, boolean][]; reader: MessageReader } {
  const messages: [string, boolean][] = [];
  const reader = new MessageReader(max, (m, compressed) => messages.push([m.toString(), compressed]));
  for (const c of chunks) reader.push(c);
  return { messages, reader };
}

test('messages come out whole and in order however the DATA frames cut them', () => {
  const wire = Buffer.concat([frame(Buffer.from('first')), frame(Buffer.alloc(0)), frame(Buffer.from('third'), true)]);
  const expected: [string, boolean][] = [['first', false], ['', false], ['third', true]];
  for (let cut = 1; cut <= wire.length; cut++) {
    const chunks: Buffer[] = [];
    for (let i = 0; i < wire.length; i += cut) chunks.push(wire.subarray(i, i + cut));
    const { messages, reader } = read(chunks);
    assert.deepEqual(messages, expected, `chunks of ${cut}`);
    assert.ok(reader.idle);
  }
});

test('a message declared above the limit is refused from its prefix; a large declared one holds only what arrived', () => {
  const over = Buffer.from([0, 0, 0, 4, 1]); // 1025 bytes declared
  assert.throws(() => read([over], 1024), (e: Error & { code?: string; limit?: string }) => e.code === 'RESOURCE_EXHAUSTED' && e.limit === 'grpc-max-message-size');
  // 2^31 - 1 declared, 3 bytes sent: nothing the size of the declaration is made, and the message is incomplete.
  const { messages, reader } = read([Buffer.from([0, 0x7f, 0xff, 0xff, 0xff, 1, 2, 3])], 2 ** 31 - 1);
  assert.deepEqual(messages, []);
  assert.equal(reader.idle, false);
  assert.ok(process.memoryUsage().arrayBuffers < 2 ** 30);
});

test('grpc-message is percent-encoded outside printable ASCII, and % itself', () => {
  assert.equal(percentEncode("plain words, 'quoted'"), "plain words, 'quoted'");
  assert.equal(percentEncode('100% sure'), '100%25 sure');
  assert.equal(percentEncode('caf\u00e9\nnext'), 'caf%C3%A9%0Anext');
});

test('grpc-timeout: up to 8 digits and a unit, in milliseconds', () => {
  assert.equal(timeoutMs('20m'), 20);
  assert.equal(timeoutMs('2S'), 2000);
  assert.equal(timeoutMs('1H'), 3_600_000);
  assert.equal(timeoutMs('1500u'), 2);
  assert.equal(timeoutMs('99999999n'), 100);
  for (const bad of ['', '5', 'S', '123456789S', '-1S', '1.5S', '1s']) assert.equal(timeoutMs(bad), undefined, bad);
});
