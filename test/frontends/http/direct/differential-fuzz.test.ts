import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { once } from 'node:events';
import { join } from 'node:path';
import { DirectPath } from '../../../../src/frontends/http/direct/direct-path.js';
import type { DirectAnswer } from '../../../../src/frontends/http/direct/answer.js';
import type { RequestHead } from '../../../../src/frontends/http/direct/request-head.js';
import { answerClientError } from '../../../../src/frontends/http/client-error.js';
import { FIXTURES } from '../../../helpers/paths.js';
import { fuzzCases, fuzzSeed, seeded } from '../../../helpers/fuzz.js';
import { generateBareLfConnection, generateConnection } from '../../../helpers/http1-requests.js';
import { SHAPES, shapeBytes } from '../../../helpers/smuggling-shapes.js';

// A seeded differential fuzz of the direct path against node:http's parser (llhttp). Two servers answer every
// request they accept with what they read of it (method, target, headers as sent and as keyed, body): one is
// node:http alone (see readFirstInJs), the other node:http with the direct path in front, as Nereid's HTTP
// frontend runs it (its clientError answer too). Every generated connection's bytes go to both, and both must give the same
// transcript, byte for byte but the Date: the same requests accepted and read the same way, the same refusals
// (status and all), the same point where the connection ends. A request the direct path reads that llhttp would
// refuse, or reads differently (a header value, a body length), is a way past whatever checks node:http makes,
// and a pipelined request split at another place is a smuggled one.
//
// The fixed seed runs in CI; NEREID_FUZZ_SEED and NEREID_FUZZ_CASES explore further by hand. A connection that
// ever disagreed is kept in fixtures/http1-differential/corpus.json and replayed first.

interface Site {
  http: Server;
  direct: DirectPath<true> | null;
  port: number;
  /** How many requests the direct path read itself. */
  served: number;
  /** The length of each request the direct path read, by the client's port, in the order read. */
  lengths: Map<number, number[]>;
}

/** What a server read of a request, as its answer. */
function echo(res: ServerResponse | DirectAnswer, method: string, url: string, headers: object, rawHeaders: string[], body: Buffer): void {
  const text = JSON.stringify({ method, url, headers, rawHeaders, body: body.toString('latin1') });
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

async function startSite(withDirect: boolean): Promise<Site> {
  const http = createServer({ keepAliveTimeout: 65_000 }, (req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => echo(res, req.method!, req.url!, req.headers, req.rawHeaders, Buffer.concat(chunks)));
  });
  http.on('clientError', answerClientError);
  // Bodies up to 64 bytes are read directly; the generated ones run to 90, so larger ones exercise the hand-off.
  const site: Site = { http, direct: null, port: 0, served: 0, lengths: new Map() };
  const serve = (head: RequestHead, body: Buffer, answer: DirectAnswer): void => {
    site.served++;
    const port = head.socket.remotePort!;
    site.lengths.set(port, [...(site.lengths.get(port) ?? []), head.headLength + body.byteLength]);
    echo(answer, head.method, head.url, head.headers, head.rawHeaders, body);
  };
  if (withDirect) site.direct = new DirectPath<true>(http, { decide: () => true, timesArrival: () => false, serve }, 64);
  else readFirstInJs(http);
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  site.port = (http.address() as AddressInfo).port;
  return site;
}

/**
 * node:http reads a connection's bytes in one of two ways: from the socket's handle in C++ when it has the
 * connection from the start, or from the socket's 'data' events when the bytes came back through unshift (as
 * after the direct path's hand-off). llhttp's verdicts are the same either way, but when a pipelined request is
 * refused the answers to the requests before it in the same read are written in the one way and lost in the
 * other. The reference takes its bytes the way a hand-off gives them, so that only the parsers are compared.
 */
function readFirstInJs(http: Server): void {
  const [node] = http.listeners('connection') as ((socket: Socket) => void)[];
  http.removeAllListeners('connection');
  http.on('connection', (socket: Socket) => {
    const give = (chunk?: Buffer): void => {
      socket.removeListener('end', give);
      socket.removeListener('data', give);
      if (chunk !== undefined) {
        socket.pause();
        socket.unshift(chunk);
      }
      node!.call(http, socket);
      if (chunk !== undefined) socket.resume();
    };
    socket.once('data', give);
    socket.once('end', give);
  });
}

/**
 * Sends `bytes` on a new connection, ends the client's side, and returns everything answered until the server
 * closed. With `pieces`, the bytes go in pieces of those lengths first, each once the answers to all before it
 * have come (see compare).
 */
