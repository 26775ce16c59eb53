import { invalidArg, unavailable, unsupported } from '../../errors.js';
import type { Logger } from '../../observability/logger.js';
import { configOverride } from '../../server/config-override.js';
import type { InferenceServer, LoadRequest } from '../../server/inference-server.js';
import { int64ToNumber } from './int64.js';
import type {
  CudaShmRegisterMsg, LogSettingsRequestMsg, TraceSettingRequestMsg, ModelRefMsg, NameMsg, RepositoryIndexRequestMsg, RepositoryModelRequestMsg,
  SystemShmRegisterMsg,
} from './messages.js';
import { parseVersion } from './infer-request.js';
import type { Protos } from './proto.js';
import * as shm from './shared-memory.js';
import { settingEntries, traceSetting, type GivenSetting, type GivenValue } from '../../server/trace-setting.js';

/**
 * The unary RPCs other than ModelInfer: each takes the decoded request message and returns the response
 * message (or a promise of it), or throws a NereidError that the caller maps to a status.
 */
export interface RpcContext {
  readonly server: InferenceServer;
  readonly logger: Logger;
  readonly protos: Protos;
}

type Rpc = (ctx: RpcContext, req: never) => object | Promise<object>;

const EMPTY = Object.freeze({});

/**
 * `answer`, once the model has loaded when it loads on demand (--model-load-on-demand); ready answers after a
 * failed load too (not ready), the others with its error.
 */
function afterLoad<T>(ctx: RpcContext, r: ModelRefMsg, answer: () => T, evenIfFailed = false): T | Promise<T> {
  const loading = ctx.server.loadsOnDemand ? ctx.server.whenLoaded(r.name) : undefined;
  if (loading === undefined) return answer();
  return (evenIfFailed ? loading.catch(() => undefined) : loading).then(answer);
}

export const RPCS = {
  ServerLive: (ctx: RpcContext) => ({ live: ctx.server.isLive() }),
  ServerReady: (ctx: RpcContext) => ({ ready: ctx.server.isReady() }),
  ModelReady: (ctx: RpcContext, r: ModelRefMsg) => afterLoad(ctx, r, () => ({ ready: ctx.server.isModelReady(r.name, parseVersion(r.version)) }), true),
  ServerMetadata: (ctx: RpcContext) => ctx.server.metadata(),
  ModelMetadata: (ctx: RpcContext, r: ModelRefMsg) => afterLoad(ctx, r, () => ctx.server.modelMetadata(r.name, parseVersion(r.version))),
  ModelConfig: (ctx: RpcContext, r: ModelRefMsg) => afterLoad(ctx, r, () =>
    // The JSON form is protobuf's JSON mapping, which protobufjs reads back into the message (enum names, 64-bit strings).
    ctx.protos.type('inference.ModelConfigResponse').fromObject({ config: ctx.server.modelConfigJson(r.name, parseVersion(r.version)) })),
  ModelStatistics: (ctx: RpcContext, r: ModelRefMsg) =>
    r.name === '' ? ctx.server.statistics() : ctx.server.statistics(r.name, parseVersion(r.version)),
  RepositoryIndex: async (ctx: RpcContext, r: RepositoryIndexRequestMsg) => {
    checkRepositoryName(r.repository_name);
    return { models: await ctx.server.repositoryIndex(r.ready) };
  },
  RepositoryModelLoad: async (ctx: RpcContext, r: RepositoryModelRequestMsg) => {
    checkRepositoryName(r.repository_name);
    await ctx.server.loadModel(r.model_name, loadRequest(r));
    return EMPTY;
  },
  RepositoryModelUnload: async (ctx: RpcContext, r: RepositoryModelRequestMsg) => {
    checkRepositoryName(r.repository_name);
    await ctx.server.unloadModel(r.model_name, { unloadDependents: unloadDependents(r) });
    return EMPTY;
  },
  SystemSharedMemoryStatus: (ctx: RpcContext, r: NameMsg) => ({ regions: shm.systemStatus(ctx.server, r.name) }),
  SystemSharedMemoryRegister: (ctx: RpcContext, r: SystemShmRegisterMsg) => {
    shm.registerSystem(ctx.server, r.name, r.key, int64ToNumber(r.offset), int64ToNumber(r.byte_size));
    return EMPTY;
  },
  SystemSharedMemoryUnregister: (ctx: RpcContext, r: NameMsg) => {
    shm.unregisterSystem(ctx.server, r.name);
    return EMPTY;
  },
  CudaSharedMemoryStatus: (ctx: RpcContext, r: NameMsg) => ({ regions: shm.cudaStatus(ctx.server, r.name) }),
  CudaSharedMemoryRegister: (ctx: RpcContext, r: CudaShmRegisterMsg) => {
    shm.registerCuda(ctx.server, r.name);
    return EMPTY;
  },
  CudaSharedMemoryUnregister: (ctx: RpcContext) => {
    shm.unregisterCuda(ctx.server);
    return EMPTY;
  },
  TraceSetting: (ctx: RpcContext, r: TraceSettingRequestMsg) => grpcTraceSetting(ctx.server, r),
  LogSettings: (ctx: RpcContext, r: LogSettingsRequestMsg) => logSettings(ctx.logger, r),
} satisfies Record<string, Rpc>;

