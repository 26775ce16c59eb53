// The gRPC loads of bench/grpc.mjs and of the quick hot-path run (bench/http.mjs --quick): ModelInfer and
// ModelStreamInfer on `simple` from a grpc-js client or from h2load (nghttp2's C client, which frames
// pre-encoded gRPC messages from a file), and HTTP binary from h2load --h1 for the same comparison with a C
// client. Each run reports throughput, latency and the server's CPU time per request over the measured span.

import { execFile, spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { simpleBodies } from './bodies.mjs';
import { runLoad } from './loadgen.mjs';
import { BENCH_DIR, HOST, PIN, ROOT, childrenCpuMs, cpuMs } from './servers.mjs';

export const SIMPLE = join(ROOT, 'examples', 'model_repository', 'simple');
export const INFER_PATH = '/inference.GRPCInferenceService/ModelInfer';
export const STREAM_PATH = '/inference.GRPCInferenceService/ModelStreamInfer';
export const H2LOAD = '/usr/bin/h2load';
export const haveH2load = () => existsSync(H2LOAD);

const protoRoot = new protobuf.Root().loadSync(join(ROOT, 'proto', 'grpc_service.proto'), { keepCase: true });
const RequestType = protoRoot.lookupType('inference.ModelInferRequest');
const ResponseType = protoRoot.lookupType('inference.ModelInferResponse');
const StreamResponseType = protoRoot.lookupType('inference.ModelStreamInferResponse');

/** The requests, as ModelInferRequest bytes with raw_input_contents (as tritonclient.grpc sends them), and the outputs each must produce. */
export function grpcBodies(variants = 8) {
  const out = [];
  for (let v = 0; v < variants; v++) {
    const x = Int32Array.from({ length: 16 }, (_, i) => i + 100 * v);
    const y = Int32Array.from({ length: 16 }, (_, i) => (i % 3) - v);
    out.push({
      body: Buffer.from(RequestType.encode(RequestType.fromObject({
        model_name: 'simple',
        inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }],
        outputs: [{ name: 'OUTPUT0' }, { name: 'OUTPUT1' }],
        raw_input_contents: [Buffer.from(x.buffer), Buffer.from(y.buffer)],
      })).finish()),
      sum: Buffer.from(Int32Array.from(x, (e, i) => e + y[i]).buffer),
      diff: Buffer.from(Int32Array.from(x, (e, i) => e - y[i]).buffer),
    });
  }
  return out;
}

/** Null when a ModelInferResponse holds the expected outputs, else what is wrong. */
function checkResponse(r, b) {
  const raw = r.raw_output_contents;
  if (r.outputs.length !== 2 || raw.length !== 2) return `${r.outputs.length} outputs, ${raw.length} raw contents`;
  if (!Buffer.from(raw[0]).equals(b.sum) || !Buffer.from(raw[1]).equals(b.diff)) return 'wrong output values';
  return null;
}

/**
 * The server's CPU µs per request from /proc readings taken at the measured span's edges, and the client's:
 * this process's own CPU time over the same span (the grpc-js and undici clients run in it; nothing else does
 * during a measurement).
 */
function cpuSpan(pid, warmupS) {
  let cpu0 = NaN;
  let client0 = null;
  const timer = setTimeout(() => {
    cpu0 = cpuMs(pid);
    client0 = process.cpuUsage();
  }, warmupS * 1000);
  return (requests) => {
    clearTimeout(timer);
    const c = process.cpuUsage(client0 ?? undefined);
    return { server: ((cpuMs(pid) - cpu0) * 1000) / requests, client: client0 === null ? NaN : (c.user + c.system) / requests };
  };
}

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];

function summary(lat, durationS, errors, perRequestCpu) {
  lat.sort((x, y) => x - y);
  const cpu = perRequestCpu(lat.length);
  return {
    requests: lat.length, throughput: lat.length / durationS, p50: quantile(lat, 0.5), p99: quantile(lat, 0.99),
    serverCpuUsPerRequest: cpu.server, clientCpuUsPerRequest: cpu.client, errors: errors.length, errorSamples: errors.slice(0, 3),
  };
}

