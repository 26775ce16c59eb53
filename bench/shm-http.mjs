#!/usr/bin/env node
// System shared memory vs binary HTTP on a 16 MiB FP32 identity model, the client writing the input on every
// request, as a shared-memory client does: into its mapped input region (shm), or into the request body
// (binary HTTP). With shared memory the request and the response are a few hundred bytes of JSON; the output
// is read from the client's output region. Concurrency 1, closed loop, alternating rounds against one
// `nereid serve` process (--allow-client-shm=true); figures are medians of the rounds. Goal: shm ≥ 3× binary.
// Usage: ./node_modules/.bin/tsc -p . && node bench/shm-http.mjs [--quick]
import { rmSync, writeFileSync } from 'node:fs';
import { Pool } from 'undici';
import { join } from 'node:path';
import { freePort, killAll, nereidArgs, nereidBuilt, ROOT, startServer } from './servers.mjs';
import { nativeShm } from '../dist/src/sharedmemory/native.js';

const QUICK = process.argv.includes('--quick');
const ROUNDS = QUICK ? 3 : 7;
const ROUND_MS = QUICK ? 1000 : 2500;
const ELEMENTS = 4 * 1024 * 1024;
const BYTES = ELEMENTS * 4;

if (!nereidBuilt()) throw new Error('build first: ./node_modules/.bin/tsc -p .');
if (!nativeShm) throw new Error('the shared-memory addon is not built (npm ci builds it)');

const port = await freePort();
const server = await startServer('nereid', [...nereidArgs(join(ROOT, 'test', 'fixtures', 'dtypes'), port), '--allow-client-shm=true', '--model-control-mode=explicit', '--load-model=identity_fp32'], port);
const pool = new Pool(server.origin, { connections: 1 });
const url = '/v2/models/identity_fp32/infer';

/** The client's two regions: /dev/shm objects it maps and registers, as tritonclient's shm utilities do. */
function region(name) {
  const path = `/dev/shm/${name}`;
  writeFileSync(path, Buffer.alloc(BYTES));
  const [buffer, handle] = nativeShm.map(`/${name}`, 0, BYTES);
  return { name, key: `/${name}`, bytes: new Uint8Array(buffer), close: () => { nativeShm.unmap(buffer, handle); rmSync(path, { force: true }); } };
}

async function post(path, body, headers = { 'content-type': 'application/json' }) {
  const r = await pool.request({ method: 'POST', path, body, headers });
  const data = Buffer.from(await r.body.arrayBuffer());
  if (r.statusCode !== 200) throw new Error(`${path}: ${r.statusCode} ${data.toString().slice(0, 300)}`);
  return { data, headers: r.headers };
}

const pid = process.pid;
const input = region(`nereid_bench_in_${pid}`);
const output = region(`nereid_bench_out_${pid}`);
const source = new Float32Array(ELEMENTS);
for (let i = 0; i < ELEMENTS; i++) source[i] = i % 1000;
const sourceBytes = new Uint8Array(source.buffer);

try {
  await post('/v2/systemsharedmemory/region/in/register', JSON.stringify({ key: input.key, offset: 0, byte_size: BYTES }));
  await post('/v2/systemsharedmemory/region/out/register', JSON.stringify({ key: output.key, offset: 0, byte_size: BYTES }));
  const shmRequest = JSON.stringify({
    inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, ELEMENTS], parameters: { shared_memory_region: 'in', shared_memory_byte_size: BYTES } }],
    outputs: [{ name: 'OUTPUT0', parameters: { shared_memory_region: 'out', shared_memory_byte_size: BYTES } }],
  });
  const header = Buffer.from(JSON.stringify({
    inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, ELEMENTS], parameters: { binary_data_size: BYTES } }],
    outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
  }));

  async function viaShm(k) {
    source[0] = k;
    input.bytes.set(sourceBytes);
    await post(url, shmRequest);
    if (new Float32Array(output.bytes.buffer, 0, 1)[0] !== k) throw new Error('shm: wrong output');
  }

  async function viaBinary(k) {
    source[0] = k;
    const body = Buffer.allocUnsafe(header.byteLength + BYTES);
    header.copy(body, 0);
    body.set(sourceBytes, header.byteLength);
    const r = await post(url, body, { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(header.byteLength) });
    const json = Number(r.headers['inference-header-content-length']);
    if (r.data.byteLength !== json + BYTES || r.data.readFloatLE(json) !== k) throw new Error('binary: wrong output');
  }

  async function round(run) {
    let n = 0;
    const t0 = performance.now();
    while (performance.now() - t0 < ROUND_MS) await run(++n);
    return n / ((performance.now() - t0) / 1000);
  }

  for (let i = 0; i < 3; i++) { await viaShm(i); await viaBinary(i); }
  const shm = [];
  const bin = [];
  for (let i = 0; i < ROUNDS; i++) {
    if (i % 2 === 0) { shm.push(await round(viaShm)); bin.push(await round(viaBinary)); } else { bin.push(await round(viaBinary)); shm.push(await round(viaShm)); }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const s = median(shm);
  const b = median(bin);
  console.log(`== 16 MiB FP32 identity, concurrency 1, client writes the input each request; medians of ${ROUNDS} alternating rounds ==`);
  console.log(`system shared memory ${s.toFixed(1)} req/s, binary HTTP ${b.toFixed(1)} req/s: ${(s / b).toFixed(2)}× ${s / b >= 3 ? 'pass' : 'FAIL'} (goal >= 3)`);
} finally {
  await pool.close();
  input.close();
  output.close();
  await server.stop();
  killAll();
}