async function transcript(site: Site, bytes: Buffer, pieces: readonly number[] = []): Promise<{ text: string; port: number }> {
  const socket = connect(site.port, '127.0.0.1');
  const data = new Received(socket);
  await once(socket, 'connect');
  const port = socket.localPort!;
  let at = 0;
  for (let i = 0; i < pieces.length && !data.closed; i++) {
    socket.write(bytes.subarray(at, at + pieces[i]!));
    at += pieces[i]!;
    await data.answers(i + 1);
  }
  if (!data.closed) socket.end(bytes.subarray(at));
  // Both servers close a connection whose client has ended its side; one that does not is a finding too.
  const timer = setTimeout(() => socket.destroy(new Error('still open')), 10_000);
  if (!data.closed) await once(socket, 'close');
  clearTimeout(timer);
  const text = data.text().replace(/\r\nDate: [^\r]*/g, '\r\nDate: -');
  return { text: socket.errored !== null ? `${text}[the server did not close the connection]` : text, port };
}

/** What a client connection has received. */
class Received {
  closed = false;
  private readonly chunks: Buffer[] = [];
  private wake: (() => void) | null = null;

  constructor(socket: Socket) {
    socket.on('data', (d: Buffer) => {
      this.chunks.push(d);
      this.wake?.();
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      this.closed = true;
      this.wake?.();
    });
  }

  text(): string {
    return Buffer.concat(this.chunks).toString('latin1');
  }

  /**
   * Resolves once `n` whole answers (each framed by its Content-Length) have come, or the connection closed, or
   * after 10 s without them: a server that waits for more bytes there disagrees, which the transcripts then show.
   */
  async answers(n: number): Promise<void> {
    let late = false;
    const timer = setTimeout(() => {
      late = true;
      this.wake?.();
    }, 10_000);
    try {
      while (!this.closed && !late && countAnswers(this.text()) < n) await new Promise<void>((r) => (this.wake = r));
    } finally {
      clearTimeout(timer);
      this.wake = null;
    }
  }
}

function countAnswers(text: string): number {
  let n = 0;
  let at = 0;
  for (;;) {
    const end = text.indexOf('\r\n\r\n', at);
    if (end === -1) return n;
    const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(at, end));
    if (length === null || text.length < end + 4 + Number(length[1])) return n;
    n++;
    at = end + 4 + Number(length[1]);
  }
}

interface Disagreement {
  bytes: string;
  node: string;
  direct: string;
}

/**
 * The bytes to the direct path first, then to node:http alone, in pieces that end where each request the direct
 * path read ended, each sent once the answers before it have come. node:http refuses a connection as soon as its
 * parser meets an error, and answers to the requests before it in the same read are lost with it; sent this way,
 * node:http answers the requests the direct path claims to have read as separate reads, and must answer them the
 * same. A piece that does not end where llhttp's request ends shows as a difference all the same.
 */
async function compare(bytes: string): Promise<Disagreement | null> {
  const b = Buffer.from(bytes, 'latin1');
  const direct = await transcript(withDirect, b);
  const lengths = withDirect.lengths.get(direct.port) ?? [];
  withDirect.lengths.delete(direct.port);
  const node = await transcript(nodeOnly, b, lengths);
  return node.text === direct.text ? null : { bytes, node: node.text, direct: direct.text };
}

/** The disagreements, each with the bytes sent and both transcripts from where they part. */
function report(found: Disagreement[], what: string): string {
  const shown = found.slice(0, Number(process.env.NEREID_FUZZ_SHOW ?? 3)).map((d) => {
    let at = 0;
    while (at < d.node.length && d.node[at] === d.direct[at]) at++;
    const from = Math.max(0, at - 40);
    return `bytes:  ${JSON.stringify(d.bytes)}\nnode:   …${JSON.stringify(d.node.slice(from, at + 160))}\ndirect: …${JSON.stringify(d.direct.slice(from, at + 160))}`;
  });
  return `${found.length} ${what} disagreed; the first:\n${shown.join('\n\n')}`;
}

