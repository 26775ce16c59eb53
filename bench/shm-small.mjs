#!/usr/bin/env node
// What shared memory costs per request when tensors are small: `simple` (two 16-element INT32 inputs, two
// outputs) with every tensor in a 64-byte region of one client object, against the same request with the tensors
// in a binary HTTP body, in alternating rounds against one `nereid serve --allow-client-shm=true` process.
// Concurrency 1, closed loop; figures are medians of the rounds, the ratio the median of per-round ratios
// (shm / binary), which is what to compare between two builds on a busy machine.
// Usage: ./node_modules/.bin/tsc -p . && node bench/shm-small.mjs [--quick]
import { rmSync, writeFileSync } from 'node:fs';
import { Pool } from 'undici';
import { join } from 'node:path';
import { freePort, killAll, nereidArgs, nereidBuilt, ROOT, startServer } from './servers.mjs';

const QUICK = process.argv.includes('--quick');
const ROUNDS = QUICK ? 3 : 9;
const ROUND_MS = QUICK ? 500 : 1500;

if (!nereidBuilt()) throw new Error('build first: ./node_modules/.bin/tsc -p .');

const port = await freePort();
const server = await startServer('nereid', [...nereidArgs(join(ROOT, 'examples', 'model_repository'), port), '--allow-client-shm=true', '--model-control-mode=explicit', '--load-model=simple'], port);
const pool = new Pool(server.origin, { connections: 1 });
const url = '/v2/models/simple/infer';

async function post(path, body, headers = { 'content-type': 'application/json' }) {
  const r = await pool.request({ method: 'POST', path, body, headers });
  const data = Buffer.from(await r.body.arrayBuffer());
  if (r.statusCode !== 200) throw new Error(`${path}: ${r.statusCode} ${data.toString().slice(0, 300)}`);
  return { data, headers: r.headers };
}

const name = `nereid_bench_small_${process.pid}`;
const path = `/dev/shm/${name}`;
const a = new Int32Array(16).map((_, i) => i);
const b = new Int32Array(16).fill(1);
writeFileSync(path, Buffer.concat([Buffer.from(a.buffer), Buffer.from(b.buffer), Buffer.alloc(128)]));

try {
  for (const [i, part] of ['in0', 'in1', 'out0', 'out1'].entries()) {
    await post(`/v2/systemsharedmemory/region/${part}/register`, JSON.stringify({ key: `/${name}`, offset: 64 * i, byte_size: 64 }));
  }
  const shm = (region) => ({ shared_memory_region: region, shared_memory_byte_size: 64 });
  const shmRequest = JSON.stringify({
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: shm('in0') },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: shm('in1') },
    ],
    outputs: [{ name: 'OUTPUT0', parameters: shm('out0') }, { name: 'OUTPUT1', parameters: shm('out1') }],
  });
  const header = Buffer.from(JSON.stringify({
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: { binary_data_size: 64 } },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: { binary_data_size: 64 } },
    ],
    outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }, { name: 'OUTPUT1', parameters: { binary_data: true } }],
  }));
  const binaryBody = Buffer.concat([header, Buffer.from(a.buffer), Buffer.from(b.buffer)]);
  const binaryHeaders = { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(header.byteLength) };

  const viaShm = () => post(url, shmRequest);
  const viaBinary = () => post(url, binaryBody, binaryHeaders);

  async function round(run) {
    let n = 0;
    const t0 = performance.now();
    while (performance.now() - t0 < ROUND_MS) {
      await run();
      n++;
    }
    return n / ((performance.now() - t0) / 1000);
  }

  for (let i = 0; i < 200; i++) { await viaShm(); await viaBinary(); }
  const shmRates = [];
  const binRates = [];
  for (let i = 0; i < ROUNDS; i++) {
    if (i % 2 === 0) { shmRates.push(await round(viaShm)); binRates.push(await round(viaBinary)); } else { binRates.push(await round(viaBinary)); shmRates.push(await round(viaShm)); }
  }
  const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  const ratio = median(shmRates.map((s, i) => s / binRates[i]));
  console.log(`== simple (64-byte tensors), concurrency 1; medians of ${ROUNDS} alternating rounds ==`);
  console.log(`system shared memory ${median(shmRates).toFixed(0)} req/s, binary HTTP ${median(binRates).toFixed(0)} req/s: shm/binary ${ratio.toFixed(3)}`);
} finally {
  await pool.close();
  rmSync(path, { force: true });
  await server.stop();
  killAll();
}
