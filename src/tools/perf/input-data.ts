/**
 * The tensors the load generator sends, as perf_analyzer makes them: random (made once and reused), zero, or read
 * from JSON files in perf_analyzer's format (a "data" list of steps, or a list of streams for sequence models;
 * values as flat lists, {"b64": ...} or {"content": ..., "shape": [...]}). Each step is one batch-1 request's
 * inputs; a batch of b repeats it b times.
 */
import { readFileSync } from 'node:fs';
import { byteSize, serializeBytes, typedArrayCtor, type DataType } from '../../tensor/index.js';
import type { InputInfo, ModelInfo } from './model-info.js';
import type { TensorData } from './transport.js';

export type Step = readonly TensorData[];
export type DataStream = readonly Step[];

export interface InputDataOptions {
  readonly inputData: readonly string[];
  readonly shapes: ReadonlyMap<string, number[]>;
  readonly stringLength: number;
  readonly stringData: string | undefined;
  readonly batchSize: number;
}

export class InputDataError extends Error {}

/** One or more streams of steps; models that are not sequence models use them round-robin as one. */
export function buildStreams(info: ModelInfo, o: InputDataOptions): DataStream[] {
  const streams: DataStream[] = [];
  for (const source of o.inputData) {
    if (source === 'random' || source === 'zero') {
      streams.push([info.inputs.filter((i) => !i.optional).map((i) => generated(i, o, source === 'zero'))]);
    } else {
      streams.push(...fromJsonFile(source, info, o));
    }
  }
  return streams.map((s) => s.map((step) => step.map((t) => batched(t, o.batchSize, info.maxBatchSize > 0))));
}

function fixedShape(i: InputInfo, o: InputDataOptions, fromData?: readonly number[], elements?: number): number[] {
  if (fromData) return [...fromData];
  // One variable dimension and data of known length: the dimension follows from the data.
  const variable = i.dims.filter((d) => d < 0).length;
  if (variable === 1 && elements !== undefined && !o.shapes.has(i.name)) {
    const fixed = i.dims.filter((d) => d >= 0).reduce((a, b) => a * b, 1);
    if (fixed > 0 && elements % fixed === 0) return i.dims.map((d) => (d < 0 ? elements / fixed : d));
  }
  const given = o.shapes.get(i.name);
  if (given) {
    if (given.length !== i.dims.length || given.some((d, k) => i.dims[k] !== -1 && i.dims[k] !== d)) {
      throw new InputDataError(`--shape ${i.name}:${given.join(',')} does not fit the model's dims [${i.dims.join(',')}]`);
    }
    return given;
  }
  if (i.dims.some((d) => d < 0)) throw new InputDataError(`input '${i.name}' has variable dims [${i.dims.join(',')}]: give its shape with --shape ${i.name}:...`);
  return [...i.dims];
}

const count = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);

function generated(i: InputInfo, o: InputDataOptions, zero: boolean): TensorData {
  const shape = fixedShape(i, o);
  const n = count(shape);
  if (i.datatype === 'BYTES') {
    const elements: Uint8Array[] = [];
    for (let k = 0; k < n; k++) elements.push(Buffer.from(o.stringData ?? (zero ? '0' : randomString(o.stringLength))));
    return { name: i.name, datatype: i.datatype, shape, bytes: serializeBytes(elements) };
  }
  const bytes = Buffer.alloc(n * byteSize(i.datatype));
  if (!zero) fillRandom(i.datatype, bytes, n);
  return { name: i.name, datatype: i.datatype, shape, bytes };
}

function randomString(len: number): string {
  const abc = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  let s = '';
  for (let k = 0; k < len; k++) s += abc[Math.floor(Math.random() * abc.length)];
  return s;
}

function fillRandom(dt: DataType, bytes: Buffer, n: number): void {
  if (dt === 'FP16' || dt === 'BF16') {
    for (let k = 0; k < n; k++) bytes.writeUInt16LE(dt === 'FP16' ? toHalf(Math.random()) : toBf16(Math.random()), 2 * k);
    return;
  }
  if (dt === 'BOOL') {
    for (let k = 0; k < n; k++) bytes[k] = Math.random() < 0.5 ? 0 : 1;
    return;
  }
  const view = new (typedArrayCtor(dt as Exclude<DataType, 'BYTES'>))(bytes.buffer, bytes.byteOffset, n);
  for (let k = 0; k < n; k++) {
    if (view instanceof BigInt64Array || view instanceof BigUint64Array) view[k] = BigInt(Math.floor(Math.random() * 100));
    else if (view instanceof Float32Array || view instanceof Float64Array) view[k] = Math.random();
    else (view as Int32Array)[k] = Math.floor(Math.random() * 100);
  }
}

