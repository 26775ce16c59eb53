import { invalidArg } from '../../errors.js';
import type { RequestedOutput, SharedMemoryRef } from '../../inference/index.js';
import type { InferenceServer } from '../../server/inference-server.js';
import { int64ToNumber } from './int64.js';
import type { InferParameterMsg, ParameterMap } from './messages.js';

/**
 * Shared memory as the gRPC protocol names it: the System/Cuda SharedMemory RPCs, and the
 * shared_memory_region / _offset / _byte_size tensor parameters. The regions themselves belong to the
 * server's shared-memory registry (`server.sharedMemory`), which also answers Triton's "disabled" error when
 * the server runs without --allow-client-shm, for the RPCs and for requests alike, as over HTTP.
 */

/** The shared-memory parameters of a tensor, checked as Triton's gRPC frontend checks them; undefined when it has none. */
export function sharedMemoryRef(params: ParameterMap, tensor: string): SharedMemoryRef | undefined {
  const region = params['shared_memory_region'];
  const offset = params['shared_memory_offset'];
  const size = params['shared_memory_byte_size'];
  if (region === undefined) {
    for (const [key, p] of [['shared_memory_offset', offset], ['shared_memory_byte_size', size]] as const) {
      if (p !== undefined) throw invalidArg(`'${key}' can not be specified without 'shared_memory_region' parameter for tensor '${tensor}'`);
    }
    return undefined;
  }
  if (region.parameter_choice !== 'string_param') throw invalidArg(`invalid value type for 'shared_memory_region' parameter for tensor '${tensor}', expected string_param.`);
  if (size === undefined) throw invalidArg(`'shared_memory_byte_size' must be specified along with 'shared_memory_region' parameter for tensor '${tensor}'`);
  return {
    region: region.string_param,
    offset: offset === undefined ? 0 : nonNegative(offset, 'shared_memory_offset', tensor),
    byteSize: nonNegative(size, 'shared_memory_byte_size', tensor),
  };
}

function nonNegative(p: InferParameterMsg, key: string, tensor: string): number {
  if (p.parameter_choice !== 'int64_param') throw invalidArg(`invalid value type for '${key}' parameter for tensor '${tensor}', expected int64_param.`);
  const n = int64ToNumber(p.int64_param);
  if (n === undefined || n < 0) throw invalidArg(`'${key}' of tensor '${tensor}' must be a non-negative integer`);
  return n;
}

/** A requested output to be written into a region. */
export function sharedMemoryOutput(name: string, ref: SharedMemoryRef): RequestedOutput {
  return { name, sharedMemory: ref };
}

// ---- the RPCs ----

type SystemRegionStatus = ReturnType<InferenceServer['sharedMemory']['systemStatus']>[number];
type CudaRegionStatus = ReturnType<InferenceServer['sharedMemory']['cudaStatus']>[number];

export function systemStatus(server: InferenceServer, name: string): Record<string, SystemRegionStatus> {
  return byName(server.sharedMemory.systemStatus(name === '' ? undefined : name));
}

export function cudaStatus(server: InferenceServer, name: string): Record<string, CudaRegionStatus> {
  return byName(server.sharedMemory.cudaStatus(name === '' ? undefined : name));
}

function byName<T extends { name: string }>(regions: T[]): Record<string, T> {
  const out: Record<string, T> = {};
  for (const r of regions) out[r.name] = r;
  return out;
}

export function registerSystem(server: InferenceServer, name: string, key: string, offset: number | undefined, byteSize: number | undefined): void {
  // The registry refuses first when client shared memory is disabled, whatever the sizes.
  server.sharedMemory.checkAllowed();
  if (offset === undefined || byteSize === undefined) throw invalidArg(`offset and byte_size of shared memory region '${name}' must be below 2^53`);
  server.sharedMemory.registerSystem(name, key, offset, byteSize);
}

export function unregisterSystem(server: InferenceServer, name: string): void {
  server.sharedMemory.unregisterSystem(name === '' ? undefined : name);
}

export function registerCuda(server: InferenceServer, name: string): void {
  server.sharedMemory.registerCuda(name);
}

export function unregisterCuda(server: InferenceServer): void {
  server.sharedMemory.unregisterCuda();
}
