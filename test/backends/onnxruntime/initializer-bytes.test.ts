import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initializerBytes } from '../../../src/backends/onnxruntime/initializer-bytes.js';

// The walk that sizes an ONNX model's weights, on hand-made protobuf: the shapes real files use (packed and
// unpacked dims, strings, 4-bit types, weights far larger than the read window) and files it must refuse
// rather than trust (lengths past their message or the file, negative dims, unknown types). Real models are
// checked against the onnx package in memory.test.ts.

function varint(n: number | bigint): number[] {
  let v = BigInt(n);
  if (v < 0n) v += 1n << 64n;
  const out: number[] = [];
  do {
    const b = Number(v & 0x7fn);
    v >>= 7n;
    out.push(v > 0n ? b | 0x80 : b);
  } while (v > 0n);
  return out;
}
const key = (field: number, wire: number): number[] => varint(field * 8 + wire);
const num = (field: number, value: number | bigint): number[] => [...key(field, 0), ...varint(value)];
const bytes = (field: number, payload: number[] | Uint8Array): number[] => [...key(field, 2), ...varint(payload.length), ...payload];

/** TensorProto with dims, data_type and raw_data of the right size. */
function tensor(dims: number[], dataType: number, rawBytes: number, packed = true): number[] {
  const d = packed ? bytes(1, dims.flatMap((x) => varint(x))) : dims.flatMap((x) => num(1, x));
  return [...d, ...num(2, dataType), ...bytes(8, [...'w'].map((c) => c.charCodeAt(0))), ...bytes(9, new Uint8Array(rawBytes))];
}
const model = (...initializers: number[][]): number[] => [...num(1, 7), ...bytes(7, initializers.flatMap((t) => bytes(5, t)))];

let dir: string;
test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nereid-initializers-'));
});
test.after(() => rm(dir, { recursive: true, force: true }));

let n = 0;
async function walk(content: number[]): Promise<number | undefined> {
  const p = join(dir, `m${n++}.onnx`);
  await writeFile(p, new Uint8Array(content));
  return initializerBytes(p);
}

test('sums dims times element size, packed or not, over initializers far larger than one read', async () => {
  assert.equal(await walk(model(tensor([2, 3], 1, 24), tensor([5], 7, 40, false), tensor([300, 100], 10, 60_000), tensor([], 11, 8))), 24 + 40 + 60_000 + 8);
  assert.equal(await walk(model()), 0);
  assert.equal(await walk([...num(1, 7)]), 0);
});

test('strings count their bytes; 4-bit types two to a byte, rounded up', async () => {
  const strings = [...bytes(1, varint(2)), ...num(2, 8), ...bytes(6, [1, 2, 3]), ...bytes(6, [4, 5, 6, 7, 8])];
  assert.equal(await walk(model(strings)), 8);
  assert.equal(await walk(model(tensor([3], 22, 2), tensor([4], 21, 2))), 4);
});

test('a file it cannot trust gives no figure', async () => {
  const ok = model(tensor([4], 1, 16));
  assert.equal(await walk(ok), 16);
  assert.equal(await walk(ok.slice(0, -3)), undefined, 'truncated');
  assert.equal(await walk([...num(1, 7), ...key(7, 2), ...varint(1_000_000), 0, 0]), undefined, 'graph past the file');
  const overrun = [...bytes(1, [4]), ...num(2, 1), ...key(9, 2), ...varint(20), ...new Array<number>(16).fill(0)];
  assert.equal(await walk([...num(1, 7), ...bytes(7, bytes(5, overrun))]), undefined, 'raw_data past its tensor');
  assert.equal(await walk(model(tensor([-1, 4], 1, 16))), undefined, 'negative dim');
  assert.equal(await walk(model(tensor([4], 99, 4))), undefined, 'unknown data type');
  assert.equal(await walk(model([...bytes(1, new Array<number>(2000).fill(1)), ...num(2, 1)])), undefined, 'absurd packed dims');
  assert.equal(await walk([0x9b, 0x06, 0x9c, 0x06]), undefined, 'a group');
  assert.equal(await walk([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), undefined, 'endless varint');
  assert.equal(await walk([]), 0);
});
