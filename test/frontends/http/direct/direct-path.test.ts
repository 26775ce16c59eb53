import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { once } from 'node:events';
import { DirectPath } from '../../../../src/frontends/http/direct/direct-path.js';
import type { DirectAnswer } from '../../../../src/frontends/http/direct/answer.js';
import type { RequestHead } from '../../../../src/frontends/http/direct/request-head.js';

// A bare node:http server with the direct path in front. Both answer the same way: `<path> <body length> <side>`,
// so each answer says who gave it. Paths under /stream are never taken directly; /slow answers after 100 ms;
// /unframed answers without a Content-Length.
interface Site {
  http: Server;
  direct: DirectPath<string>;
  port: number;
  /** Answers the direct path has not given yet, to release by hand (/hold). */
  held: (() => void)[];
  /** How many requests the direct path has served. */
  served: number;
  /** How many answers of /hold have seen their 'close'. */
  closes: number;
}

function answer(res: ServerResponse | DirectAnswer, path: string, bodyLength: number, side: string): void {
  const size = path === '/large' ? 64 * 1024 : path === '/huge' ? 32 * 1024 * 1024 : 0;
  const text = size > 0 ? `${path} ${side} ${'l'.repeat(size)}` : `${path} ${bodyLength} ${side}`;
  if (path === '/unframed') res.writeHead(200, { 'Content-Type': 'text/plain' });
  else res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

async function startSite(options: { headersTimeout?: number; keepAliveTimeout?: number; maxBody?: number } = {}): Promise<Site> {
  const http = createServer({ keepAliveTimeout: options.keepAliveTimeout ?? 65_000, headersTimeout: options.headersTimeout ?? 60_000, requestTimeout: 0 }, (req: IncomingMessage, res) => {
    let n = 0;
    req.on('data', (c: Buffer) => (n += c.byteLength));
    req.on('end', () => answer(res, req.url!, n, 'node'));
  });
  const held: (() => void)[] = [];
  const site = { held, served: 0, closes: 0 };
  const direct = new DirectPath<string>(http, {
    decide: (head: RequestHead) => (head.url.startsWith('/stream') ? undefined : head.url),
    timesArrival: () => false,
    serve: (_head, body, res, path) => {
      site.served++;
      if (path === '/slow') setTimeout(() => answer(res, path, body.byteLength, 'direct'), 100);
      else if (path === '/hold') {
        res.once('close', () => site.closes++);
        held.push(() => answer(res, path, body.byteLength, 'direct'));
      }
      else answer(res, path, body.byteLength, 'direct');
    },
  }, options.maxBody ?? 1024);
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  return Object.assign(site, { http, direct, port: (http.address() as AddressInfo).port });
}

interface Answered {
  status: number;
  headers: [string, string][];
  body: string;
}

/** A raw client: sends `text` (in pieces when given several) and reads `count` answers, or until the connection closes. */
class RawClient {
  readonly socket: Socket;
  private data = Buffer.alloc(0);
  closed = false;

  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.on('data', (d: Buffer) => (this.data = Buffer.concat([this.data, d])));
    this.socket.on('close', () => (this.closed = true));
    this.socket.on('error', () => {});
  }

  async send(...pieces: string[]): Promise<void> {
    for (const [i, p] of pieces.entries()) {
      this.socket.write(p);
      if (i < pieces.length - 1) await new Promise((r) => setTimeout(r, 5));
    }
  }

  async answers(count: number, timeoutMs = 5000): Promise<Answered[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const parsed = parseAnswers(this.data, this.closed);
      if (parsed.length >= count || this.closed) return parsed;
      if (Date.now() > deadline) throw new Error(`${parsed.length} of ${count} answers: ${this.data.toString('latin1').slice(0, 300)}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  async closing(timeoutMs = 5000): Promise<void> {
    if (this.closed) return;
    const timer = setTimeout(() => this.socket.destroy(new Error('not closed in time')), timeoutMs);
    await once(this.socket, 'close');
    clearTimeout(timer);
  }
}

function parseAnswers(data: Buffer, closed: boolean): Answered[] {
  const out: Answered[] = [];
  let at = 0;
  for (;;) {
    const end = data.indexOf('\r\n\r\n', at);
    if (end === -1) return out;
    const lines = data.toString('latin1', at, end).split('\r\n');
    const headers = lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()] as [string, string]);
    const length = headers.find(([k]) => k.toLowerCase() === 'content-length');
    if (length === undefined && !closed) return out;
    const bodyEnd = length === undefined ? data.byteLength : end + 4 + Number(length[1]);
    if (bodyEnd > data.byteLength) return out;
    out.push({ status: Number(lines[0]!.split(' ')[1]), headers, body: data.toString('utf8', end + 4, bodyEnd) });
    at = bodyEnd;
  }
}

const get = (path: string, extra = ''): string => `GET ${path} HTTP/1.1\r\nHost: x\r\n${extra}\r\n`;
const post = (path: string, body: string, extra = ''): string => `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;
const chunked = (path: string, body: string): string => `POST ${path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;

let site: Site;
before(async () => {
  site = await startSite();
});
after(() => {
  site.direct.closeAll();
  site.http.close();
});

test('plain requests are answered directly; at the first that is not, node:http takes the connection with every byte not yet answered', async () => {
  const c = new RawClient(site.port);
  await c.send(get('/a') + post('/b', 'hello') + chunked('/c', 'abc') + get('/d') + post('/e', 'xy'));
  const got = await c.answers(5);
  assert.deepEqual(got.map((a) => a.body), ['/a 0 direct', '/b 5 direct', '/c 3 node', '/d 0 node', '/e 2 node']);
  assert.ok(got.every((a) => a.status === 200));
  c.socket.destroy();
});

test('a direct answer carries the headers node:http gives: the handler\'s, then Date, Connection and Keep-Alive', async () => {
  const c = new RawClient(site.port);
  await c.send(get('/a') + get('/stream/a'));
  const [direct, node] = await c.answers(2);
  assert.equal(node!.body, '/stream/a 0 node');
  assert.deepEqual(direct!.headers.map(([k]) => k), node!.headers.map(([k]) => k));
  assert.deepEqual(direct!.headers.filter(([k]) => k !== 'Date' && k !== 'Content-Length'), node!.headers.filter(([k]) => k !== 'Date' && k !== 'Content-Length'));
  assert.match(direct!.headers.find(([k]) => k === 'Date')![1], /^[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT$/);
  c.socket.destroy();
});

test('a request arriving a few bytes at a time, its head and body split anywhere, is answered once, directly', async () => {
  const c = new RawClient(site.port);
  const text = post('/split', '{"inputs":[]}');
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += 7) pieces.push(text.slice(i, i + 7));
  await c.send(...pieces);
  assert.deepEqual((await c.answers(1)).map((a) => a.body), ['/split 13 direct']);
  c.socket.destroy();
});

test('two thousand pipelined requests in one write are answered in order', async () => {
  const c = new RawClient(site.port);
  const n = 2000;
  await c.send(Array.from({ length: n }, (_, i) => get(`/p${i}`)).join(''));
  const got = await c.answers(n, 20_000);
  assert.equal(got.length, n);
  assert.ok(got.every((a, i) => a.body === `/p${i} 0 direct`));
  c.socket.destroy();
});

test('a head sent again is answered as itself; one that differs by a byte, or is split differently, is read anew', async () => {
  const c = new RawClient(site.port);
  // The same head four times (bodies of one length), then heads of the same length that differ in the target,
  // in the body's length, and one that is no longer plain: each is answered for what it says.
  const same = Array.from({ length: 4 }, (_, i) => post('/same', `body${i}`)).join('');
  await c.send(same + post('/sand', 'body4') + post('/same', 'body55') + post('/same', 'body6', 'Transfer-Encoding: gzip\r\n'));
  const got = await c.answers(7);
  assert.deepEqual(got.map((a) => a.body).slice(0, 6), ['/same 5 direct', '/same 5 direct', '/same 5 direct', '/same 5 direct', '/sand 5 direct', '/same 6 direct']);
  // Two framings (Content-Length and Transfer-Encoding): node:http refuses it.
  assert.equal(got[6]!.status, 400);
  c.socket.destroy();
  // The known head arriving a byte at a time on a new connection, after a whole one.
  const d = new RawClient(site.port);
  await d.send(post('/same', 'abcde'));
  await d.answers(1);
  const text = post('/same', 'fghij');
  await d.send(...text.split(''));
  assert.deepEqual((await d.answers(2)).map((a) => a.body), ['/same 5 direct', '/same 5 direct']);
  d.socket.destroy();
});

test('a client that pipelines requests and reads no answers makes the server stop reading, not pile up answers', async () => {
  const s = await startSite();
  const socket = connect(s.port, '127.0.0.1');
  try {
    socket.pause();
    const n = 2000; // 128 MiB of answers, were they all made at once
    socket.write(Array.from({ length: n }, () => get('/large')).join(''));
    await new Promise((r) => setTimeout(r, 500));
    // What the kernel's socket buffers hold, and one answer more: a few MiB.
    assert.ok(s.served < n / 4, `${s.served} of ${n} answered while the client read nothing`);
    // Read on, counting bytes: every answer comes, in full.
    await readAnswers(socket, n);
    assert.equal(s.served, n);
  } finally {
    socket.destroy();
    s.direct.closeAll();
    s.http.close();
  }
});

/** Resumes a paused socket and reads `count` answers of one length, in full, the connection staying open. */
async function readAnswers(socket: Socket, count: number): Promise<void> {
  let bytes = 0;
  let first: Buffer | null = null;
  socket.on('data', (d: Buffer) => {
    first ??= d;
    bytes += d.byteLength;
  });
  socket.resume();
  const deadline = Date.now() + 30_000;
  for (;;) {
    await new Promise((r) => setTimeout(r, 20));
    const one = first === null ? 0 : answerLength(first);
    if (one > 0 && bytes >= one * count) {
      assert.equal(bytes, one * count);
      return;
    }
    assert.ok(!socket.destroyed && Date.now() < deadline, `${bytes} bytes of ${one * count}, the connection ${socket.destroyed ? 'closed' : 'open'}`);
  }
}

/** The length of the answer at the start of `b`, head and body (every /large or /huge answer has the same). */
function answerLength(b: Buffer): number {
  const end = b.indexOf('\r\n\r\n');
  const length = /\r\nContent-Length: (\d+)/.exec(b.toString('latin1', 0, end));
  return end + 4 + Number(length![1]);
}

test('a request waiting for a slow answer holds the ones pipelined behind it; they follow in order', async () => {
  const c = new RawClient(site.port);
  await c.send(get('/slow') + get('/after') + post('/last', 'z'));
  assert.deepEqual((await c.answers(3)).map((a) => a.body), ['/slow 0 direct', '/after 0 direct', '/last 1 direct']);
  c.socket.destroy();
});

test('a body over the direct path\'s limit, and a route it does not take, go to node:http', async () => {
  const c = new RawClient(site.port);
  await c.send(post('/big', 'b'.repeat(1025)));
  assert.deepEqual((await c.answers(1)).map((a) => a.body), ['/big 1025 node']);
  c.socket.destroy();
  const d = new RawClient(site.port);
  await d.send(post('/stream/x', 'b'));
  assert.deepEqual((await d.answers(1)).map((a) => a.body), ['/stream/x 1 node']);
  d.socket.destroy();
});

test('requests that could be smuggled are node:http\'s to refuse: both framings, two lengths', async () => {
  for (const text of [
    'POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /hidden HTTP/1.1\r\nHost: x\r\n\r\n',
    'POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 40\r\n\r\nabcGET /hidden HTTP/1.1\r\nHost: x\r\n\r\n',
  ]) {
    const c = new RawClient(site.port);
    await c.send(text);
    await c.closing();
    const got = await c.answers(1);
    assert.deepEqual(got.map((a) => a.status), [400]);
    assert.ok(!got.some((a) => a.body.includes('/hidden')));
  }
});

test('an answer without a Content-Length ends its connection, which frames it', async () => {
  const c = new RawClient(site.port);
  await c.send(get('/unframed') + get('/never'));
  await c.closing();
  const got = await c.answers(1);
  assert.deepEqual(got.map((a) => a.body), ['/unframed 0 direct']);
  assert.equal(got[0]!.headers.find(([k]) => k === 'Connection')![1], 'close');
});

test('a client that ends its side while its request is answered: the connection closes and the answer\'s \'close\' listeners run', async () => {
  const c = new RawClient(site.port);
  await c.send(get('/hold'));
  while (site.held.length === 0) await new Promise((r) => setTimeout(r, 5));
  c.socket.end();
  await c.closing();
  // The answer after the end reaches no one and throws nothing.
  site.held.shift()!();
});

test('closing: an idle connection ends at once; a busy one gets its answer with Connection: close, then ends', async () => {
  const s = await startSite();
  const idle = new RawClient(s.port);
  await idle.send(get('/a'));
  await idle.answers(1);
  const busy = new RawClient(s.port);
  await busy.send(get('/hold'));
  while (s.held.length === 0) await new Promise((r) => setTimeout(r, 5));
  const closed = new Promise<void>((resolve) => s.http.close(() => resolve()));
  s.http.closeIdleConnections();
  s.direct.closeIdle();
  await idle.closing();
  assert.equal(busy.closed, false);
  s.held.shift()!();
  const got = await busy.answers(1);
  assert.deepEqual(got.map((a) => a.body), ['/hold 0 direct']);
  assert.equal(got[0]!.headers.find(([k]) => k === 'Connection')![1], 'close');
  await busy.closing();
  await closed;
});

test('closing: a client that keeps its side open and keeps writing is still closed after its answer, and the server\'s close ends', async () => {
  const s = await startSite();
  const socket = connect({ port: s.port, host: '127.0.0.1', allowHalfOpen: true });
  socket.on('error', () => {});
  let got = '';
  socket.on('data', (d: Buffer) => (got += d.toString('latin1')));
  socket.write(get('/hold'));
  while (s.held.length === 0) await new Promise((r) => setTimeout(r, 5));
  let closed = false;
  s.http.close(() => (closed = true));
  s.http.closeIdleConnections();
  s.direct.closeIdle();
  s.held.shift()!();
  const writer = setInterval(() => socket.write('garbage that is never read\r\n'), 5);
  try {
    for (let i = 0; i < 300 && !closed; i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok(closed, 'the server closed');
    assert.match(got, /\/hold 0 direct$/);
  } finally {
    clearInterval(writer);
    socket.destroy();
    s.direct.closeAll();
  }
});

test('an answer ended after its connection was destroyed still gets its \'close\'', async () => {
  const s = await startSite();
  const c = new RawClient(s.port);
  await c.send(get('/hold'));
  while (s.held.length === 0) await new Promise((r) => setTimeout(r, 5));
  s.direct.closeAll();
  s.held.shift()!();
  assert.equal(s.closes, 1);
  s.http.close();
});

test('node:http\'s timeouts hold: a head that never ends is answered 408 and closed; an idle connection closes after keep-alive', async () => {
  const s = await startSite({ headersTimeout: 1000, keepAliveTimeout: 1000 });
  try {
    const slow = new RawClient(s.port);
    await slow.send('GET /a HTTP/1.1\r\nHost: x\r\n');
    const idle = new RawClient(s.port);
    await idle.send(get('/a'));
    assert.deepEqual((await idle.answers(1)).map((a) => a.body), ['/a 0 direct']);
    await slow.closing(10_000);
    assert.deepEqual((await slow.answers(1)).map((a) => a.status), [408]);
    await idle.closing(10_000);
  } finally {
    s.direct.closeAll();
    s.http.close();
  }
});

test('no timeout runs while an answer is still leaving for a client that reads slowly', async () => {
  const s = await startSite({ headersTimeout: 1000, keepAliveTimeout: 1000 });
  const socket = connect(s.port, '127.0.0.1');
  try {
    socket.pause();
    // Two pipelined answers of 32 MiB: the second request waits for the first answer to drain.
    socket.write(get('/huge') + get('/huge'));
    await new Promise((r) => setTimeout(r, 3000));
    await readAnswers(socket, 2);
  } finally {
    socket.destroy();
    s.direct.closeAll();
    s.http.close();
  }
});
