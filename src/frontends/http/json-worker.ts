import { parentPort } from 'node:worker_threads';
import { isNereidError, type NereidError } from '../../errors.js';
import { moreValuesThan, scanHeader } from './json-scan.js';
import { encodeInfer } from './infer-response.js';
import { decodeInferText, MAX_BODY_VALUES, parseBodyText } from './json-parse.js';
import type { InferenceResponse, RequestBounds } from '../../inference/index.js';

/**
 * Parses and checks large JSON request headers off the event loop: JSON.parse, the checks against the
 * model's bounds and the conversion of every input's `data` into its final bytes, which is where the time
 * goes. Only the checked header comes back, its bytes as transferred buffers.
 * It also writes large JSON responses (numbers to text is as slow as text to numbers).
 */
interface ParseJob {
  id: number;
  text: Uint8Array;
  bounds: RequestBounds;
  maxInputSize: number;
}

interface PlainJob {
  id: number;
  plain: Uint8Array;
  exact: boolean;
}

interface EncodeJob {
  id: number;
  encode: { response: InferenceResponse; binaryOutputs: Map<string, boolean>; binaryDefault: boolean };
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

parentPort!.on('message', (job: ParseJob | PlainJob | EncodeJob) => {
  if ('encode' in job) {
    const { response, binaryOutputs, binaryDefault } = job.encode;
    let encoded;
    try {
      encoded = encodeInfer(response, binaryOutputs, binaryDefault);
    } catch (e) {
      const error = isNereidError(e) ? { code: e.code, message: e.message } : { code: 'INTERNAL', message: (e as Error).message };
      parentPort!.postMessage({ id: job.id, error });
      return;
    }
    // As bytes: a transferred buffer costs the event loop nothing, a multi-megabyte string a copy and an encode.
    const json = encoder.encode(encoded.json as string);
    // Each buffer once: two outputs may be views of one buffer.
    const transfer = [...new Set([json.buffer as ArrayBuffer, ...encoded.blobs.map((b) => b.buffer as ArrayBuffer)])];
    parentPort!.postMessage({ id: job.id, encoded: { json, blobs: encoded.blobs } }, transfer);
    return;
  }
  if ('plain' in job) {
    const { id, plain, exact } = job;
    if (moreValuesThan(plain, MAX_BODY_VALUES)) {
      parentPort!.postMessage({ id, error: { code: 'INVALID_ARG', message: `the request body holds more than ${MAX_BODY_VALUES} JSON values` } });
      return;
    }
    try {
      parentPort!.postMessage({ id, value: parseBodyText(decoder.decode(plain), exact) });
    } catch (e) {
      parentPort!.postMessage({ id, error: { code: 'PARSE', message: (e as Error).message } });
    }
    return;
  }
  const { id, text, bounds, maxInputSize } = job;
  try {
    scanHeader(text, bounds);
  } catch (e) {
    const err = e as NereidError;
    parentPort!.postMessage({ id, error: { code: err.code, message: err.message } });
    return;
  }
  try {
    const header = decodeInferText(decoder.decode(text), { bounds, maxInputSize, packBytes: true, pooled: false, sourceBytes: text, sourceLength: text.byteLength });
    // Tensor bytes go back transferred; everything else in the header is bounded by the model.
    const transfer = new Set<ArrayBuffer>();
    for (const input of header.inputs) {
      if (input.data instanceof Uint8Array) transfer.add(input.data.buffer as ArrayBuffer);
    }
    parentPort!.postMessage({ id, header }, [...transfer]);
  } catch (e) {
    const error = isNereidError(e)
      ? { code: e.code, message: e.message, limit: e.limit }
      : { code: 'INTERNAL', message: `failed to decode the request: ${(e as Error).message}` };
    parentPort!.postMessage({ id, error });
  }
});