/** Runs `cases` through both servers, a few connections at a time. */
async function run(cases: string[]): Promise<Disagreement[]> {
  const found: Disagreement[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < cases.length) {
      const d = await compare(cases[next++]!);
      if (d !== null) found.push(d);
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  return found;
}

let nodeOnly: Site;
let withDirect: Site;
before(async () => {
  [nodeOnly, withDirect] = await Promise.all([startSite(false), startSite(true)]);
});
after(() => {
  withDirect.direct!.closeAll();
  withDirect.http.close();
  nodeOnly.http.close();
});

test('the corpus of connections that once disagreed: both paths agree on each', async () => {
  const corpus = JSON.parse(readFileSync(join(FIXTURES, 'http1-differential', 'corpus.json'), 'utf8')) as { found: string; bytes: string }[];
  const found = await run(corpus.map((c) => c.bytes));
  assert.equal(found.length, 0, report(found, 'corpus connections'));
});

test('request-smuggling shapes, alone and behind a request: both paths agree on each', async () => {
  const cases = SHAPES.flatMap((shape) => [shapeBytes(shape), `GET / HTTP/1.1\r\nHost: a\r\n\r\n${shapeBytes(shape)}`]);
  const found = await run(cases);
  assert.equal(found.length, 0, report(found, 'smuggling shapes'));
});

test('seeded generated connections: node:http alone and with the direct path in front give the same transcript', async () => {
  const seed = fuzzSeed(36_4);
  const rng = seeded(seed);
  const cases = Array.from({ length: fuzzCases(3000) }, () => generateConnection(rng));
  const bare = seeded(seed + 1);
  cases.push(...Array.from({ length: Math.ceil(fuzzCases(3000) / 30) }, () => generateBareLfConnection(bare)));
  const found = await run(cases);
  assert.equal(found.length, 0, `seed ${seed}: ${report(found, 'generated connections')}`);
});

test('the generated connections reach both verdicts and the direct path, not only node:http', async () => {
  // A generator that only made requests the direct path hands over would test nothing of its own parser.
  const rng = seeded(fuzzSeed(36_4));
  let accepted = 0;
  let refused = 0;
  const before = withDirect.served;
  for (let i = 0; i < 300; i++) {
    const t = (await transcript(withDirect, Buffer.from(generateConnection(rng), 'latin1'))).text;
    if (t.startsWith('HTTP/1.1 200')) accepted++;
    else if (t.startsWith('HTTP/1.1 4')) refused++;
  }
  const direct = withDirect.served - before;
  assert.ok(accepted > 50 && refused > 50 && direct > 50, `accepted ${accepted}, refused ${refused}, read directly ${direct}`);
});

test('a head that can no longer be plain goes to node:http before it ends, and is refused at once as node:http refuses it', async () => {
  // The client does not end its side: the refusal comes from the bytes alone, not at the end or the 60 s headersTimeout.
  // [a request answered first, then the bytes of the next head]
  const heads: [string, string][] = [
    ['', 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n'],
    ['', 'GET / HTTP/1.1\r\nHost: a\r\nX-A: b\x01c\r\nX-B'],
    ['GET / HTTP/1.1\r\nHost: a\r\n\r\n', 'kvvly'],
    ['', 'GET /a b HTTP/1.1\r\n'],
    // Lines ended by a bare LF or a bare CR: the end of a plain head (CRLF CRLF) never comes, llhttp refuses at once.
    ['', 'GET / HTTP/1.1\nHost: a\n\n'],
    ['', 'GET / HTTP/1.1\r\nHost: a\n\n'],
    ['', 'POST /v2/models/simple/infer HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\n'],
    ['GET / HTTP/1.1\r\nHost: a\r\n\r\n', 'GET / HTTP/1.1\nHost: a\n\n'],
    ['', 'GET / HTTP/1.1\r\nHost: a\rX'],
  ];
  for (const [first, head] of heads) {
    const answers = await Promise.all([nodeOnly, withDirect].map(async (site) => {
      const socket = connect(site.port, '127.0.0.1');
      const data = new Received(socket);
      if (first !== '') {
        socket.write(first);
        await data.answers(1);
      }
      socket.write(Buffer.from(head, 'latin1'));
      await data.answers(first === '' ? 1 : 2);
      socket.destroy();
      return data.text().replace(/\r\nDate: [^\r]*/g, '\r\nDate: -');
    }));
    assert.match(answers[1]!, /HTTP\/1\.1 400 Bad Request\r\n[^]*$/, JSON.stringify(head));
    assert.equal(answers[1], answers[0], JSON.stringify(head));
  }
});

test('generated connections with bare LF line endings are refused by both paths without waiting for the client', async () => {
  // The client keeps its side open: a parser that waits for a CRLF CRLF that never comes holds the connection
  // until headersTimeout, where node:http answers 400 at its first bare LF. Both must have closed by themselves.
  const rng = seeded(fuzzSeed(37_4));
  const cases = Array.from({ length: fuzzCases(100) }, () => generateBareLfConnection(rng));
  const found: Disagreement[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < cases.length) {
      const bytes = cases[next++]!;
      const [node, direct] = await Promise.all([nodeOnly, withDirect].map((site) => heldOpen(site, Buffer.from(bytes, 'latin1'))));
      if (node !== direct || !direct!.startsWith('HTTP/1.1 400 ')) found.push({ bytes, node: node!, direct: direct! });
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  assert.equal(found.length, 0, report(found, 'bare-LF connections'));
});

/** What a server answers to `bytes` sent without the client's end, until it closes (or 10 s, a finding then). */
async function heldOpen(site: Site, bytes: Buffer): Promise<string> {
  const socket = connect(site.port, '127.0.0.1');
  const data = new Received(socket);
  socket.write(bytes);
  const timer = setTimeout(() => socket.destroy(new Error('still open')), 10_000);
  if (!data.closed) await once(socket, 'close');
  clearTimeout(timer);
  const text = data.text().replace(/\r\nDate: [^\r]*/g, '\r\nDate: -');
  return socket.errored !== null ? `${text}[the server did not close the connection]` : text;
}
