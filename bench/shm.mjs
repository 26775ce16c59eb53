#!/usr/bin/env node
// System shared memory: how a region is reached. The project's mmap addon (MappedMemory: an input is a view of
// the client's memory, an output one memcpy into it) against the fallback of plain positional reads and writes
// on the /dev/shm file (FileMemory: fs.readSync into a fresh buffer, fs.writeSync at a position), through the
// classes the server uses, for 4 KiB, 1 MiB and 16 MiB tensors. Rounds alternate the two ways; each figure is
// the median over rounds of the mean time per operation in that round, and the ratio the median of per-round
// ratios. "input" makes the tensor's bytes available and sums a sample of them (as a backend would touch them);
// "output" writes a model output into the region. Each operation ends with the region's intact() check, as a
// request does before it is answered (a client may shrink the object under the region: see memory.ts).
// Usage: ./node_modules/.bin/tsc -p . && node bench/shm.mjs [--quick]
import { rmSync, writeFileSync } from 'node:fs';
import { FileMemory } from '../dist/src/sharedmemory/file-memory.js';
import { MappedMemory } from '../dist/src/sharedmemory/mapped-memory.js';
import { nativeShm, nativeShmMissing } from '../dist/src/sharedmemory/native.js';

if (!nativeShm) {
  console.error(`the mmap addon is not built (${nativeShmMissing}); run npm install`);
  process.exit(1);
}
const QUICK = process.argv.includes('--quick');
const ROUNDS = QUICK ? 3 : 7;
const SIZES = [
  ['4 KiB', 4096, QUICK ? 2000 : 20000],
  ['1 MiB', 1 << 20, QUICK ? 50 : 400],
  ['16 MiB', 16 << 20, QUICK ? 4 : 25],
];

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** Touches one byte per 4 KiB page, so a view is not measured as free when the backend would read it anyway. */
function touch(bytes) {
  let sum = 0;
  for (let i = 0; i < bytes.byteLength; i += 4096) sum += bytes[i];
  return sum;
}

function timeOp(iterations, op) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) op(i);
  return Number(process.hrtime.bigint() - t0) / iterations / 1e3; // µs per operation
}

const results = [];
let sink = 0;
for (const [label, bytes, iterations] of SIZES) {
  const name = `nereid_bench_shm_${process.pid}`;
  writeFileSync(`/dev/shm/${name}`, Buffer.alloc(bytes));
  const mapped = MappedMemory.open(nativeShm, `/${name}`, 0, bytes);
  const file = FileMemory.open(`/${name}`, 0, bytes);
  const payload = Buffer.alloc(bytes, 7);
  const ways = {
    'mmap input': () => { sink += touch(mapped.read(0, bytes)) + Number(mapped.intact()); },
    'file input': () => { sink += touch(file.read(0, bytes)) + Number(file.intact()); },
    'mmap output': () => { mapped.write(0, payload); sink += Number(mapped.intact()); },
    'file output': () => { file.write(0, payload); sink += Number(file.intact()); },
  };
  const times = Object.fromEntries(Object.keys(ways).map((k) => [k, []]));
  for (const op of Object.values(ways)) timeOp(Math.max(1, iterations >> 3), op); // warm-up
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 ? ['file', 'mmap'] : ['mmap', 'file'];
    for (const dir of ['input', 'output']) for (const way of order) times[`${way} ${dir}`].push(timeOp(iterations, ways[`${way} ${dir}`]));
  }
  const ratio = (dir) => median(times[`file ${dir}`].map((f, i) => f / times[`mmap ${dir}`][i]));
  results.push({
    size: label,
    mmapInputUs: median(times['mmap input']), fileInputUs: median(times['file input']), inputRatio: ratio('input'),
    mmapOutputUs: median(times['mmap output']), fileOutputUs: median(times['file output']), outputRatio: ratio('output'),
  });
  mapped.close();
  file.close();
  rmSync(`/dev/shm/${name}`);
}

const f = (us) => (us < 10 ? us.toFixed(2) : us < 1000 ? us.toFixed(1) : us.toFixed(0));
console.log(`shared-memory access, µs per operation (median of ${ROUNDS} rounds); ratio = file / mmap`);
console.log('size     | input mmap | input file | ratio  | output mmap | output file | ratio');
for (const r of results) {
  console.log(`${r.size.padEnd(8)} | ${f(r.mmapInputUs).padStart(10)} | ${f(r.fileInputUs).padStart(10)} | ${r.inputRatio.toFixed(1).padStart(5)}x | ${f(r.mmapOutputUs).padStart(11)} | ${f(r.fileOutputUs).padStart(11)} | ${r.outputRatio.toFixed(2).padStart(5)}x`);
}
if (sink < 0) console.log(sink);
