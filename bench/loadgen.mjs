#!/usr/bin/env node
// A closed-loop HTTP load generator for inference benchmarks.
//
// C requests are kept in flight over C keep-alive connections (an undici Pool, one request per connection at a
// time, no pipelining): when a response ends, the same slot sends the next pre-encoded body at once. Nothing is
// encoded while measuring; latencies go into a preallocated Float64Array; every response must be a 200 and its
// body must decode (see `verifyEvery`). Errors are counted by kind and never hidden: a run with errors says so.
//
// As a module:
//   import { runLoad } from './loadgen.mjs';
//   const r = await runLoad({ url, bodies: [{ body, headers, verify? }], concurrency: 8, duration: 3, warmup: 1 });
//   // r = { requests, errors, errorDetail, seconds, throughput, p50, p99, p999, mean, min, max } (latencies in ms)
//
// As a command:
//   node bench/loadgen.mjs --url http://127.0.0.1:8000/v2/models/simple/infer --preset simple-binary -c 8 -d 5
//   node bench/loadgen.mjs --url ... --body request.json [--header 'name: value'] -c 1 -n 10000

import { performance } from 'node:perf_hooks';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { Pool } from 'undici';
import { decodeResponse, simpleBodies, identity1mBodies } from './bodies.mjs';

const now = () => performance.now();

function headersObject(raw) {
  const h = {};
  for (let i = 0; i < raw.length; i += 2) h[raw[i].toString('latin1').toLowerCase()] = raw[i + 1].toString('latin1');
  return h;
}

/** Default body check: the JSON part parses, has `outputs`, and the binary blobs cover the rest exactly. */
function decodes(buf, headers) {
  decodeResponse(buf, headers);
  return null;
}

function percentile(sorted, n, q) {
  if (n === 0) return NaN;
  return sorted[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))];
}

/**
 * Runs one closed-loop load test.
 * @param {object} o
 * @param {string} o.url            full URL of the POST target (all bodies go to the same path)
 * @param {{body: Buffer, headers: object, verify?: Function}[]} o.bodies  pre-encoded requests, sent in rotation
 * @param {number} o.concurrency    requests in flight, one per connection
 * @param {number} [o.duration]     seconds to measure (after warm-up); or
 * @param {number} [o.requests]     how many requests to measure
 * @param {number} [o.warmup=1]     seconds of unmeasured load first, on the same connections
 * @param {number} [o.verifyEvery=1]  fully decode and check every k-th response body (1 = all); the others are
 *                                  checked for status 200 and a non-empty body only. Large bodies use k > 1 so
 *                                  the client's own JSON parsing does not dominate what is measured.
 * @param {number} [o.maxSamples]   latency array size to preallocate (grows if exceeded)
 * @param {object} [o.connect]      undici's connect options, for TLS (e.g. { ca })
 * @param {boolean} [o.keepLatencies]  also return every measured latency, sorted (ms), for merging runs
 */
export async function runLoad(o) {
  const { url, bodies, concurrency } = o;
  const warmupMs = (o.warmup ?? 1) * 1000;
  const durationMs = o.duration === undefined ? Infinity : o.duration * 1000;
  const maxRequests = o.requests ?? Infinity;
  if (durationMs === Infinity && maxRequests === Infinity) throw new Error('runLoad needs duration or requests');
  const verifyEvery = Math.max(1, o.verifyEvery ?? 1);
  const target = new URL(url);
  const path = target.pathname + target.search;
  const pool = new Pool(target.origin, {
    connections: concurrency,
    pipelining: 1,
    keepAliveTimeout: 60_000,
    headersTimeout: 60_000,
    bodyTimeout: 60_000,
    // TLS settings for an https:// url (a CA to trust, say).
    ...(o.connect ? { connect: o.connect } : {}),
  });
  const prepared = bodies.map((b) => ({
    opts: { path, method: 'POST', headers: b.headers, body: b.body },
    verify: b.verify ?? decodes,
  }));

  let lat = new Float64Array(Math.min(o.maxSamples ?? 1 << 20, maxRequests === Infinity ? 1 << 20 : maxRequests));
  let n = 0;
  let completed = 0; // all completions, warm-up included: picks which responses get a full check
  let measuredIssued = 0;
  let bodyIndex = 0;
  let bytesIn = 0;
  let lastEnd = 0;
  const errors = { status: 0, network: 0, decode: 0, statusCodes: {}, samples: [] };
  const noteError = (kind, msg) => {
    errors[kind]++;
    if (errors.samples.length < 5) errors.samples.push(`${kind}: ${msg}`);
  };

  const start = now();
  const measureStart = start + warmupMs;
  const measureEnd = measureStart + durationMs;
  let active = concurrency;
  let finish;
  const done = new Promise((resolve) => { finish = resolve; });

  // One handler per slot, reused for each of its requests (a slot has one request in flight at a time). It uses
  // undici's native handler methods (onConnect/onHeaders/onData/onComplete/onError) so nothing is wrapped.
  class Slot {
    constructor() {
      this.t0 = 0;
      this.record = false;
      this.check = false;
      this.status = 0;
      this.rawHeaders = null;
      this.chunks = [];
      this.bytes = 0;
      this.req = null;
    }

    next() {
      const t = now();
      if (t >= measureEnd || measuredIssued >= maxRequests) {
        if (--active === 0) finish();
        return;
      }
      this.record = t >= measureStart;
      if (this.record) measuredIssued++;
      this.req = prepared[bodyIndex];
      bodyIndex = bodyIndex + 1 === prepared.length ? 0 : bodyIndex + 1;
      this.check = (completed + 1) % verifyEvery === 0 || !this.record;
      this.status = 0;
      this.rawHeaders = null;
      this.chunks.length = 0;
      this.bytes = 0;
      this.t0 = now();
      pool.dispatch(this.req.opts, this);
    }

    onConnect() {}

    onHeaders(statusCode, rawHeaders) {
      this.status = statusCode;
      this.rawHeaders = rawHeaders;
      return true;
    }

    onData(chunk) {
      this.bytes += chunk.length;
      if (this.check || this.status !== 200) this.chunks.push(chunk);
      return true;
    }

    onComplete() {
      const t1 = now();
      completed++;
      bytesIn += this.bytes;
      if (this.record) {
        if (n === lat.length) {
          const bigger = new Float64Array(lat.length * 2);
          bigger.set(lat);
          lat = bigger;
        }
        lat[n++] = t1 - this.t0;
        lastEnd = t1;
      }
      if (this.status !== 200) {
        errors.statusCodes[this.status] = (errors.statusCodes[this.status] ?? 0) + 1;
        noteError('status', `${this.status} ${Buffer.concat(this.chunks).toString('utf8', 0, 200)}`);
      } else if (this.bytes === 0) {
        noteError('decode', 'empty body');
      } else if (this.check) {
        const buf = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
        let problem;
        try {
          problem = this.req.verify(buf, headersObject(this.rawHeaders));
        } catch (err) {
          problem = err.message;
        }
        if (problem) noteError('decode', problem);
      }
      this.next();
    }

    onError(err) {
      completed++;
      noteError('network', err.code ?? err.message);
      // A refused or reset connection fails at once: back off a little instead of spinning.
      setTimeout(() => this.next(), 1);
    }
  }

  for (let i = 0; i < concurrency; i++) new Slot().next();
  await done;
  await pool.close();

  const seconds = n > 0 ? (lastEnd - measureStart) / 1000 : 0;
  const sorted = lat.subarray(0, n).sort();
  let sum = 0;
  for (let i = 0; i < n; i++) sum += sorted[i];
  const errorCount = errors.status + errors.network + errors.decode;
  return {
    requests: n,
    errors: errorCount,
    errorDetail: errorCount > 0 ? errors : undefined,
    seconds,
    throughput: seconds > 0 ? n / seconds : 0,
    p50: percentile(sorted, n, 0.5),
    p99: percentile(sorted, n, 0.99),
    p999: percentile(sorted, n, 0.999),
    mean: n > 0 ? sum / n : NaN,
    min: n > 0 ? sorted[0] : NaN,
    max: n > 0 ? sorted[n - 1] : NaN,
    bytesIn,
    latencies: o.keepLatencies ? sorted : undefined,
  };
}