function toHalf(v: number): number {
  const f = new Float32Array([v]);
  const x = new Uint32Array(f.buffer)[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = ((x >>> 23) & 0xff) - 127 + 15;
  if (exp <= 0) return sign;
  if (exp >= 31) return sign | 0x7c00;
  return sign | (exp << 10) | ((x >>> 13) & 0x3ff);
}

function toBf16(v: number): number {
  return new Uint32Array(new Float32Array([v]).buffer)[0]! >>> 16;
}

function fromJsonFile(path: string, info: ModelInfo, o: InputDataOptions): Step[][] {
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new InputDataError(`--input-data ${path}: ${(e as Error).message}`);
  }
  const data = (doc as { data?: unknown }).data;
  if (!Array.isArray(data) || data.length === 0) throw new InputDataError(`--input-data ${path}: expected an object with a non-empty "data" list`);
  const isStreams = Array.isArray(data[0]);
  const streams = (isStreams ? data : [data]) as unknown[][];
  return streams.map((steps, s) =>
    steps.map((step, k) => {
      if (typeof step !== 'object' || step === null || Array.isArray(step)) throw new InputDataError(`--input-data ${path}: entry ${k} of stream ${s} is not an object of inputs`);
      return stepFromJson(step as Record<string, unknown>, info, o, `${path} data[${isStreams ? `${s}][${k}` : k}]`);
    }),
  );
}

function stepFromJson(step: Record<string, unknown>, info: ModelInfo, o: InputDataOptions, where: string): Step {
  for (const name of Object.keys(step)) {
    if (!info.inputs.some((i) => i.name === name)) throw new InputDataError(`${where}: model '${info.name}' has no input '${name}' (its inputs: ${info.inputs.map((i) => i.name).join(', ')})`);
  }
  const out: TensorData[] = [];
  for (const i of info.inputs) {
    const v = step[i.name];
    if (v === undefined) {
      if (i.optional) continue;
      throw new InputDataError(`${where}: input '${i.name}' of model '${info.name}' is missing`);
    }
    out.push(tensorFromJson(i, v, o, where));
  }
  return out;
}

function tensorFromJson(i: InputInfo, v: unknown, o: InputDataOptions, where: string): TensorData {
  let content = v;
  let given: number[] | undefined;
  if (typeof v === 'object' && v !== null && !Array.isArray(v) && 'content' in v) {
    content = (v as { content: unknown }).content;
    const s = (v as { shape?: unknown }).shape;
    if (s !== undefined) {
      if (!Array.isArray(s) || s.some((d) => !Number.isInteger(d) || d < 0)) throw new InputDataError(`${where}: input '${i.name}' has a bad "shape"`);
      given = s as number[];
    }
  }
  const flatLength = Array.isArray(content) ? (content as unknown[]).flat(Infinity).length : undefined;
  const shape = fixedShape(i, o, given, flatLength);
  const n = count(shape);
  if (typeof content === 'object' && content !== null && !Array.isArray(content) && 'b64' in content) {
    const bytes = Buffer.from(String((content as { b64: unknown }).b64), 'base64');
    const want = i.datatype === 'BYTES' ? undefined : n * byteSize(i.datatype);
    if (want !== undefined && bytes.length !== want) {
      throw new InputDataError(`${where}: input '${i.name}' has ${bytes.length} bytes of data, but shape [${shape.join(',')}] of ${i.datatype} needs ${want}`);
    }
    return { name: i.name, datatype: i.datatype, shape, bytes };
  }
  if (!Array.isArray(content)) throw new InputDataError(`${where}: input '${i.name}' must be a list, {"b64": ...} or {"content": ..., "shape": ...}`);
  const flat = (content as unknown[]).flat(Infinity);
  if (flat.length !== n) {
    throw new InputDataError(`${where}: input '${i.name}' has ${flat.length} elements, but shape [${shape.join(',')}] needs ${n}`);
  }
  return { name: i.name, datatype: i.datatype, shape, bytes: encodeValues(i, flat, where) };
}

function encodeValues(i: InputInfo, flat: unknown[], where: string): Buffer {
  const dt = i.datatype;
  if (dt === 'BYTES') return serializeBytes(flat.map((x) => Buffer.from(typeof x === 'string' ? x : JSON.stringify(x))));
  const bad = (x: unknown): never => {
    throw new InputDataError(`${where}: input '${i.name}' (${dt}) has a value ${JSON.stringify(x)} that is not of its type`);
  };
  const bytes = Buffer.alloc(flat.length * byteSize(dt));
  if (dt === 'BOOL') {
    flat.forEach((x, k) => (bytes[k] = typeof x === 'boolean' ? (x ? 1 : 0) : typeof x === 'number' ? (x ? 1 : 0) : bad(x)));
    return bytes;
  }
  if (dt === 'FP16' || dt === 'BF16') {
    flat.forEach((x, k) => bytes.writeUInt16LE(typeof x === 'number' ? (dt === 'FP16' ? toHalf(x) : toBf16(x)) : bad(x), 2 * k));
    return bytes;
  }
  const view = new (typedArrayCtor(dt))(bytes.buffer, bytes.byteOffset, flat.length);
  const integer = !(view instanceof Float32Array || view instanceof Float64Array);
  flat.forEach((x, k) => {
    if (typeof x !== 'number' || (integer && !Number.isInteger(x))) bad(x);
    if (view instanceof BigInt64Array || view instanceof BigUint64Array) view[k] = BigInt(x as number);
    else (view as Float64Array)[k] = x as number;
  });
  return bytes;
}

function batched(t: TensorData, b: number, batching: boolean): TensorData {
  if (!batching) return t;
  const bytes = b === 1 ? t.bytes : Buffer.concat(Array.from({ length: b }, () => t.bytes));
  return { ...t, shape: [b, ...t.shape], bytes };
}