/**
 * Closed-loop ModelInfer over one grpc-js channel (one HTTP/2 connection): `concurrency` calls in flight, each
 * finished call sending the next pre-encoded body at once; every warm-up response and every 8th measured one is
 * decoded and checked.
 */
export async function grpcUnaryLoad({ port, pid, bodies, concurrency, duration, warmup }) {
  const client = new grpc.Client(`${HOST}:${port}`, grpc.credentials.createInsecure());
  const id = (b) => b;
  const lat = [];
  const errors = [];
  let next = 0;
  let done = 0;
  const start = performance.now();
  const measureStart = start + warmup * 1000;
  const end = measureStart + duration * 1000;
  const cpu = cpuSpan(pid, warmup);
  const call = () => new Promise((resolve) => {
    const b = bodies[next++ % bodies.length];
    const t0 = performance.now();
    client.makeUnaryRequest(INFER_PATH, id, id, b.body, (err, res) => {
      const t1 = performance.now();
      if (err) errors.push(err.message);
      else if (t0 < measureStart || ++done % 8 === 0) {
        const bad = checkResponse(ResponseType.decode(res), b);
        if (bad) errors.push(bad);
      }
      if (t0 >= measureStart && t1 <= end) lat.push(t1 - t0);
      resolve();
    });
  });
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < end) await call();
  }));
  const r = summary(lat, duration, errors, cpu);
  client.close();
  return r;
}

/**
 * ModelStreamInfer as Triton's streaming clients use it: one bidi stream, `concurrency` requests in flight on
 * it, each response sending the next request. Responses come in request order for `simple`, so each is matched
 * to the oldest request outstanding.
 */
export async function grpcStreamLoad({ port, pid, bodies, concurrency, duration, warmup }) {
  const client = new grpc.Client(`${HOST}:${port}`, grpc.credentials.createInsecure());
  const id = (b) => b;
  const call = client.makeBidiStreamRequest(STREAM_PATH, id, id);
  const lat = [];
  const errors = [];
  const outstanding = [];
  let next = 0;
  let done = 0;
  const start = performance.now();
  const measureStart = start + warmup * 1000;
  const end = measureStart + duration * 1000;
  const cpu = cpuSpan(pid, warmup);
  const send = () => {
    const b = bodies[next++ % bodies.length];
    outstanding.push({ b, t0: performance.now() });
    call.write(b.body);
  };
  const finished = new Promise((resolve) => {
    let open = concurrency;
    call.on('data', (bytes) => {
      const t1 = performance.now();
      const { b, t0 } = outstanding.shift();
      if (t0 < measureStart || ++done % 8 === 0) {
        const r = StreamResponseType.decode(bytes);
        const bad = r.error_message || checkResponse(r.infer_response, b);
        if (bad) errors.push(bad);
      }
      if (t0 >= measureStart && t1 <= end) lat.push(t1 - t0);
      if (t1 < end) send();
      else if (--open === 0) resolve();
    });
    call.on('error', (e) => {
      errors.push(e.message);
      resolve();
    });
  });
  for (let i = 0; i < concurrency; i++) send();
  await finished;
  const r = summary(lat, duration, errors, cpu);
  call.end();
  client.close();
  return r;
}

/** HTTP with binary tensors through bench/loadgen.mjs (undici, one connection per request in flight). */
export async function httpBinaryLoad({ origin, pid, concurrency, duration, warmup }) {
  const cpu = cpuSpan(pid, warmup);
  const r = await runLoad({ url: `${origin}/v2/models/simple/infer`, bodies: simpleBodies('binary'), concurrency, duration, warmup });
  const c = cpu(r.requests);
  r.serverCpuUsPerRequest = c.server;
  r.clientCpuUsPerRequest = c.client;
  return r;
}

let fileCount = 0;
/** A body written to a temporary file for h2load -d; the same bytes every request (h2load sends one body). */
function bodyFile(dir, bytes) {
  const f = join(dir, `body-${process.pid}-${fileCount++}.bin`);
  writeFileSync(f, bytes);
  return f;
}

/** The first request framed as one gRPC message (uncompressed). */
export function grpcFrame(body) {
  const out = Buffer.alloc(body.length + 5);
  out.writeUInt32BE(body.length, 1);
  body.copy(out, 5);
  return out;
}

