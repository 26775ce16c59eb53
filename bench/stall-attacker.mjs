// The attacker of bench/stall.mjs, a worker thread: sends one hostile request over and over, on `lanes`
// connections one request at a time each, for the milliseconds each message from the parent asks, then answers
// with how many it sent and what came back. A request still unanswered `attackTimeoutS` seconds after the end is
// given up.
import { setMaxListeners } from 'node:events';
import http2 from 'node:http2';
import { parentPort, workerData } from 'node:worker_threads';
import { Client } from 'undici';
import { HOST } from './servers.mjs';

const { lanes, ports, attackTimeoutS } = workerData;
const asBuffer = (u) => (u === undefined ? undefined : Buffer.from(u.buffer, u.byteOffset, u.byteLength));
const request = { ...workerData.request, message: asBuffer(workerData.request.message), body: asBuffer(workerData.request.body) };

/** One unary gRPC call framed by hand on an HTTP/2 session; resolves with 'status: message'. */
function grpcCall(session, message, gzip, signal) {
  return new Promise((resolve) => {
    const headers = { ':method': 'POST', ':path': '/inference.GRPCInferenceService/ModelInfer', 'content-type': 'application/grpc', te: 'trailers' };
    if (gzip) headers['grpc-encoding'] = 'gzip';
    const req = session.request(headers, { signal });
    let meta = {};
    req.on('response', (h) => (meta = { ...meta, ...h }));
    req.on('trailers', (h) => (meta = { ...meta, ...h }));
    req.on('data', () => {});
    req.on('error', (e) => resolve(`error: ${e.code ?? e.message}`));
    req.on('end', () => resolve(`grpc ${meta['grpc-status']}: ${decodeURIComponent(String(meta['grpc-message'] ?? ''))}`));
    const frame = Buffer.alloc(5);
    frame[0] = gzip ? 1 : 0;
    frame.writeUInt32BE(message.length, 1);
    req.end(Buffer.concat([frame, message]));
  });
}

async function httpCall(client, r, signal) {
  try {
    const res = await client.request({ path: r.path, method: 'POST', headers: r.headers, body: r.body, signal });
    const text = await res.body.text();
    return `http ${res.statusCode}: ${text.slice(0, 200)}`;
  } catch (e) {
    return `error: ${e.code ?? e.message}`;
  }
}

/** Sends `request` over and over on `lanes` connections until `until` (ms, performance.now()); the last calls finish. */
async function attack(request, lanes, until, ports, attackTimeoutS) {
  const abort = new AbortController();
  // Every request of every lane listens on the one signal.
  setMaxListeners(0, abort.signal);
  const replies = new Map();
  let sent = 0;
  const lane = async () => {
    const grpcSession = request.kind === 'grpc' ? http2.connect(`http://${HOST}:${ports.grpc}`) : null;
    grpcSession?.on('error', () => {});
    const httpClient = request.kind === 'http' ? new Client(`http://${HOST}:${ports.http}`, { headersTimeout: 0, bodyTimeout: 0 }) : null;
    while (performance.now() < until) {
      sent++;
      const r = request.kind === 'grpc' ? await grpcCall(grpcSession, request.message, request.gzip, abort.signal) : await httpCall(httpClient, request, abort.signal);
      const key = r.slice(0, 160);
      replies.set(key, (replies.get(key) ?? 0) + 1);
    }
    grpcSession?.close();
    await httpClient?.close().catch(() => {});
  };
  const lanesDone = Promise.all(Array.from({ length: lanes }, lane));
  // A request still running at the end of the window may run on (a stall of minutes); give it up after the timeout.
  const timer = setTimeout(() => abort.abort(), Math.max(0, until - performance.now()) + attackTimeoutS * 1000);
  await lanesDone;
  clearTimeout(timer);
  return { sent, replies: Object.fromEntries(replies) };
}

parentPort.on('message', async ({ ms }) => {
  parentPort.postMessage(await attack(request, lanes, performance.now() + ms, ports, attackTimeoutS));
});
