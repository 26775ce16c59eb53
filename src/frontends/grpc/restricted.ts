import { Status, type CallStatus } from './codes.js';
import type { Metadata } from './call.js';
import type { RestrictedGroup } from './options.js';

/** Triton's restricted-protocol categories of each RPC (--grpc-restricted-protocol). */
const CATEGORY: Readonly<Record<string, string>> = {
  ServerLive: 'health', ServerReady: 'health', ModelReady: 'health', Check: 'health',
  ServerMetadata: 'metadata', ModelMetadata: 'metadata',
  ModelInfer: 'inference', ModelStreamInfer: 'inference',
  SystemSharedMemoryStatus: 'shared-memory', SystemSharedMemoryRegister: 'shared-memory', SystemSharedMemoryUnregister: 'shared-memory',
  CudaSharedMemoryStatus: 'shared-memory', CudaSharedMemoryRegister: 'shared-memory', CudaSharedMemoryUnregister: 'shared-memory',
  ModelConfig: 'model-config',
  RepositoryIndex: 'model-repository', RepositoryModelLoad: 'model-repository', RepositoryModelUnload: 'model-repository',
  ModelStatistics: 'statistics',
  TraceSetting: 'trace',
  LogSettings: 'logging',
};

/** An RPC's category: the one table --grpc-restricted-protocol and the API keys' scopes both go by. */
export function category(rpc: string): string | undefined {
  return CATEGORY[rpc];
}

/**
 * The check an RPC's calls must pass, decided once at start: null when its category is not restricted;
 * otherwise a function answering the status for a call without metadata `triton-grpc-protocol-<key>: <value>`.
 */
export function restriction(rpc: string, groups: readonly RestrictedGroup[] | undefined): ((m: Metadata) => CallStatus | null) | null {
  const category = CATEGORY[rpc];
  const group = groups?.find((g) => category !== undefined && g.categories.includes(category));
  if (group === undefined) return null;
  const header = `triton-grpc-protocol-${group.key}`.toLowerCase();
  const refusal: CallStatus = { code: Status.UNAVAILABLE, details: `This protocol is restricted, expecting header '${group.key}'` };
  return (m) => (m.get(header) === group.value ? null : refusal);
}
