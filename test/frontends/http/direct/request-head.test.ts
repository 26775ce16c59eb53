import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Socket } from 'node:net';
import { KNOWN_HEAD_BYTES, KnownHead, MAX_HEADERS, MAX_HEAD_BYTES, NEEDS_MORE, NOT_PLAIN, notPlainSoFar, parseRequestHead, type RequestHead } from '../../../../src/frontends/http/direct/request-head.js';

const socket = new Socket();

function parse(text: string, from = 0): ReturnType<typeof parseRequestHead> {
  return parseRequestHead(Buffer.from(text, 'latin1'), socket, from);
}

function head(text: string): RequestHead {
  const h = parse(text);
  assert.ok(typeof h === 'object', `plain: ${JSON.stringify(text)}`);
  return h;
}

test('a plain POST: names lower-cased in headers and as sent in rawHeaders, values trimmed, the body length and where it starts', () => {
  const text = 'POST /v2/models/simple/infer?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length:  42 \r\nX-Trace:\tv\r\nConnection: Keep-Alive\r\n\r\n';
  const h = head(`${text}{"inputs"`);
  assert.equal(h.method, 'POST');
  assert.equal(h.url, '/v2/models/simple/infer?x=1');
  assert.deepEqual({ ...h.headers }, { host: 'a', 'content-length': '42', 'x-trace': 'v', connection: 'Keep-Alive' });
  assert.deepEqual(h.rawHeaders, ['Host', 'a', 'Content-Length', '42', 'X-Trace', 'v', 'Connection', 'Keep-Alive']);
  assert.equal(h.contentLength, 42);
  assert.equal(h.headLength, Buffer.byteLength(text));
  assert.equal(h.socket, socket);
});

test('a plain GET has no body; header values may hold obs-text, read as latin1 as node:http does', () => {
  const h = head('GET /v2/health/ready HTTP/1.1\r\nhost: a\r\nuser-agent: caf\xe9\r\n\r\n');
  assert.equal(h.contentLength, 0);
  assert.equal(h.headers['user-agent'], 'caf\xe9');
  assert.equal(head('GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n').contentLength, 0);
});

test('an unfinished head needs more bytes, and the search resumes where it stopped (an end split across reads)', () => {
  assert.equal(parse('GET /v2 HTTP/1.1\r\nHost: a\r\n'), NEEDS_MORE);
  assert.equal(parse('GET /v2 HTTP/1.1\r\nHost: a\r\n\r'), NEEDS_MORE);
  const whole = 'GET /v2 HTTP/1.1\r\nHost: a\r\n\r\n';
  // The previous read ended after "\r\n\r": the end is found although it started before `from`.
  assert.equal(head(whole).url, '/v2');
  assert.equal((parseRequestHead(Buffer.from(whole), socket, whole.length - 1) as RequestHead).url, '/v2');
});

test('a header named like a property of Object.prototype (__proto__, constructor) is left to node:http', () => {
  for (const name of ['__proto__', 'constructor', 'Constructor']) assert.equal(parse(`GET / HTTP/1.1\r\nHost: a\r\n${name}: x\r\n\r\n`), NOT_PLAIN, name);
  // Lower-cased, toString is a name like any other.
  assert.equal(head('GET / HTTP/1.1\r\nHost: a\r\ntoString: x\r\n\r\n').headers['tostring'], 'x');
});

