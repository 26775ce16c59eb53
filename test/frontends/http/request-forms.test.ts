import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { once } from 'node:events';
import { EXAMPLES } from '../../helpers/paths.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';

// Request forms RFC 9112 rules on that plain clients seldom send, through a real server on raw sockets, where
// every connection starts on the direct path: lines ended by a bare LF (node:http answers 400 at once, and so
// must the direct path, not hold the connection until headersTimeout), and the absolute-form target
// (`POST http://host/v2/...`), which servers must accept and route by its path.

let s: TestServer;
let port: number;
before(async () => {
  s = await startTestServer({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit', loadModels: ['simple'] });
  port = s.http.port;
});
after(() => s.close());

const SIMPLE = JSON.stringify({
  inputs: [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
  ],
});

const post = (target: string, body = SIMPLE): string =>
  `POST ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

/** A raw connection that collects what it is answered. */
class Raw {
  readonly socket: Socket;
  text = '';
  closed = false;
  private wake: (() => void) | null = null;

  constructor() {
    this.socket = connect(port, '127.0.0.1');
    this.socket.on('data', (d: Buffer) => {
      this.text += d.toString('latin1');
      this.wake?.();
    });
    this.socket.on('error', () => {});
    this.socket.on('close', () => {
      this.closed = true;
      this.wake?.();
    });
  }

  /** Resolves once `n` answers' status lines have come or the connection closed; 20 s without them is a failure. */
  async answers(n: number): Promise<string[]> {
    const timer = setTimeout(() => this.socket.destroy(), 20_000);
    while (!this.closed && statuses(this.text).length < n) await new Promise<void>((r) => (this.wake = r));
    clearTimeout(timer);
    return statuses(this.text);
  }
}

function statuses(text: string): string[] {
  return [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]!);
}

test('a head whose lines end in a bare LF is answered 400 at once, and the connection closes, with the client still sending', async () => {
  const heads = [
    'GET /v2/health/ready HTTP/1.1\nHost: 127.0.0.1\n\n',
    'GET /v2/health/ready HTTP/1.1\r\nHost: 127.0.0.1\n\n',
    `POST /v2/models/simple/infer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${SIMPLE.length}\n\n`,
    'GET /v2/health/ready HTTP/1.1\r\nHost: 127.0.0.1\rX',
  ];
  for (const head of heads) {
    const c = new Raw();
    c.socket.write(head);
    assert.deepEqual(await c.answers(1), ['400'], JSON.stringify(head));
    await (c.closed ? Promise.resolve() : once(c.socket, 'close'));
    assert.ok(!c.socket.errored, `the server closed the connection itself: ${JSON.stringify(head)}`);
  }
});

test('a bare-LF head after a request the direct path answered: the first is answered, the second refused', async () => {
  const c = new Raw();
  c.socket.write('GET /v2/health/ready HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  assert.deepEqual(await c.answers(1), ['200']);
  c.socket.write('GET /v2/health/ready HTTP/1.1\nHost: 127.0.0.1\n\n');
  assert.deepEqual(await c.answers(2), ['200', '400']);
});

test('an absolute-form target is routed by its path: inference, health, query and scheme in any case', async () => {
  const c = new Raw();
  c.socket.write(post('http://127.0.0.1/v2/models/simple/infer'));
  assert.deepEqual(await c.answers(1), ['200'], c.text);
  assert.match(c.text, /"name":"OUTPUT0","datatype":"INT32","shape":\[1,16\],"data":\[1,2,3,/);
  // The connection stays open and keeps serving, absolute and origin forms alike.
  c.socket.write(`GET HTTPS://other.example:8000/v2/health/ready?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n${post('/v2/models/simple/infer')}`);
  assert.deepEqual(await c.answers(3), ['200', '200', '200'], c.text);
  c.socket.destroy();
});

test('an absolute-form target after requests the direct path answered, on the same connection', async () => {
  const c = new Raw();
  c.socket.write(post('/v2/models/simple/infer'));
  assert.deepEqual(await c.answers(1), ['200']);
  c.socket.write(post('http://127.0.0.1:1234/v2/models/simple/infer'));
  assert.deepEqual(await c.answers(2), ['200', '200'], c.text);
  c.socket.destroy();
});

test('absolute forms that name no route are 404, as their paths are', async () => {
  const c = new Raw();
  c.socket.write('GET http://127.0.0.1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET http://127.0.0.1/v3/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  assert.deepEqual(await c.answers(2), ['404', '404'], c.text);
  c.socket.destroy();
});
