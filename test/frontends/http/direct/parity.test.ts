import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { once } from 'node:events';
import { EXAMPLES } from '../../../helpers/paths.js';
import { startTestServer, type TestServer } from '../../../helpers/server.js';

// The same requests to Nereid over the direct path (plain: Content-Length) and over node:http (the body sent
// chunked, which the direct path leaves to node:http) get the same answers, byte for byte but the Date.

let s: TestServer;
before(async () => {
  s = await startTestServer({ modelRepositories: [EXAMPLES] });
});
after(async () => {
  await s.close();
});

interface Exchange {
  method: 'GET' | 'POST';
  path: string;
  body?: Buffer;
  headers?: Record<string, string>;
}

function framed(x: Exchange, chunkedBody: boolean): Buffer {
  let head = `${x.method} ${x.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n`;
  for (const [k, v] of Object.entries(x.headers ?? {})) head += `${k}: ${v}\r\n`;
  const body = x.body ?? Buffer.alloc(0);
  if (x.method === 'GET') return Buffer.from(`${head}\r\n`);
  if (!chunkedBody) return Buffer.concat([Buffer.from(`${head}Content-Length: ${body.byteLength}\r\n\r\n`), body]);
  return Buffer.concat([Buffer.from(`${head}Transfer-Encoding: chunked\r\n\r\n${body.byteLength.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]);
}

/** One connection, one request: the answer as received, its Date header blanked. */
function exchange(x: Exchange, chunkedBody: boolean): Promise<string> {
  return lastAnswer([framed(x, chunkedBody)], 1);
}

/**
 * Sends `requests` on one connection and returns the last of their `count` answers (each framed by its
 * Content-Length), its Date header blanked.
 */
async function lastAnswer(requests: Buffer[], count: number): Promise<string> {
  const socket = connect(Number(new URL(s.url).port), '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (d: Buffer) => chunks.push(d));
  socket.write(Buffer.concat(requests));
  for (;;) {
    await new Promise((r) => setTimeout(r, 10));
    const text = Buffer.concat(chunks).toString('latin1');
    let at = 0;
    let last = '';
    for (let i = 0; i < count && at !== -1; i++) {
      const end = text.indexOf('\r\n\r\n', at);
      const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(at, end === -1 ? undefined : end));
      if (end === -1 || length === null || text.length < end + 4 + Number(length[1])) at = -1;
      else {
        last = text.slice(at, end + 4 + Number(length[1]));
        at = end + 4 + Number(length[1]);
      }
    }
    if (at !== -1) {
      socket.destroy();
      await once(socket, 'close');
      return last.replace(/\r\nDate: [^\r]*/, '\r\nDate: -');
    }
  }
}

const simpleJson = Buffer.from(JSON.stringify({
  inputs: [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
  ],
}));

function binaryRequest(): { body: Buffer; headers: Record<string, string> } {
  const header = Buffer.from(JSON.stringify({
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: { binary_data_size: 64 } },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: { binary_data_size: 64 } },
    ],
    parameters: { binary_data_output: true },
  }));
  const data = Buffer.alloc(128);
  for (let i = 0; i < 32; i++) data.writeInt32LE(i * 3 - 7, i * 4);
  return { body: Buffer.concat([header, data]), headers: { 'Inference-Header-Content-Length': String(header.byteLength) } };
}

test('JSON and binary inferences, their errors, and the other routes answer the same on both paths', async () => {
  const binary = binaryRequest();
  const cases: Exchange[] = [
    { method: 'POST', path: '/v2/models/simple/infer', body: simpleJson, headers: { 'Content-Type': 'application/json' } },
    { method: 'POST', path: '/v2/models/simple/versions/1/infer', body: binary.body, headers: binary.headers },
    { method: 'POST', path: '/v2/models/simple/infer', body: Buffer.from('{"inputs":[{"name":"NOPE","datatype":"INT32","shape":[1],"data":[1]}]}') },
    { method: 'POST', path: '/v2/models/simple/infer', body: Buffer.from('{"inputs": [') },
    { method: 'POST', path: '/v2/models/nowhere/infer', body: simpleJson },
    { method: 'POST', path: '/v2/models/simple/infer', body: binary.body, headers: { 'Inference-Header-Content-Length': '99999' } },
    { method: 'POST', path: '/v2/health/ready', body: Buffer.from('x') },
    { method: 'POST', path: '/v2/nothing/here', body: Buffer.from('x') },
  ];
  for (const x of cases) {
    const direct = await exchange(x, false);
    const node = await exchange(x, true);
    assert.equal(direct, node, `${x.method} ${x.path}`);
  }
  const gets: Exchange[] = [
    { method: 'GET', path: '/v2/health/ready' },
    { method: 'GET', path: '/v2/models/simple' },
    { method: 'GET', path: '/v2/models/simple/config' },
    { method: 'GET', path: '/v2/models/nowhere/ready' },
  ];
  // A GET has no body to send chunked; the one sent after a chunked request is node:http's.
  for (const x of gets) {
    const direct = await exchange(x, false);
    const viaNode = await pipelinedAfterChunked(x);
    assert.equal(direct, viaNode, `${x.method} ${x.path}`);
  }
});

/** `x` sent on a connection that node:http already reads (a chunked request went first): its answer. */
function pipelinedAfterChunked(x: Exchange): Promise<string> {
  return lastAnswer([framed({ method: 'POST', path: '/v2/health/ready', body: Buffer.from('x') }, true), framed(x, false)], 2);
}
