import { Worker } from 'node:worker_threads';
import { NereidError, invalidArg, type ErrorCode } from '../../errors.js';
import type { InferenceResponse, RequestBounds } from '../../inference/index.js';
import type { Tensor } from '../../tensor/tensor.js';
import { decodeHeader, type HeaderLimits, type InferHeader } from './infer-request.js';
import { isRoundedInteger } from './json-data.js';
import { parseExactJson } from './json-exact.js';
import { encodeInfer, type EncodedInfer } from './infer-response.js';
import { HeaderMemo } from './header-memo.js';

/**
 * JSON request headers: parsed and checked inline when small, in a worker thread when large, so one client's
 * big JSON body never stalls everyone else's requests. The threshold is where parsing starts to cost more
 * than the hop to the worker and back. Only the checked header comes back from the worker: its size is
 * bounded by the model (see RequestBounds), and tensor data is transferred. Sending back the parsed JSON
 * itself would cost the event loop as much as parsing it: structured clone rebuilds every object.
 */
export const OFF_THREAD_BYTES = 256 * 1024;

/**
 * The most JSON values a large body of an endpoint other than infer may hold (see parseBody): rebuilding them
 * on the event loop then takes milliseconds, not the seconds a body of millions of tiny objects would.
 * Such bodies are small (settings, a prompt, a model config); tensors go to infer.
 */
export const MAX_BODY_VALUES = 100_000;

/** A run of 16 digits: the text may hold an integer past 2^53 (9007199254740993 has 16), which JSON.parse rounds. */
const LONG_DIGITS = /[0-9]{16}/;

/**
 * A body's JSON; with `exact`, integers past 2^53 as bigints (json-exact.ts) when the text may hold one, as the
 * generate extension reads INT64 and UINT64 inputs and sequence ids over their whole range. JSON.parse runs
 * first, so a malformed body gets its message.
 */
export function parseBodyText(text: string, exact: boolean): unknown {
  const json = JSON.parse(text);
  return exact && LONG_DIGITS.test(text) ? parseExactJson(text) : json;
}

/**
 * An infer request's JSON header, parsed and checked (see decodeHeader). JSON.parse reads numbers as doubles,
 * but Triton reads INT64 and UINT64 data and the sequence id as 64-bit integers, and clients use their whole
 * range (random or hashed ids, 64-bit keys). Only a header where such a value went past 2^53 is parsed again,
 * exactly (json-exact.ts), so ordinary requests pay nothing for it.
 */
export function decodeInferText(text: string, limits: HeaderLimits): InferHeader {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw invalidArg(`failed to parse the request JSON buffer: ${(e as Error).message}`);
  }
  if (!roundedSequenceId(json)) {
    try {
      return decodeHeader(json, limits);
    } catch (e) {
      if (!isRoundedInteger(e)) throw e;
    }
  }
  try {
    return decodeHeader(parseExactJson(text), limits);
  } catch (e) {
    // Still a double past 2^53: written with a fraction or an exponent, not an integer Triton would read.
    throw isRoundedInteger(e) ? invalidArg(e.message) : e;
  }
}

function roundedSequenceId(j: unknown): boolean {
  const p = j !== null && typeof j === 'object' ? (j as { parameters?: unknown }).parameters : undefined;
  const id = p !== null && typeof p === 'object' ? (p as Record<string, unknown>)['sequence_id'] : undefined;
  return typeof id === 'number' && !Number.isSafeInteger(id);
}

type Pending = { resolve: (v: any) => void; reject: (e: unknown) => void };

/** Responses whose JSON outputs hold more tensor bytes than this are written in the worker (milliseconds of work). */
export const OFF_THREAD_JSON_BYTES = 64 * 1024;

export class JsonParser {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private readonly memo = new HeaderMemo();