/**
 * h2load against a gRPC path: `concurrency` streams in flight on one connection (as one gRPC channel), each a
 * call with one request message; for ModelStreamInfer that is a stream per request, the server's stream
 * machinery included. h2load does not read gRPC statuses; the grpc-js loads check the answers.
 */
export function h2loadGrpc({ port, pid, path, body, tmp, concurrency, duration, warmup }) {
  const file = bodyFile(tmp, grpcFrame(body));
  return h2load(pid, warmup, ['-c', '1', '-m', String(concurrency), '-d', file,
    '-H', 'content-type: application/grpc', '-H', 'te: trailers', `http://${HOST}:${port}${path}`], duration);
}

/** h2load --h1 against Nereid's HTTP binary infer: `concurrency` connections, one request in flight on each. */
export function h2loadHttpBinary({ origin, pid, tmp, concurrency, duration, warmup }) {
  const b = simpleBodies('binary')[0];
  const file = bodyFile(tmp, b.body);
  const headers = Object.entries(b.headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`]);
  return h2load(pid, warmup, ['--h1', '-c', String(concurrency), '-m', '1', '-d', file, ...headers, `${origin}/v2/models/simple/infer`], duration);
}

function h2load(pid, warmup, args, duration) {
  const cpu = cpuSpan(pid, warmup);
  const client0 = childrenCpuMs();
  return new Promise((resolve, reject) => {
    execFile(H2LOAD, ['-D', `${Math.round(duration * 1000)}ms`, '--warm-up-time', `${Math.round(warmup * 1000)}ms`, ...args], { maxBuffer: 1 << 20 }, (err, stdout) => {
      if (err) {
        reject(new Error(`h2load failed: ${err.message}\n${stdout}`));
        return;
      }
      const done = /requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored/.exec(stdout);
      const mean = /time for request:\s+\S+\s+\S+\s+(\S+)/.exec(stdout);
      const requests = done ? Number(done[2]) : 0;
      // h2load's own CPU time, warm-up included, spread over the requests of the warm-up too.
      const clientMs = childrenCpuMs() - client0;
      const failed = done ? Number(done[3]) + Number(done[4]) : 1;
      const ms = (s) => (s.endsWith('us') ? Number(s.slice(0, -2)) / 1000 : s.endsWith('ms') ? Number(s.slice(0, -2)) : Number(s.slice(0, -1)) * 1000);
      resolve({
        requests, throughput: requests / duration, p50: mean ? ms(mean[1]) : NaN, p99: NaN,
        serverCpuUsPerRequest: cpu(requests).server, clientCpuUsPerRequest: (clientMs * 1000) / (requests * (1 + warmup / duration)), errors: failed, errorSamples: failed ? [stdout.split('\n').slice(-8).join(' ')] : [],
      });
    });
  });
}

/**
 * A reference server (bench/grpc-reference-server.mjs) as a child process, on grpc-js or straight on
 * node:http2; ready when it prints the port it serves on.
 */
export function startReference(transport = 'grpc-js') {
  const args = [join(BENCH_DIR, 'grpc-reference-server.mjs'), '--model', join(SIMPLE, '1', 'model.onnx'), '--host', HOST, '--port', '0', '--transport', transport];
  // On the servers' core, as startServer places every server (see PIN).
  const proc = PIN
    ? spawn('taskset', ['-c', PIN.server, process.execPath, ...args], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] })
    : spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  return new Promise((resolve, reject) => {
    let tail = '';
    const onData = (chunk) => {
      tail += chunk.toString();
      const m = / on [^ ]+:(\d+)\n/.exec(tail);
      if (m) {
        proc.stderr.off('data', onData);
        proc.stderr.resume();
        resolve({ pid: proc.pid, port: Number(m[1]), stop: () => new Promise((r) => { proc.once('exit', r); proc.kill('SIGTERM'); }) });
      }
    };
    proc.stderr.on('data', onData);
    proc.once('exit', (code) => reject(new Error(`the gRPC reference exited (${code}) before it was ready:\n${tail}`)));
  });
}
