import { toNereidError } from '../errors.js';
import type { InferenceRequest, InferenceResponse } from '../inference/index.js';
import { ResponseStream } from '../inference/stream.js';
import { SharedMemoryBinding } from './binding.js';
import type { SharedMemoryRegistry } from './registry.js';

/** What runs a request once its shared-memory inputs are read (a model version). */
export interface RequestRunner {
  infer(request: InferenceRequest): Promise<InferenceResponse>;
  inferStream(request: InferenceRequest): ResponseStream;
}

/**
 * A request that reads inputs from regions or writes outputs into them, run to its one response: inputs read
 * from their regions, outputs written into theirs, the regions held until the request is over.
 */
export function inferThroughSharedMemory(regions: SharedMemoryRegistry, runner: RequestRunner, request: InferenceRequest): Promise<InferenceResponse> {
  const binding = new SharedMemoryBinding(regions);
  let bound: InferenceRequest;
  try {
    bound = binding.bind(request);
  } catch (e) {
    binding.release();
    return Promise.reject(e);
  }
  // Outputs that all go into regions are copied there straight from the backend's memory, which is then given
  // back: borrowed, whether or not the caller borrows.
  const own = !request.borrowOutputs && request.outputs !== undefined && request.outputs.length > 0 && request.outputs.every((o) => o.sharedMemory);
  if (own) bound = { ...bound, borrowOutputs: true };
  return runner.infer(bound).then((r) => {
    let written: InferenceResponse;
    try {
      written = binding.writeOutputs(r);
    } catch (e) {
      r.release?.();
      throw e;
    }
    if (!own || !r.release) return written;
    r.release();
    const { release: _, ...rest } = written;
    return rest;
  }).finally(() => binding.release());
}

/** As inferThroughSharedMemory, for every response of a stream: each writes its outputs (a later one overwrites). */
export function streamThroughSharedMemory(regions: SharedMemoryRegistry, runner: RequestRunner, request: InferenceRequest): ResponseStream {
  const binding = new SharedMemoryBinding(regions);
  let bound: InferenceRequest;
  try {
    bound = binding.bind(request);
  } catch (e) {
    binding.release();
    return ResponseStream.failed(e);
  }
  const inner = runner.inferStream(bound);
  const outer = new ResponseStream();
  outer.onCancel = () => void inner.return();
  void (async () => {
    try {
      for await (const r of inner) outer.push(binding.writeOutputs(r));
      outer.end();
    } catch (e) {
      outer.fail(toNereidError(e));
      void inner.return();
    } finally {
      binding.release();
    }
  })();
  return outer;
}
