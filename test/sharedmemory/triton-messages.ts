import type { BothFrontends } from '../helpers/frontends.js';
import type { TritonMessage } from '../helpers/triton-messages.js';

/**
 * Triton's words for the shared-memory refusals: registering, unregistering and reading the status of system
 * (and, on a build without GPUs, CUDA) regions, and using a region in an inference request. Each row triggers
 * its refusal over HTTP and, where Triton's gRPC frontend has the same refusal, over gRPC.
 */
export interface ShmContext {
  /** A server with client shared memory allowed, serving `simple` (INT32 [1,16] in and out: 64 bytes a tensor). */
  readonly on: BothFrontends;
  /** A server without --allow-client-shm. */
  readonly off: BothFrontends;
  /** A /dev/shm object of that many bytes; its shm_open key. */
  object(bytes: number): string;
}

export interface ShmMessage extends TritonMessage {
  /** Makes the refusal happen over HTTP; resolves with the error's message. */
  readonly http?: (c: ShmContext) => Promise<string>;
  /** Makes it happen over gRPC; resolves with the status details. */
  readonly grpc?: (c: ShmContext) => Promise<string>;
}

const SMM = 'server shared_memory_manager.cc';
const HTTP = 'server http_server.cc HandleSystemSharedMemory';
const INFER = 'server grpc/infer_handler.h';

const registerHttp = (b: BothFrontends, name: string, body: unknown) =>
  b.httpError(`/v2/systemsharedmemory/region/${name}/register`, body);
const registerGrpc = (b: BothFrontends, name: string, key: string, byteSize: number, offset = 0) =>
  b.grpcError('SystemSharedMemoryRegister', { name, key, offset, byte_size: byteSize });

/** A region named `name` over a fresh object of `bytes` bytes, registered anew (whatever an earlier row left). */
function fresh(c: ShmContext, name: string, bytes: number): string {
  c.on.server.sharedMemory.unregisterSystem(name);
  const key = c.object(bytes);
  c.on.server.sharedMemory.registerSystem(name, key, 0, bytes);
  return key;
}

/** `simple`'s two inputs as raw data, and OUTPUT0 asked for in a region. */
function httpInferOutputIn(region: string, byteSize: number) {
  const data = Array.from({ length: 16 }, () => 1);
  return {
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data },
    ],
    outputs: [{ name: 'OUTPUT0', parameters: { shared_memory_region: region, shared_memory_byte_size: byteSize } }],
  };
}

/** `simple`'s INPUT0 in a region (at `offset`, `byteSize` bytes), INPUT1 as raw data. */
function httpInferInputIn(region: string, byteSize: number, offset = 0) {
  return {
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: { shared_memory_region: region, shared_memory_byte_size: byteSize, shared_memory_offset: offset } },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
    ],
  };
}

const int32Raw = Buffer.alloc(64);
const grpcShm = (region: string, byteSize: number, offset = 0) => ({
  shared_memory_region: { string_param: region },
  shared_memory_byte_size: { int64_param: String(byteSize) },
  shared_memory_offset: { int64_param: String(offset) },
});

function grpcInferInputIn(region: string, byteSize: number, offset = 0) {
  return {
    model_name: 'simple',
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: grpcShm(region, byteSize, offset) },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
    ],
    raw_input_contents: [int32Raw],
  };
}

function grpcInferOutputIn(region: string, byteSize: number) {
  return {
    model_name: 'simple',
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
    ],
    outputs: [{ name: 'OUTPUT0', parameters: grpcShm(region, byteSize) }],
    raw_input_contents: [int32Raw, int32Raw],
  };
}

/** `simple` with INPUT0's parameters as given and both inputs' data raw. */
function withInput0Params(parameters: Record<string, unknown>) {
  return {
    model_name: 'simple',
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
    ],
    raw_input_contents: [int32Raw, int32Raw],
  };
}