const PRESETS = {
  'simple-json': () => simpleBodies('json'),
  'simple-binary': () => simpleBodies('binary'),
  'identity1m-json': () => identity1mBodies('json'),
  'identity1m-binary': () => identity1mBodies('binary'),
};

async function cli() {
  const { values: a } = parseArgs({
    options: {
      url: { type: 'string' },
      preset: { type: 'string' },
      body: { type: 'string' },
      header: { type: 'string', multiple: true, default: [] },
      concurrency: { type: 'string', short: 'c', default: '1' },
      duration: { type: 'string', short: 'd' },
      requests: { type: 'string', short: 'n' },
      warmup: { type: 'string', default: '1' },
      'verify-every': { type: 'string', default: '1' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (a.help || !a.url || (!a.preset && !a.body)) {
    process.stdout.write(`usage: node bench/loadgen.mjs --url URL (--preset NAME | --body FILE [--header 'k: v']...)
         [-c CONCURRENCY] [-d SECONDS | -n REQUESTS] [--warmup SECONDS] [--verify-every K] [--json]
presets: ${Object.keys(PRESETS).join(', ')}
--body sends the file as is (add --header 'inference-header-content-length: N' for binary tensors);
responses must be 200 and decode as KServe v2 (JSON part with outputs, binary blobs covering the rest).
`);
    process.exitCode = a.help ? 0 : 2;
    return;
  }
  let bodies;
  if (a.preset) {
    if (!PRESETS[a.preset]) throw new Error(`unknown preset ${a.preset}`);
    bodies = PRESETS[a.preset]();
  } else {
    const headers = { 'content-type': 'application/json' };
    for (const h of a.header) {
      const i = h.indexOf(':');
      headers[h.slice(0, i).trim().toLowerCase()] = h.slice(i + 1).trim();
    }
    bodies = [{ body: readFileSync(a.body), headers }];
  }
  const r = await runLoad({
    url: a.url,
    bodies,
    concurrency: Number(a.concurrency),
    duration: a.duration !== undefined ? Number(a.duration) : a.requests === undefined ? 5 : undefined,
    requests: a.requests !== undefined ? Number(a.requests) : undefined,
    warmup: Number(a.warmup),
    verifyEvery: Number(a['verify-every']),
  });
  if (a.json) {
    process.stdout.write(JSON.stringify(r, null, 2) + '\n');
  } else {
    const us = (ms) => `${(ms * 1000).toFixed(0)} µs`;
    process.stdout.write(
      `${r.requests} requests in ${r.seconds.toFixed(2)} s: ${r.throughput.toFixed(0)} req/s, ` +
        `p50 ${us(r.p50)}, p99 ${us(r.p99)}, p99.9 ${us(r.p999)}, errors ${r.errors}\n`,
    );
    if (r.errors > 0) process.stdout.write(`ERRORS: ${JSON.stringify(r.errorDetail)}\n`);
  }
  if (r.errors > 0) process.exitCode = 1;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await cli();
