import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { EXAMPLES } from '../../helpers/paths.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { HIDDEN, SHAPES, shapeBytes } from '../../helpers/smuggling-shapes.js';

// Request-smuggling shapes, each a request whose body two parsers could frame differently, with a second request
// hidden where one of them would see its start. Through a real server on raw sockets, each is sent to both HTTP
// paths: on a fresh connection (the direct path reads it first) and on a connection node:http already reads (a
// chunked request first hands it over). Either way the hidden request must never be answered as a request of
// its own, the shape gets at most one answer, and both paths answer it the same.

let s: TestServer;
before(async () => {
  s = await startTestServer({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit', loadModels: ['simple', 'repeat_int32'] });
});
after(() => s.close());


/**
 * Sends `bytes`, ends the client's side, and returns what was answered until the server closed. With `prelude`,
 * that is sent first and answered before `bytes` follow.
 */
async function transcript(bytes: string, prelude = ''): Promise<string> {
  const socket = connect(s.http.port, '127.0.0.1');
  let text = '';
  let wake: () => void = () => {};
  socket.on('data', (d: Buffer) => {
    text += d.toString('latin1');
    wake();
  });
  socket.on('error', () => {});
  const closed = new Promise((r) => socket.once('close', r));
  const timer = setTimeout(() => socket.destroy(), 10_000);
  if (prelude !== '') {
    socket.write(prelude);
    while (!/\r\n\r\n\{[^}]*\}$/.test(text) && !socket.destroyed) await new Promise<void>((r) => (wake = r));
  }
  socket.end(Buffer.from(bytes, 'latin1'));
  await closed;
  clearTimeout(timer);
  return text.replace(/\r\nDate: [^\r]*/g, '');
}

test('a Content-Length past 2^53: refused before its body by the size limit; the hidden request is body, never answered', async () => {
  const text = await transcript(shapeBytes(['past 2^53', 'Content-Length: 9007199254740993\r\n', `abcd${HIDDEN}`]));
  assert.ok(!text.includes('smuggled'), text);
  assert.match(text, /^HTTP\/1\.1 400 Bad Request\r\n[^]*exceeds the maximum allowed value of \d+\. Use --http-max-input-size/);
});

/** A chunked request first: node:http reads the connection from it on. Its answer is the first of the transcript. */
const HAND_OVER = `POST /v2/health/live HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`;

function answers(text: string): string[] {
  return [...text.matchAll(/HTTP\/1\.[01] (\d{3})/g)].map((m) => m[1]!);
}

for (const shape of SHAPES) {
  test(`${shape[0]}: the hidden request is not answered, on either path, and both paths agree`, async () => {
    const request = shapeBytes(shape);
    const direct = await transcript(request);
    const handedOver = await transcript(request, HAND_OVER);
    assert.ok(!direct.includes('smuggled') && !handedOver.includes('smuggled'), `${JSON.stringify(direct)}\n${JSON.stringify(handedOver)}`);
    assert.ok(answers(direct).length <= 1, JSON.stringify(direct));
    // The hand-over request's answer first (405: live takes GET), then the same as on the direct path.
    assert.equal(answers(handedOver)[0], '405', JSON.stringify(handedOver));
    assert.equal(handedOver.slice(handedOver.indexOf('HTTP/1.1', 1)), direct.length === 0 ? '' : direct, JSON.stringify(handedOver));
  });
}

test('the shapes are refused, not read some other way: each is a 400', async () => {
  const statuses = await Promise.all(SHAPES.map(async (shape) => answers(await transcript(shapeBytes(shape)))));
  const notRefused = SHAPES.map(([name], i) => `${name}: ${statuses[i]!.join() || 'no answer'}`).filter((line, i) => statuses[i]!.join() !== '400');
  assert.deepEqual(notRefused, []);
});

test('a request that cannot be read, pipelined behind a stream being answered, is not answered inside that stream', async () => {
  const socket = connect(s.http.port, '127.0.0.1');
  let text = '';
  let wake: () => void = () => {};
  socket.on('data', (d: Buffer) => {
    text += d.toString('latin1');
    wake();
  });
  socket.on('error', () => {});
  const closed = new Promise((r) => socket.once('close', r));
  const body = JSON.stringify({ IN: [1, 2], DELAY: [0, 3000], WAIT: 0 });
  socket.write(`POST /v2/models/repeat_int32/generate_stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  // Once the first event has come, the stream's answer has begun.
  while (!text.includes('"IDX":0')) await new Promise<void>((r) => (wake = r));
  socket.write('GET /a b HTTP/1.1\r\nHost: x\r\n\r\n');
  const timer = setTimeout(() => socket.destroy(), 10_000);
  await closed;
  clearTimeout(timer);
  assert.equal(answers(text).length, 1, JSON.stringify(text));
});