export const SHM_MESSAGES: readonly ShmMessage[] = [
  {
    source: 'server http_server.cc / grpc_server.cc, the --allow-client-shm check of register and unregister (Triton 26.04+)',
    refusal: 'register while client shared memory is disabled',
    words: "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable.",
    http: (c) => registerHttp(c.off, 'r', { key: '/k', byte_size: 64 }),
    grpc: (c) => registerGrpc(c.off, 'r', '/k', 64),
  },
  {
    source: `${HTTP} (register without a region in the path)`,
    refusal: 'register a system region with no region name',
    words: "'region name' is necessary to register system shared memory region",
    http: (c) => c.on.httpError('/v2/systemsharedmemory/register', { key: '/k', byte_size: 64 }),
  },
  {
    source: 'server http_server.cc HandleCudaSharedMemory (register without a region in the path)',
    refusal: 'register a CUDA region with no region name',
    words: "'region name' is necessary to register cuda shared memory region",
    http: (c) => c.on.httpError('/v2/cudasharedmemory/register', { raw_handle: { b64: '' }, device_id: 0, byte_size: 64 }),
  },
  {
    source: HTTP,
    refusal: "register request without 'key'",
    words: "Shared memory register request has no 'key' field",
    http: (c) => registerHttp(c.on, 'nokey', { byte_size: 64 }),
  },
  {
    source: HTTP,
    refusal: "register request without 'byte_size'",
    words: "Shared memory register request has no 'byte_size' field",
    http: (c) => registerHttp(c.on, 'nosize', { key: '/k' }),
  },
  {
    source: `${HTTP}; common triton_json.h AsString`,
    refusal: "register request whose 'key' is not a string",
    words: 'attempt to access JSON non-string as string',
    http: (c) => registerHttp(c.on, 'numkey', { key: 7, byte_size: 64 }),
  },
  {
    source: `${HTTP}; common triton_json.h AsUInt`,
    refusal: "register request whose 'byte_size' is not an unsigned integer",
    words: 'attempt to access JSON non-unsigned-integer as unsigned-integer',
    http: (c) => registerHttp(c.on, 'negsize', { key: '/k', byte_size: -1 }),
  },
  {
    source: `${SMM} RegisterSystemSharedMemory`,
    refusal: 'register a name already registered',
    words: "shared memory region 'twice' already in manager",
    http: async (c) => {
      const key = fresh(c, 'twice', 64);
      return registerHttp(c.on, 'twice', { key, byte_size: 64 });
    },
    grpc: async (c) => registerGrpc(c.on, 'twice', fresh(c, 'twice', 64), 64),
  },
  {
    source: `${SMM} OpenSharedMemoryRegion (L0_shared_memory checks it)`,
    refusal: 'register a key that names no shared-memory object',
    words: "Unable to open shared memory region: '/nereid_no_such_object'",
    http: (c) => registerHttp(c.on, 'nokeyobj', { key: '/nereid_no_such_object', byte_size: 64 }),
    grpc: (c) => registerGrpc(c.on, 'nokeyobj', '/nereid_no_such_object', 64),
  },
  {
    source: `${SMM} MapSharedMemory, then RegisterSystemSharedMemory (mmap of zero bytes fails)`,
    refusal: 'register zero bytes',
    words: "failed to register shared memory region 'empty': unable to process address space",
    http: (c) => registerHttp(c.on, 'empty', { key: c.object(64), byte_size: 0 }),
    grpc: (c) => registerGrpc(c.on, 'empty', c.object(64), 0),
  },
  {
    source: `${SMM} OpenSharedMemoryRegion (shm_open of a name that is only slashes)`,
    refusal: 'register a key that is only slashes',
    words: "Unable to open shared memory region: '/'",
    http: (c) => registerHttp(c.on, 'slash', { key: '/', byte_size: 64 }),
    grpc: (c) => registerGrpc(c.on, 'slash', '/', 64),
  },
  {
    source: `${SMM} CheckSharedMemoryRegionSize (L0_shared_memory test_register_out_of_bound)`,
    refusal: 'register a range past the end of the object',
    words: "failed to register shared memory region 'toolong': invalid args",
    http: (c) => registerHttp(c.on, 'toolong', { key: c.object(64), byte_size: 128 }),
    grpc: (c) => registerGrpc(c.on, 'toolong', c.object(64), 128),
  },
  {
    source: `${SMM} RegisterSystemSharedMemory, the reserved-prefix check (L0_shared_memory test_register_reserved_names)`,
    refusal: "register a key under the Python backend's reserved prefix",
    words: "cannot register shared memory region 'reserved' with key 'triton_python_backend_shm_region_x' as the key contains the reserved prefix 'triton_python_backend_shm_region_'",
    http: (c) => registerHttp(c.on, 'reserved', { key: 'triton_python_backend_shm_region_x', byte_size: 64 }),
    grpc: (c) => registerGrpc(c.on, 'reserved', 'triton_python_backend_shm_region_x', 64),
  },
  {
    source: `${SMM} GetStatus`,
    refusal: 'status of an unknown system region',
    words: "Unable to find system shared memory region: 'nowhere'",
    http: (c) => c.on.httpError('/v2/systemsharedmemory/region/nowhere/status'),
    grpc: (c) => c.on.grpcError('SystemSharedMemoryStatus', { name: 'nowhere' }),
  },
  {
    source: `${SMM} GetStatus`,
    refusal: 'status of an unknown CUDA region',
    words: "Unable to find cuda shared memory region: 'nowhere'",
    http: (c) => c.on.httpError('/v2/cudasharedmemory/region/nowhere/status'),
    grpc: (c) => c.on.grpcError('CudaSharedMemoryStatus', { name: 'nowhere' }),
  },
  {
    source: `${SMM} GetStatus`,
    refusal: 'CUDA status of a system region',
    words: "The region named 'sys' is registered as system shared memory, not CUDA shared memory",
    http: async (c) => {
      fresh(c, 'sys', 64);
      return c.on.httpError('/v2/cudasharedmemory/region/sys/status');
    },
    grpc: async (c) => {
      fresh(c, 'sys', 64);
      return c.on.grpcError('CudaSharedMemoryStatus', { name: 'sys' });
    },
  },
  {
    source: 'server http_server.cc HandleCudaSharedMemory / grpc_server.cc CudaSharedMemoryRegister, built without GPUs',
    refusal: 'register a CUDA region on a server without GPUs',
    words: "failed to register CUDA shared memory region: 'gpu', GPUs not supported",
    http: (c) => c.on.httpError('/v2/cudasharedmemory/region/gpu/register', { raw_handle: { b64: '' }, device_id: 0, byte_size: 64 }),
    grpc: (c) => c.on.grpcError('CudaSharedMemoryRegister', { name: 'gpu', raw_handle: Buffer.alloc(64), device_id: 0, byte_size: 64 }),
  },
  {
    source: `${INFER} ParseSharedMemoryParams`,
    refusal: 'gRPC tensor with a shared-memory offset but no region',
    words: "'shared_memory_offset' can not be specified without 'shared_memory_region' parameter for tensor 'INPUT0'",
    grpc: (c) => c.on.grpcError('ModelInfer', withInput0Params({ shared_memory_offset: { int64_param: '0' } })),
  },
  {
    source: `${INFER} ParseSharedMemoryParams`,
    refusal: 'gRPC tensor with a shared-memory byte size but no region',
    words: "'shared_memory_byte_size' can not be specified without 'shared_memory_region' parameter for tensor 'INPUT0'",
    grpc: (c) => c.on.grpcError('ModelInfer', withInput0Params({ shared_memory_byte_size: { int64_param: '64' } })),
  },
  {
    source: `${INFER} ParseSharedMemoryParams`,
    refusal: 'gRPC tensor whose shared-memory region is not a string_param',
    words: "invalid value type for 'shared_memory_region' parameter for tensor 'INPUT0', expected string_param.",
    grpc: (c) => c.on.grpcError('ModelInfer', withInput0Params({ shared_memory_region: { int64_param: '1' }, shared_memory_byte_size: { int64_param: '64' } })),
  },
  {
    source: `${INFER} ParseSharedMemoryParams`,
    refusal: 'gRPC tensor whose shared-memory byte size is not an int64_param',
    words: "invalid value type for 'shared_memory_byte_size' parameter for tensor 'INPUT0', expected int64_param.",
    grpc: (c) => c.on.grpcError('ModelInfer', withInput0Params({ shared_memory_region: { string_param: 'r' }, shared_memory_byte_size: { string_param: '64' } })),
  },
  {
    source: `${INFER} ParseSharedMemoryParams`,
    refusal: 'gRPC tensor naming a region without a byte size',
    words: "'shared_memory_byte_size' must be specified along with 'shared_memory_region' parameter for tensor 'INPUT0'",
    grpc: (c) => c.on.grpcError('ModelInfer', withInput0Params({ shared_memory_region: { string_param: 'r' } })),
  },
  {
    source: `${SMM} GetMemoryInfo`,
    refusal: 'an inference request naming an unknown region',
    words: "Unable to find shared memory region: 'unknown_region'",
    http: (c) => c.on.httpError('/v2/models/simple/infer', httpInferInputIn('unknown_region', 64)),
    grpc: (c) => c.on.grpcError('ModelInfer', grpcInferInputIn('unknown_region', 64)),
  },
  {
    source: `${SMM} GetMemoryInfo (L0_shared_memory test_infer_offset_out_of_bound)`,
    refusal: 'an inference request whose offset is past the region',
    words: "Invalid offset for shared memory region: 'short_region'",
    http: async (c) => {
      fresh(c, 'short_region', 64);
      return c.on.httpError('/v2/models/simple/infer', httpInferInputIn('short_region', 64, 64));
    },
    grpc: async (c) => {
      fresh(c, 'short_region', 64);
      return c.on.grpcError('ModelInfer', grpcInferInputIn('short_region', 64, 64));
    },
  },
  {
    source: `${SMM} GetMemoryInfo (L0_shared_memory test_infer_byte_size_out_of_bound)`,
    refusal: 'an inference request whose offset plus byte size is past the region',
    words: "Invalid offset + byte size for shared memory region: 'short_region'",
    http: async (c) => {
      fresh(c, 'short_region', 64);
      return c.on.httpError('/v2/models/simple/infer', httpInferInputIn('short_region', 64, 4));
    },
    grpc: async (c) => {
      fresh(c, 'short_region', 64);
      return c.on.grpcError('ModelInfer', grpcInferInputIn('short_region', 64, 4));
    },
  },
  {
    source: `${SMM} GetMemoryInfo, the overflow check before the bounds`,
    refusal: 'an inference request whose offset plus byte size overflows',
    // 2^64 - 1 as a JSON number, which JavaScript reads as 2^64, so the numbers in the message differ from
    // Triton's: the words stop before them.
    words: 'Integer overflow detected: byte_size (',
    http: (c) => {
      fresh(c, 'short_region', 64);
      const body = JSON.stringify(httpInferInputIn('short_region', 0, 1)).replace('"shared_memory_byte_size":0', '"shared_memory_byte_size":18446744073709551615');
      return c.on.httpError('/v2/models/simple/infer', body);
    },
  },
  {
    source: 'server http_server.cc InferResponseAlloc / grpc infer_handler.cc ResponseAllocatorHelper (L0_cuda_shared_memory checks it)',
    refusal: 'an output region too small for the output',
    words: "shared memory size specified with the request for output 'OUTPUT0' (4 bytes) should be at least 64 bytes to hold the results",
    http: async (c) => {
      fresh(c, 'small_out', 64);
      return c.on.httpError('/v2/models/simple/infer', httpInferOutputIn('small_out', 4));
    },
    grpc: async (c) => {
      fresh(c, 'small_out', 64);
      return c.on.grpcError('ModelInfer', grpcInferOutputIn('small_out', 4));
    },
  },
];