test('anything but a plain request is left to node:http, never refused here', () => {
  const notPlain: [string, string][] = [
    ['HTTP/1.0', 'GET / HTTP/1.0\r\nHost: a\r\n\r\n'],
    ['HEAD', 'HEAD / HTTP/1.1\r\nHost: a\r\n\r\n'],
    ['PUT', 'PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n'],
    ['lower-case method', 'get / HTTP/1.1\r\nHost: a\r\n\r\n'],
    ['absolute-form target', 'GET http://a/v2 HTTP/1.1\r\nHost: a\r\n\r\n'],
    ['asterisk target', 'GET * HTTP/1.1\r\nHost: a\r\n\r\n'],
    ['two spaces', 'GET  / HTTP/1.1\r\nHost: a\r\n\r\n'],
    ['space in the target', 'GET /a b HTTP/1.1\r\nHost: a\r\n\r\n'],
    ['non-ASCII target', 'GET /caf\xe9 HTTP/1.1\r\nHost: a\r\n\r\n'],
    ['leading empty line', '\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n'],
    ['no Host', 'GET / HTTP/1.1\r\nAccept: */*\r\n\r\n'],
    ['two Hosts', 'GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n'],
    ['two Content-Lengths', 'POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\ncontent-length: 1\r\n\r\nx'],
    ['a list as Content-Length', 'POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1, 1\r\n\r\nx'],
    ['a sign in Content-Length', 'POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\nx'],
    ['a tab after the length', 'POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\t\r\n\r\nabc'],
    ['a tab before the length', 'POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\t3\r\n\r\nabc'],
    ['an empty Content-Length', 'POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n'],
    ['a Content-Length past 2^53', 'POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9999999999999999\r\n\r\n'],
    ['Transfer-Encoding', 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
    ['both framings', 'POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
    ['Expect', 'POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nExpect: 100-continue\r\n\r\n'],
    ['Upgrade', 'GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n'],
    ['Connection: close', 'GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n'],
    ['Proxy-Connection: close (llhttp reads it as Connection)', 'GET / HTTP/1.1\r\nHost: a\r\nProxy-Connection: close\r\n\r\n'],
    ['POST without a length', 'POST / HTTP/1.1\r\nHost: a\r\n\r\n'],
    ['GET with a body', 'GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc'],
    ['folded header', 'GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n'],
    ['space before the colon', 'GET / HTTP/1.1\r\nHost : a\r\n\r\n'],
    ['no colon', 'GET / HTTP/1.1\r\nHost: a\r\nnothing\r\n\r\n'],
    ['empty name', 'GET / HTTP/1.1\r\nHost: a\r\n: v\r\n\r\n'],
    ['bare LF in a value', 'GET / HTTP/1.1\r\nHost: a\r\nX-A: b\nContent-Length: 5\r\n\r\n'],
    ['bare CR in a value', 'GET / HTTP/1.1\r\nHost: a\r\nX-A: b\rc\r\n\r\n'],
    ['NUL in a value', 'GET / HTTP/1.1\r\nHost: a\r\nX-A: b\0c\r\n\r\n'],
    ['DEL in a value', 'GET / HTTP/1.1\r\nHost: a\r\nX-A: b\x7fc\r\n\r\n'],
    ['bare LF line ends', 'GET / HTTP/1.1\nHost: a\n\n\r\n\r\n'],
  ];
  for (const [what, text] of notPlain) assert.equal(parse(text), NOT_PLAIN, what);
});

test('a head of MAX_HEAD_BYTES or more, or of more than MAX_HEADERS lines, is not plain (node:http answers it)', () => {
  const filler = `X-Pad: ${'p'.repeat(MAX_HEAD_BYTES)}`;
  assert.equal(parse(`GET / HTTP/1.1\r\nHost: a\r\n${filler}\r\n\r\n`), NOT_PLAIN);
  // Not yet ended, but already too long: no need to wait for the rest.
  assert.equal(parse(`GET / HTTP/1.1\r\nHost: a\r\n${filler}`), NOT_PLAIN);
  const many = Array.from({ length: MAX_HEADERS }, (_, i) => `X-${i}: v\r\n`).join('');
  assert.equal(parse(`GET / HTTP/1.1\r\nHost: a\r\n${many}\r\n`), NOT_PLAIN);
  assert.equal(head(`GET / HTTP/1.1\r\nHost: a\r\n${many.slice(many.indexOf('\r\n') + 2)}\r\n`).rawHeaders.length, 2 * MAX_HEADERS);
});

test('KnownHead: the head it was given, matched by its bytes at the start of the next request, as a head of its own', () => {
  const known = new KnownHead();
  const text = 'POST /v2/models/simple/infer HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nX-A: 1\r\n\r\n';
  const first = Buffer.from(`${text}hello`, 'latin1');
  assert.equal(known.match(first), null);
  const parsed = head(`${text}hello`);
  known.remember(first, parsed);
  parsed.receivedAt = 7n;
  const again = known.match(Buffer.from(`${text}world`, 'latin1'));
  assert.ok(again !== null && again !== parsed);
  assert.deepEqual({ ...again, receivedAt: undefined }, { ...parsed, receivedAt: undefined });
  // receivedAt is each request's own; the header objects are shared, so frozen.
  assert.equal(again.receivedAt, undefined);
  assert.ok(Object.isFrozen(again.headers) && Object.isFrozen(again.rawHeaders));
  // One byte different (the value of X-A), or only part of the head arrived: not the known head.
  assert.equal(known.match(Buffer.from(`${text.replace('X-A: 1', 'X-A: 2')}hello`, 'latin1')), null);
  assert.equal(known.match(Buffer.from(text.slice(0, -2), 'latin1')), null);
  // A longer head is not remembered; the one known before stays.
  const long = `GET / HTTP/1.1\r\nHost: a\r\nX-Long: ${'v'.repeat(KNOWN_HEAD_BYTES)}\r\n\r\n`;
  known.remember(Buffer.from(long, 'latin1'), head(long));
  assert.equal(known.match(Buffer.from(long, 'latin1')), null);
  assert.ok(known.match(first) !== null);
});

test('an unfinished head is judged by its lines so far: a fault already there makes it not plain, a missing Host or length does not yet', () => {
  const soFar = (text: string): boolean => notPlainSoFar(Buffer.from(text, 'latin1'), socket);
  for (const text of ['', 'G', 'GE', 'POST', 'POST /v2', 'GET / HTTP/1.1\r\n', 'POST / HTTP/1.1\r\nX-A: b\r\n', 'POST / HTTP/1.1\r\nHost: a\r\nContent-Le', 'GET / HTTP/1.1\r\nProxy-Connection: keep-alive\r\n']) {
    assert.equal(soFar(text), false, JSON.stringify(text));
  }
  for (const text of ['k', 'get ', 'PUT /', 'GET /a b HTTP/1.1\r\n', 'GET / HTTP/1.0\r\n', 'POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n', 'GET / HTTP/1.1\r\nX-A: b\x01\r\n', 'GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n', 'GET / HTTP/1.1\r\nConnection: close\r\nHo']) {
    assert.equal(soFar(text), true, JSON.stringify(text));
  }
});
