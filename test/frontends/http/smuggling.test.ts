import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { EXAMPLES } from '../../helpers/paths.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';

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

/** The hidden request: were it read as one, its answer would be a 200 naming `smuggled` nowhere else sent. */
const HIDDEN = 'GET /v2/models/simple/config?smuggled HTTP/1.1\r\nHost: x\r\n\r\n';
const INFER = '/v2/models/simple/infer';

/** [name, the request's head lines after its request line and Host, its body (holding the hidden request)] */
const SHAPES: [string, string, string][] = [
  ['CL.TE: Content-Length and chunked', 'Content-Length: 6\r\nTransfer-Encoding: chunked\r\n', `0\r\n\r\n${HIDDEN}`],
  ['TE.CL: chunked and Content-Length', 'Transfer-Encoding: chunked\r\nContent-Length: 4\r\n', `5c\r\n${HIDDEN}\r\n0\r\n\r\n`],
  ['TE.TE: a second, bogus Transfer-Encoding', 'Transfer-Encoding: chunked\r\nTransfer-Encoding: x\r\nContent-Length: 4\r\n', `0\r\n\r\n${HIDDEN}`],
  ['TE.TE: xchunked', 'Transfer-Encoding: xchunked\r\nContent-Length: 4\r\n', `0\r\n\r\n${HIDDEN}`],
  ['TE.TE: a space before the colon', 'Transfer-Encoding : chunked\r\nContent-Length: 4\r\n', `0\r\n\r\n${HIDDEN}`],
  ['TE.TE: a tab before the value', 'Transfer-Encoding:\tchunked\r\nContent-Length: 4\r\n', `0\r\n\r\n${HIDDEN}`],
  ['TE.TE: a folded value', 'Transfer-Encoding:\r\n chunked\r\nContent-Length: 4\r\n', `0\r\n\r\n${HIDDEN}`],
  ['TE.TE: a header line starting with a space', 'X: y\r\n Transfer-Encoding: chunked\r\nContent-Length: 4\r\n', `0\r\n\r\n${HIDDEN}`],
  ['TE.TE: chunked, identity', 'Transfer-Encoding: chunked, identity\r\nContent-Length: 4\r\n', `0\r\n\r\n${HIDDEN}`],
  ['TE.TE: chunked in a bare-LF line', 'X: y\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n', `0\r\n\r\n${HIDDEN}`],
  ['TE.TE: a vertical tab before chunked', 'Transfer-Encoding: \x0bchunked\r\nContent-Length: 4\r\n', `0\r\n\r\n${HIDDEN}`],
  ['two different Content-Lengths', 'Content-Length: 4\r\nContent-Length: 60\r\n', `abcd${HIDDEN}`],
  ['Content-Length as a list', 'Content-Length: 4, 60\r\n', `abcd${HIDDEN}`],
  ['Content-Length with a sign', 'Content-Length: +4\r\n', `abcd${HIDDEN}`],
  ['Content-Length in hex', 'Content-Length: 0x4\r\n', `abcd${HIDDEN}`],
  ['a chunk size that overflows', 'Transfer-Encoding: chunked\r\n', `10000000000000004\r\nabcd\r\n0\r\n\r\n${HIDDEN}`],
  ['a chunk size with a bare-LF line end', 'Transfer-Encoding: chunked\r\n', `4\nabcd\r\n0\r\n\r\n${HIDDEN}`],
  ['a chunk without its CRLF', 'Transfer-Encoding: chunked\r\n', `4\r\nabcdX0\r\n\r\n${HIDDEN}`],
  ['a chunk extension with a bare LF', 'Transfer-Encoding: chunked\r\n', `4;a\nb\r\nabcd\r\n0\r\n\r\n${HIDDEN}`],
  ['a NUL in a header value', 'X: a\x00b\r\nContent-Length: 4\r\n', `abcd${HIDDEN}`],
  ['Transfer-Encoding on HTTP/1.0', 'Transfer-Encoding: chunked\r\nContent-Length: 4\r\n', `0\r\n\r\n${HIDDEN}`],
];

const POST = (version: string, lines: string): string => `POST ${INFER} HTTP/${version}\r\nHost: x\r\n${lines}\r\n`;

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
  const text = await transcript(`${POST('1.1', 'Content-Length: 9007199254740993\r\n')}abcd${HIDDEN}`);
  assert.ok(!text.includes('smuggled'), text);
  assert.match(text, /^HTTP\/1\.1 400 Bad Request\r\n[^]*exceeds the maximum allowed value of \d+\. Use --http-max-input-size/);
});

/** A chunked request first: node:http reads the connection from it on. Its answer is the first of the transcript. */
const HAND_OVER = `POST /v2/health/live HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`;

function answers(text: string): string[] {
  return [...text.matchAll(/HTTP\/1\.[01] (\d{3})/g)].map((m) => m[1]!);
}

for (const [name, lines, body] of SHAPES) {
  test(`${name}: the hidden request is not answered, on either path, and both paths agree`, async () => {
    const request = POST(name.endsWith('HTTP/1.0') ? '1.0' : '1.1', lines) + body;
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
  const statuses = await Promise.all(SHAPES.map(async ([name, lines, body]) => answers(await transcript(POST(name.endsWith('HTTP/1.0') ? '1.0' : '1.1', lines) + body))));
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