function checkRepositoryName(name: string): void {
  if (name !== '') throw unsupported("'repository_name' specification is not supported");
}

/** Load parameters as Triton's gRPC frontend takes them: `config` as a string, `file:<path>` as bytes. */
function loadRequest(r: RepositoryModelRequestMsg): LoadRequest {
  let config: LoadRequest['config'];
  let files: Map<string, Uint8Array> | undefined;
  for (const key in r.parameters) {
    const p = r.parameters[key]!;
    if (key === 'config') {
      if (p.parameter_choice !== 'string_param') throw invalidArg("invalid value type for load parameter 'config', expected string_param.");
      config = configOverride(r.model_name, p.string_param);
    } else if (key.startsWith('file:')) {
      if (p.parameter_choice !== 'bytes_param') throw invalidArg(`invalid value type for load parameter '${key}', expected bytes_param.`);
      (files ??= new Map()).set(key.slice(5), p.bytes_param);
    } else {
      throw invalidArg(`unrecognized load parameter '${key}'.`);
    }
  }
  return { ...(config ? { config } : {}), ...(files ? { files } : {}) };
}

function unloadDependents(r: RepositoryModelRequestMsg): boolean {
  const p = r.parameters['unload_dependents'];
  if (p === undefined) return false;
  if (p.parameter_choice !== 'bool_param') throw invalidArg("invalid value type for 'unload_dependents' parameter, expected bool_param.");
  return p.bool_param;
}

/** The oneof member each log setting must use. */
const LOG_SETTING_TYPES: Readonly<Record<string, keyof typeof TYPE_WORDS>> = {
  log_file: 'string_param',
  log_info: 'bool_param',
  log_warning: 'bool_param',
  log_error: 'bool_param',
  log_verbose_level: 'uint32_param',
  log_format: 'string_param',
};

/** How Triton's gRPC frontend names each member when a setting uses another. */
const TYPE_WORDS = { bool_param: 'boolean', uint32_param: 'int32', string_param: 'string' } as const;

/** Applies the update, if any, and answers the full settings, as GET/POST /v2/logging does. */
function logSettings(logger: Logger, r: LogSettingsRequestMsg): object {
  const update: Record<string, unknown> = {};
  for (const key in r.settings) {
    const expected = LOG_SETTING_TYPES[key];
    if (expected === undefined) continue; // unknown keys are ignored, as over HTTP
    const v = r.settings[key]!;
    if (v.parameter_choice === undefined) continue; // an empty value leaves the setting as it is
    if (v.parameter_choice !== expected) throw invalidArg(`expect ${TYPE_WORDS[expected]} for '${key}' (the value must be its ${expected})`);
    update[key] = v[expected];
  }
  // Triton's gRPC frontend words a bad format without the flag's dashes its HTTP frontend has.
  const format = update['log_format'];
  if (format !== undefined && format !== 'default' && format !== 'ISO8601') throw invalidArg(`invalid argument for log_format, got: ${String(format)}`);
  logger.update(update);
  const s = logger.settings();
  return {
    settings: {
      log_file: { string_param: s.log_file },
      log_info: { bool_param: s.log_info },
      log_warning: { bool_param: s.log_warning },
      log_error: { bool_param: s.log_error },
      log_verbose_level: { uint32_param: s.log_verbose_level },
      log_format: { string_param: s.log_format },
    },
  };
}

/** TraceSetting: a key with an empty list of values clears the setting; the answer is the setting in force. */
function grpcTraceSetting(server: InferenceServer, r: TraceSettingRequestMsg): { settings: Record<string, { value: string[] }> } {
  const model = r.model_name ?? '';
  if (model !== '' && !server.isModelReady(model)) throw invalidArg(`Request for unknown model : ${model}`);
  const s = r.settings ?? {};
  const keys = Object.keys(s);
  const given = (key: string): GivenValue => {
    const v = s[key];
    if (v === undefined) return undefined;
    return v.value.length === 0 ? null : v.value;
  };
  const update: GivenSetting | null = keys.length === 0 ? null : {
    level: given('trace_level'), rate: given('trace_rate'), count: given('trace_count'), logFrequency: given('log_frequency'), file: 'trace_file' in s,
  };
  const settings: Record<string, { value: string[] }> = {};
  for (const [k, v] of settingEntries(traceSetting(server, model, update))) settings[k] = { value: Array.isArray(v) ? v : [v] };
  return { settings };
}
