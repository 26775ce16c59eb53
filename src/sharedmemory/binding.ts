import { internal, invalidArg } from '../errors.js';
import type { InferenceRequest, InferenceResponse, SharedMemoryInput, SharedMemoryRef } from '../inference/index.js';
import { deserializeBytes, serializeBytes } from '../tensor/bytes.js';
import { byteSize } from '../tensor/datatype.js';
import { elementCount, type Tensor } from '../tensor/tensor.js';
import type { Region } from './region.js';
import type { SharedMemoryRegistry } from './registry.js';

/** True when a request reads an input from, or writes an output to, shared memory. */
export function usesSharedMemory(request: InferenceRequest): boolean {
  if (request.sharedMemoryInputs !== undefined && request.sharedMemoryInputs.length > 0) return true;
  const outputs = request.outputs;
  if (outputs === undefined) return false;
  for (let i = 0; i < outputs.length; i++) if (outputs[i]!.sharedMemory !== undefined) return true;
  return false;
}

interface OutputTarget {
  readonly region: Region;
  readonly ref: SharedMemoryRef;
}

const NO_BYTES = new Uint8Array(0);

/**
 * The shared memory of one request. bind() takes the regions it names, checks every range and turns its
 * shared-memory inputs into tensors (views of the mapping when the addon maps it); writeOutputs() writes the
 * requested outputs into their regions; release() gives the regions back. Whoever binds must release, on
 * success and on failure, so that an unregister waiting for the request can finish.
 *
 * A client may shrink a region's object while the request runs. Nothing faults for that (see memory.ts), but
 * the bytes read or written are then not the object's: bind() refuses a region already found shrunk, and
 * writeOutputs(), which every response goes through, fails the response when any region the request holds was
 * found shrunk since, by whoever read it (the backend reading input views included).
 */
export class SharedMemoryBinding {
  private readonly held: Region[] = [];
  private outputs: Map<string, OutputTarget> | undefined;

  constructor(private readonly registry: SharedMemoryRegistry) {}

  /** The request with its shared-memory inputs as ordinary tensors. Throws on a disabled feature, an unknown region or a bad range. */
  bind(request: InferenceRequest): InferenceRequest {
    this.registry.checkAllowed();
    let inputs = request.inputs;
    const shm = request.sharedMemoryInputs;
    if (shm !== undefined && shm.length > 0) {
      const all = inputs.slice();
      for (const i of shm) all.push(this.input(i, request.model));
      inputs = all;
    }
    for (const o of request.outputs ?? []) {
      if (o.sharedMemory === undefined) continue;
      const region = this.take(o.sharedMemory);
      (this.outputs ??= new Map()).set(o.name, { region, ref: o.sharedMemory });
    }
    return { ...request, inputs, sharedMemoryInputs: undefined };
  }

  /**
   * Writes each output the request asked for in shared memory into its region (BYTES serialized, as on the
   * wire) and leaves it in the response without data. An output larger than its range fails the request.
   */
  writeOutputs(response: InferenceResponse): InferenceResponse {
    const targets = this.outputs;
    if (targets === undefined) {
      this.checkIntact();
      return response;
    }
    const written = new Set<string>();
    const outputs = response.outputs.map((t) => {
      const target = targets.get(t.name);
      if (target === undefined) return t;
      const data = t.datatype === 'BYTES' ? serializeBytes(t.data) : t.data;
      if (data.byteLength > target.ref.byteSize) {
        throw internal(`shared memory size specified with the request for output '${t.name}' (${target.ref.byteSize} bytes) should be at least ${data.byteLength} bytes to hold the results`);
      }
      target.region.write(target.ref.offset, data);
      written.add(t.name);
      return (t.datatype === 'BYTES' ? { name: t.name, datatype: t.datatype, shape: t.shape, data: [] } : { name: t.name, datatype: t.datatype, shape: t.shape, data: NO_BYTES }) as Tensor;
    });
    this.checkIntact();
    return { ...response, outputs, sharedMemoryOutputs: written };
  }

  /** Throws for the first region the request holds that was found shrunk. */
  private checkIntact(): void {
    for (const r of this.held) r.checkIntact();
  }

  release(): void {
    for (const r of this.held) this.registry.release(r);
    this.held.length = 0;
  }

  private take(ref: SharedMemoryRef): Region {
    const region = this.registry.acquire(ref.region);
    this.held.push(region);
    region.check(ref.offset, ref.byteSize);
    region.checkIntact();
    return region;
  }

  private input(i: SharedMemoryInput, model: string): Tensor {
    const ref = i.sharedMemory;
    const region = this.take(ref);
    const count = elementCount(i.shape);
    if (i.datatype === 'BYTES') {
      let data;
      try {
        data = deserializeBytes(region.read(ref.offset, ref.byteSize), count, i.name, model);
      } catch (e) {
        // Bytes that shrank away read as zeros, which may not parse: say why.
        region.checkIntact();
        throw e;
      }
      region.checkIntact();
      return { name: i.name, datatype: 'BYTES', shape: i.shape, data };
    }
    const expected = count * byteSize(i.datatype);
    if (ref.byteSize !== expected) {
      throw invalidArg(`input byte size mismatch for input '${i.name}' for model '${model}'. Expected ${expected}, got ${ref.byteSize}`);
    }
    return { name: i.name, datatype: i.datatype, shape: i.shape, data: region.read(ref.offset, ref.byteSize) };
  }
}