  /** The header itself when parsed inline (it throws its refusal), a promise of it from the worker. */
  parse(body: Buffer, length: number, bounds: RequestBounds, maxInputSize: number): InferHeader | Promise<InferHeader> {
    if (length < OFF_THREAD_BYTES) {
      const known = this.memo.find(body, length, bounds, maxInputSize);
      if (known !== undefined) return known;
      return this.memo.keep(body, length, bounds, maxInputSize, decodeInferText(body.toString('utf8', 0, length), { bounds, maxInputSize, packBytes: false, pooled: true, sourceBytes: body, sourceLength: length }));
    }
    const w = this.ensureWorker();
    const id = this.nextId++;
    // A body that is all JSON and owns its memory (a large one read in several chunks, or inflated) goes to the
    // worker as it is: the caller gives it up (see handleInfer). Otherwise a copy, as the binary part must stay
    // here: slice() is one memcpy into a buffer of its own (never the Buffer pool's, which must not move).
    const text = length === body.byteLength && body.byteOffset === 0 && body.buffer.byteLength === length
      ? new Uint8Array(body.buffer, 0, length)
      : Uint8Array.prototype.slice.call(body, 0, length);
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      w.postMessage({ id, text, bounds, maxInputSize }, [text.buffer as ArrayBuffer]);
    });
  }

  /**
   * The JSON body of an endpoint other than infer (generate, repository, logging, shared memory), parsed
   * inline when small and in the worker when large; undefined for an empty body. What the worker sends back
   * is rebuilt value by value on the event loop, so a large body may hold at most MAX_BODY_VALUES values.
   */
  parseBody(body: Buffer, exact = false): Promise<unknown> {
    if (body.byteLength === 0) return Promise.resolve(undefined);
    if (body.byteLength < OFF_THREAD_BYTES) {
      try {
        return Promise.resolve(parseBodyText(body.toString('utf8'), exact));
      } catch (e) {
        return Promise.reject(invalidArg(`failed to parse the request JSON buffer: ${(e as Error).message}`));
      }
    }
    const w = this.ensureWorker();
    const id = this.nextId++;
    // The caller gives the body up: transferred as it is when it owns its memory, else copied.
    const plain = body.byteOffset === 0 && body.buffer.byteLength === body.byteLength ? new Uint8Array(body.buffer) : Uint8Array.prototype.slice.call(body);
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      w.postMessage({ id, plain, exact }, [plain.buffer as ArrayBuffer]);
    });
  }

  /** encodeInfer, in the worker when the JSON part is large (see OFF_THREAD_JSON_BYTES). */
  encode(response: InferenceResponse, binaryOutputs: ReadonlyMap<string, boolean>, binaryDefault: boolean): EncodedInfer | Promise<EncodedInfer> {
    let jsonBytes = 0;
    for (const t of response.outputs) {
      const binary = binaryOutputs.get(t.name) ?? (binaryDefault || t.datatype === 'FP16' || t.datatype === 'BF16');
      if (!binary) jsonBytes += t.datatype === 'BYTES' ? t.data.reduce((n, b) => n + b.byteLength + 4, 0) : t.data.byteLength;
    }
    if (jsonBytes < OFF_THREAD_JSON_BYTES) return encodeInfer(response, binaryOutputs, binaryDefault);
    const w = this.ensureWorker();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // Structured clone copies the output tensors once; the worker transfers the text and blobs back.
      w.postMessage({ id, encode: { response: forWorker(response), binaryOutputs, binaryDefault } });
    });
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(new URL('./json-worker.js', import.meta.url));
    w.unref();
    w.on('message', (m: { id: number; header?: InferHeader; value?: unknown; encoded?: EncodedInfer; error?: { code: string; message: string; limit?: string } }) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (m.encoded) p.resolve(m.encoded);
      else if (m.error) {
        p.reject(m.error.code === 'PARSE'
          ? invalidArg(`failed to parse the request JSON buffer: ${m.error.message}`)
          : new NereidError(m.error.code as ErrorCode, m.error.message, m.error.limit !== undefined ? { limit: m.error.limit } : undefined));
      } else p.resolve('value' in m ? m.value : m.header);
    });
    w.on('error', (e) => this.failAll(e));
    // A message that cannot be rebuilt here names no request: fail them all rather than leave one unanswered.
    w.on('messageerror', (e) => this.failAll(e));
    w.on('exit', () => {
      this.worker = undefined;
      this.failAll(new Error('JSON worker exited'));
    });
    this.worker = w;
    return w;
  }

  private failAll(e: Error): void {
    for (const p of this.pending.values()) p.reject(new NereidError('INTERNAL', e.message));
    this.pending.clear();
  }

  async close(): Promise<void> {
    await this.worker?.terminate();
  }
}

/**
 * The response as the worker gets it. Without release(): a function cannot be cloned, and the worker does not
 * need it. Outputs that view part of a larger buffer (borrowed outputs view a whole stub region) as copies of
 * just their bytes: structured clone copies a view's entire buffer.
 */
export function forWorker(response: InferenceResponse): InferenceResponse {
  const { release: _, ...plain } = response;
  return { ...plain, outputs: plain.outputs.map(compact) };
}

function compact(t: Tensor): Tensor {
  if (t.datatype !== 'BYTES') return t.data.byteLength < t.data.buffer.byteLength ? { ...t, data: t.data.slice() } : t;
  let total = 0;
  for (const e of t.data) total += e.byteLength;
  if (t.data.every((e) => e.buffer.byteLength <= total + 4 * t.data.length)) return t;
  const all = new Uint8Array(total);
  let at = 0;
  const data = t.data.map((e) => {
    all.set(e, at);
    at += e.byteLength;
    return all.subarray(at - e.byteLength, at);
  });
  return { ...t, data };
}
