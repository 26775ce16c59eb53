import { parentPort } from 'node:worker_threads';
import { isNereidError } from '../../errors.js';
import { isDataType } from '../../tensor/datatype.js';
import { elementCount } from '../../tensor/tensor.js';
import { decodeJsonData } from './json-data.js';
import { encodeInfer } from './infer-response.js';
import { parseInferJson } from './json-parse.js';
import type { InferenceResponse } from '../../inference/index.js';

/**
 * Parses large JSON request headers off the event loop: JSON.parse plus the conversion of every input's
 * `data` into its final bytes, which is where the time goes. The bytes come back as transferred buffers.
 * It also writes large JSON responses (numbers to text is as slow as text to numbers).
 */
interface ParseJob {
  id: number;
  text: Uint8Array;
}

interface EncodeJob {
  id: number;
  encode: { response: InferenceResponse; binaryOutputs: Map<string, boolean>; binaryDefault: boolean };
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

parentPort!.on('message', (job: ParseJob | EncodeJob) => {
  if ('encode' in job) {
    const { response, binaryOutputs, binaryDefault } = job.encode;
    const encoded = encodeInfer(response, binaryOutputs, binaryDefault);
    // As bytes: a transferred buffer costs the event loop nothing, a multi-megabyte string a copy and an encode.
    const json = encoder.encode(encoded.json as string);
    // Each buffer once: two outputs may be views of one buffer.
    const transfer = [...new Set([json.buffer as ArrayBuffer, ...encoded.blobs.map((b) => b.buffer as ArrayBuffer)])];
    parentPort!.postMessage({ id: job.id, encoded: { json, blobs: encoded.blobs } }, transfer);
    return;
  }
  const { id, text } = job;
  try {
    const json = parseInferJson(decoder.decode(text));
    const transfer: ArrayBuffer[] = [];
    const inputs = (json as { inputs?: unknown }).inputs;
    if (Array.isArray(inputs)) {
      for (const input of inputs as Record<string, unknown>[]) {
        if (typeof input !== 'object' || input === null || input['data'] === undefined) continue;
        const { name, datatype, shape } = input;
        if (typeof name !== 'string' || !isDataType(datatype) || !Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) continue;
        const count = elementCount(shape as number[]);
        if (count === 0) continue;
        const data = decodeJsonData(name, datatype, input['data'], count);
        input['data'] = data;
        if (data instanceof Uint8Array) transfer.push(data.buffer as ArrayBuffer);
      }
    }
    parentPort!.postMessage({ id, json }, transfer);
  } catch (e) {
    const error = isNereidError(e) ? { code: e.code, message: e.message } : { code: 'PARSE', message: (e as Error).message };
    parentPort!.postMessage({ id, error });
  }
});
