import { invalidArg, notFound, unsupported } from '../../errors.js';
import type { InferenceRequest, RequestedOutput } from '../../inference/index.js';
import type { InferenceServer } from '../../server/inference-server.js';
import type { DataType } from '../../tensor/datatype.js';
import { int64ToNumber } from './int64.js';
import type { InferParameterMsg, ParameterMap } from './messages.js';

/**
 * Shared memory as the gRPC protocol names it: the System/Cuda SharedMemory RPCs, and the
 * shared_memory_region / _offset / _byte_size tensor parameters. The regions themselves belong to the
 * server's shared-memory registry (`server.sharedMemory`); while a server has none, every call answers as a
 * server with client shared memory disabled, the same as the HTTP frontend.
 */

export const SHM_DISABLED = 'Client shared memory is disabled. Shared memory is not supported by this server yet.';

export interface SystemRegionStatus { name: string; key: string; offset: number; byte_size: number }
export interface CudaRegionStatus { name: string; device_id: number; byte_size: number }

/** What this frontend needs of the server's shared-memory registry. */
export interface SharedMemoryRegistryApi {
  registerSystem(name: string, key: string, offset: number, byteSize: number): void;
  systemStatus(name?: string): SystemRegionStatus[];
  unregisterSystem(name?: string): void;
  registerCuda(name: string): void;
  cudaStatus(name?: string): CudaRegionStatus[];
  unregisterCuda(name?: string): void;
}

export function registry(server: InferenceServer): SharedMemoryRegistryApi | undefined {
  return (server as { sharedMemory?: SharedMemoryRegistryApi }).sharedMemory;
}

/** A tensor's place in a registered region. */
export interface SharedMemoryRef {
  readonly region: string;
  readonly offset: number;
  readonly byteSize: number;
}

export interface SharedMemoryInput {
  readonly name: string;
  readonly datatype: DataType;
  readonly shape: readonly number[];
  readonly sharedMemory: SharedMemoryRef;
}

/** The shared-memory parameters of a tensor, checked as Triton's gRPC frontend checks them; undefined when it has none. */
export function sharedMemoryRef(params: ParameterMap, tensor: string): SharedMemoryRef | undefined {
  const region = params['shared_memory_region'];
  const offset = params['shared_memory_offset'];
  const size = params['shared_memory_byte_size'];
  if (region === undefined) {
    if (offset !== undefined || size !== undefined) {
      throw invalidArg(`'shared_memory_offset' and 'shared_memory_byte_size' of tensor '${tensor}' need 'shared_memory_region' as well`);
    }
    return undefined;
  }
  if (region.parameter_choice !== 'string_param') throw invalidArg(`invalid value type for 'shared_memory_region' of tensor '${tensor}', expected string_param`);
  if (size === undefined) throw invalidArg(`tensor '${tensor}' names shared memory region '${region.string_param}' without 'shared_memory_byte_size'`);
  return {
    region: region.string_param,
    offset: offset === undefined ? 0 : nonNegative(offset, 'shared_memory_offset', tensor),
    byteSize: nonNegative(size, 'shared_memory_byte_size', tensor),
  };
}

function nonNegative(p: InferParameterMsg, key: string, tensor: string): number {
  if (p.parameter_choice !== 'int64_param') throw invalidArg(`invalid value type for '${key}' of tensor '${tensor}', expected int64_param`);
  const n = int64ToNumber(p.int64_param);
  if (n === undefined || n < 0) throw invalidArg(`'${key}' of tensor '${tensor}' must be a non-negative integer`);
  return n;
}

/**
 * Where shared-memory inputs and outputs join the request: the server's registry reads the inputs from their
 * regions and writes the outputs into theirs (`sharedMemoryInputs` and RequestedOutput `sharedMemory`, the
 * fields the server API reads). Without a registry, Triton's "disabled" answer.
 */
export function attachSharedMemory(server: InferenceServer, request: InferenceRequest, inputs: readonly SharedMemoryInput[] | undefined): InferenceRequest {
  if (registry(server) === undefined) throw unsupported(SHM_DISABLED);
  if (inputs === undefined) return request;
  return { ...request, sharedMemoryInputs: inputs } as InferenceRequest;
}

/** A requested output to be written into a region. */
export function sharedMemoryOutput(name: string, ref: SharedMemoryRef): RequestedOutput {
  return { name, sharedMemory: ref } as RequestedOutput;
}

// ---- the RPCs ----

export function systemStatus(server: InferenceServer, name: string): Record<string, SystemRegionStatus> {
  const reg = registry(server);
  if (reg === undefined) {
    if (name !== '') throw notFound(`Unable to find system shared memory region: '${name}'`);
    return {};
  }
  return byName(reg.systemStatus(name === '' ? undefined : name));
}

export function cudaStatus(server: InferenceServer, name: string): Record<string, CudaRegionStatus> {
  const reg = registry(server);
  if (reg === undefined) {
    if (name !== '') throw notFound(`Unable to find cuda shared memory region: '${name}'`);
    return {};
  }
  return byName(reg.cudaStatus(name === '' ? undefined : name));
}

function byName<T extends { name: string }>(regions: T[]): Record<string, T> {
  const out: Record<string, T> = {};
  for (const r of regions) out[r.name] = r;
  return out;
}

export function registerSystem(server: InferenceServer, name: string, key: string, offset: number | undefined, byteSize: number | undefined): void {
  const reg = registry(server);
  if (reg === undefined) throw unsupported(SHM_DISABLED);
  if (offset === undefined || byteSize === undefined) throw invalidArg(`offset and byte_size of shared memory region '${name}' must be below 2^53`);
  reg.registerSystem(name, key, offset, byteSize);
}

export function unregisterSystem(server: InferenceServer, name: string): void {
  const reg = registry(server);
  if (reg === undefined) throw unsupported(SHM_DISABLED);
  reg.unregisterSystem(name === '' ? undefined : name);
}

export function registerCuda(server: InferenceServer, name: string): void {
  const reg = registry(server);
  if (reg === undefined) throw unsupported(SHM_DISABLED);
  reg.registerCuda(name);
}

export function unregisterCuda(server: InferenceServer, name: string): void {
  const reg = registry(server);
  if (reg === undefined) throw unsupported(SHM_DISABLED);
  reg.unregisterCuda(name === '' ? undefined : name);
}
